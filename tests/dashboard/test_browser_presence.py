"""Presence and live handoffs in Chromium against real daphne processes (docs/dashboard.md,
"Availability and routing"): a signed-in page makes its person online, idleness (a short idle
time here) turns them away and moving the pointer brings them back, and closing the last tab
makes them offline; a handoff made through one daphne process reaches a dashboard page open on
another within a second, through the Redis channel layer (needs REDIS_URL, as in CI: two
processes share a channel layer only through Redis)."""

from __future__ import annotations

import contextlib
import json
import os
import time

import httpx
import pytest

from tests.browser import browser, screenshot
from tests.live import daphne, manage, scratch_database

EMBEDDED = {"DATABASE_URL": None, "REDIS_URL": None, "DEBUG": "1", "SECRET_KEY": None,
            "ALLOWED_HOSTS": None, "V1_REQUIRE_HTTPS": "0"}
PASSWORD = "correct-horse-battery"

pytestmark = pytest.mark.live  # daphne and Chromium

SETUP = """
import json
from tenants.models import Tenant
from tenants.services import user_create
tenant = Tenant.objects.get(pk={tenant!r})
tenant.presence_idle_seconds = {idle}
tenant.save()
ray = user_create(tenant=tenant, email="ray@acme.test", first_name="Ray", last_name="Rep",
                  password={password!r})
# Ray works every hour of every day, so that only his presence decides.
ray.working_hours = {{"days": list(range(7)), "start_hour": 0, "end_hour": 24}}
ray.save()
print(json.dumps({{"ray": "user_" + ray.pk.hex}}))
"""


def _tenant(env: dict, *, idle: int) -> dict:
    manage("migrate", "--noinput", env=env)
    acme = json.loads(manage("create_tenant", "Acme", "--json", env=env))
    ids = json.loads(manage("shell", "-c", SETUP.format(
        tenant=acme["tenant"]["id"], idle=idle, password=PASSWORD), env=env).splitlines()[-1])
    return {"keys": acme["keys"]["live"], **ids}


def _sign_in(chromium, base: str):
    context = chromium.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    page.goto(base + "/dashboard/login/")
    page.fill("#id_username", "ray@acme.test")
    page.fill("#id_password", PASSWORD)
    page.get_by_role("button", name="Sign in", exact=True).click()
    page.wait_for_url(base + "/dashboard/")
    return context, page


def _status_shown(page, status: str, timeout: float = 10000) -> None:
    page.wait_for_function("s => document.body.getAttribute('data-status') === s", arg=status,
                           timeout=timeout)


def _api_status(base: str, acme: dict) -> str:
    r = httpx.get(f"{base}/api/v1/users/{acme['ray']}", timeout=10,
                  headers={"Authorization": f"Bearer {acme['keys']['read']}"})
    assert r.status_code == 200, r.text
    return r.json()["status"]


def _until(check, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


@contextlib.contextmanager
def _shared_database(env: dict):
    """Both processes' database: a scratch PostgreSQL database beside DATABASE_URL, or the
    embedded SQLite file in their shared VAR_DIR."""
    if os.environ.get("DATABASE_URL"):
        with scratch_database(f"salesagent_presence_{os.getpid()}") as url:
            yield {**env, "DATABASE_URL": url}
    else:
        yield env


def test_idle_turns_away_activity_back_and_closing_the_tab_offline(tmp_path):
    # On PostgreSQL when the suite runs there: the stream's refreshes lock the person's row.
    with _shared_database({**EMBEDDED, "VAR_DIR": str(tmp_path)}) as env:
        _idle_away_back_and_offline(env)


def _idle_away_back_and_offline(env: dict) -> None:
    acme = _tenant(env, idle=2)
    with daphne(env) as base, browser() as chromium:
        assert _api_status(base, acme) == "offline"
        context, page = _sign_in(chromium, base)
        _status_shown(page, "online")  # the page's stream counts it as one of Ray's tabs
        assert _api_status(base, acme) == "online"
        assert page.locator("[data-presence-label]").inner_text() == "Online"

        _status_shown(page, "away", timeout=8000)  # two seconds without a key or the pointer
        assert _api_status(base, acme) == "away"
        assert page.locator("[data-presence-label]").inner_text() == "Away"

        page.mouse.move(200, 200)
        page.mouse.move(260, 240)
        _status_shown(page, "online")
        assert _api_status(base, acme) == "online"

        second = context.new_page()  # a second tab: closing the first leaves Ray online
        second.goto(base + "/dashboard/leads/")
        _status_shown(second, "online")
        page.close()
        time.sleep(1.0)
        assert _api_status(base, acme) in ("online", "away")
        second.close()
        _until(lambda: _api_status(base, acme) == "offline")
        context.close()


@pytest.mark.skipif(not os.environ.get("REDIS_URL"),
                    reason="needs REDIS_URL: two processes share a channel layer only through Redis")
def test_a_handoff_reaches_a_dashboard_page_on_another_process_within_a_second(tmp_path):
    env = {**EMBEDDED, "VAR_DIR": str(tmp_path), "REDIS_URL": os.environ["REDIS_URL"]}
    with _shared_database(env) as env:
        acme = _tenant(env, idle=600)
        with daphne(env) as visitors, daphne(env) as dashboard, browser() as chromium:
            context, page = _sign_in(chromium, dashboard)
            _status_shown(page, "online")
            assert page.get_by_role("link", name="Conversations").locator("[data-unread]").is_hidden()

            r = httpx.post(f"{visitors}/api/v1/chat", timeout=30,
                           headers={"Authorization": f"Bearer {acme['keys']['write']}"},
                           json={"message": "Hi, I'm Sam. I want to talk to a human",
                                 "visitorId": "sam"})
            assert r.status_code == 200 and r.json()["handoff"], r.text
            toast = page.locator("[data-toast]")
            toast.wait_for(timeout=1000)  # at once: within a second of the handoff's answer
            assert "New handoff" in toast.inner_text()
            assert page.get_by_role("link", name="Conversations").locator("[data-unread]").inner_text() == "1"
            conversation = "conv_" + r.json()["sessionId"].removeprefix("sess_")
            shown = httpx.get(f"{visitors}/api/v1/conversations/{conversation}", timeout=10,
                              headers={"Authorization": f"Bearer {acme['keys']['read']}"})
            assert shown.json()["assignedTo"] == acme["ray"]
            screenshot(page, "dashboard-handoff-toast.png")
            page.locator("[data-toast] a").click()
            page.wait_for_url("**/dashboard/conversations/*/")
            context.close()
