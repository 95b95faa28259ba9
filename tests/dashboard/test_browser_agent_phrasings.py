"""Settings, "Your own example phrasings", in a real browser (headless Chromium) against daphne:
a manager adds a phrasing and sees it listed; the next chat turn through the API whose message
is close to it takes its decision (a handoff, recorded as the tenant's on the message); once the
manager removes it, the next turn no longer does. No restart between any of it. Screenshot:
docs/screenshots/dashboard-settings-phrasings.png with ``SCREENSHOTS=1``."""

from __future__ import annotations

import json
import os
from urllib.parse import urlsplit

import httpx
import pytest

from tests.browser import browser, screenshot
from tests.live import daphne, manage, scratch_database

pytestmark = pytest.mark.live  # daphne and Chromium

PASSWORD = "correct-horse-battery"
SERVER = {"REDIS_URL": None, "DEBUG": "1", "SECRET_KEY": None, "ALLOWED_HOSTS": None,
          "V1_REQUIRE_HTTPS": "0", "CELERY_TASK_ALWAYS_EAGER": "1"}
PHRASING = "can the night shift pick this up"
ASKED = "is the night shift around to take this?"

SETUP = """
from tenants.models import Tenant
from tenants.services import user_create
user_create(tenant=Tenant.objects.get(pk={tenant!r}), email="mia@acme.test", first_name="Mia",
            role="manager", password={password!r})
"""
DECISIONS = """
import json
from conversations.models import Message
reply = Message.objects.filter(conversation_id={session!r}, role="assistant").order_by("-sequence").first()
print(json.dumps(reply.turn.get("decisions", {{}})))
"""


@pytest.fixture(scope="module")
def chromium():
    with browser() as instance:
        yield instance


@pytest.fixture(scope="module")
def stack(chromium, tmp_path_factory):
    """daphne on a database of its own: a scratch PostgreSQL database beside the suite's when it
    runs on PostgreSQL (named after it, so that parallel checkouts do not share it), else the
    embedded SQLite default."""
    env = {**SERVER, "VAR_DIR": str(tmp_path_factory.mktemp("phrasings"))}
    url = os.environ.get("DATABASE_URL", "")
    if url.startswith("postgres"):
        name = urlsplit(url).path.strip("/") + "_browser_phrasings"
        with scratch_database(name) as database:
            yield from _serve({**env, "DATABASE_URL": database})
    else:
        yield from _serve({**env, "DATABASE_URL": None})


def _serve(env):
    manage("migrate", "--noinput", env=env)
    acme = json.loads(manage("create_tenant", "Acme", "--json", env=env))
    manage("shell", "-c", SETUP.format(tenant=acme["tenant"]["id"], password=PASSWORD), env=env)
    with daphne(env) as base:
        yield {"base": base, "key": acme["keys"]["live"]["write"], "env": env}


def _chat(stack, message: str, visitor: str) -> dict:
    r = httpx.post(stack["base"] + "/api/v1/chat", json={"message": message, "visitorId": visitor},
                   headers={"Authorization": f"Bearer {stack['key']}"}, timeout=60)
    assert r.status_code == 200, r.text
    return r.json()


def _decisions(stack, session: str) -> dict:
    out = manage("shell", "-c", DECISIONS.format(session=session.removeprefix("sess_")),
                 env=stack["env"])
    return json.loads(out.strip().splitlines()[-1])


def test_a_manager_adds_a_phrasing_the_next_turn_follows_and_removes_it(chromium, stack):
    base = stack["base"]
    before = _chat(stack, ASKED, "visitor-before")
    assert before.get("handoff") is None  # the agent's own examples do not read it as a request

    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    try:
        page.goto(base + "/dashboard/login/")
        page.fill("#id_username", "mia@acme.test")
        page.fill("#id_password", PASSWORD)
        page.get_by_role("button", name="Sign in", exact=True).click()
        page.wait_for_url(base + "/dashboard/")
        page.goto(base + "/dashboard/settings/")

        section = page.locator("#phrasings")
        assert "they take effect on the next message" in section.inner_text()
        section.get_by_label("The visitor…").select_option(label="Wants to talk to a person")
        section.get_by_label("Phrasing").fill(PHRASING)
        section.get_by_role("button", name="Add phrasing").click()
        page.wait_for_url(base + "/dashboard/settings/")
        assert "Phrasing added" in page.locator(".messages").inner_text()
        listed = page.locator("#phrasings ul.phrasings[data-decision='person'] li")
        assert listed.count() == 1 and PHRASING in listed.inner_text()
        section.scroll_into_view_if_needed()
        screenshot(page, "dashboard-settings-phrasings.png")

        after = _chat(stack, ASKED, "visitor-after")
        assert after.get("handoff"), after
        person = _decisions(stack, after["sessionId"])["person"]
        assert person["by"] == "tenant"
        assert person["nearest"][0]["text"] == PHRASING

        listed.get_by_role("button", name="Remove").click()
        page.wait_for_url(base + "/dashboard/settings/")
        assert "Phrasing removed" in page.locator(".messages").inner_text()
        assert page.locator("#phrasings ul.phrasings li").count() == 0

        removed = _chat(stack, ASKED, "visitor-removed")
        assert removed.get("handoff") is None
        assert "person" not in _decisions(stack, removed["sessionId"])
    finally:
        context.close()
