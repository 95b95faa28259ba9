"""Connecting a calendar on the rep's own page in a real browser (headless Chromium) against a
real daphne process and a real Radicale: a wrong password is refused with what failed, the right
one connects. Screenshot: docs/screenshots/dashboard-calendar.png with ``SCREENSHOTS=1``."""

from __future__ import annotations

import json

import pytest

from tests.browser import browser, screenshot
from tests.fakes.radicale import USERS
from tests.live import daphne, manage

pytestmark = pytest.mark.live  # daphne, Radicale and Chromium

PASSWORD = "correct-horse-battery"
EMBEDDED = {"DATABASE_URL": None, "REDIS_URL": None, "DEBUG": "1", "SECRET_KEY": None,
            "ALLOWED_HOSTS": None, "V1_REQUIRE_HTTPS": "0",
            # Radicale listens on 127.0.0.1 over plain HTTP.
            "CALENDARS_ALLOW_HTTP": "1", "CALENDARS_ALLOW_PRIVATE_TARGETS": "1"}
SETUP = """
from tenants.models import Tenant
from tenants.services import user_create
user_create(tenant=Tenant.objects.get(pk={tenant!r}), email="ray@acme.test", first_name="Ray",
            last_name="Rep", password={password!r})
"""


def test_a_rep_connects_a_calendar_on_their_page(radicale, tmp_path):
    calendar_url = radicale.make_calendar()
    env = {**EMBEDDED, "VAR_DIR": str(tmp_path / "var")}
    manage("migrate", "--noinput", env=env)
    acme = json.loads(manage("create_tenant", "Acme", "--json", env=env))
    manage("shell", "-c", SETUP.format(tenant=acme["tenant"]["id"], password=PASSWORD), env=env)
    with daphne(env) as base, browser() as chromium:
        context = chromium.new_context(viewport={"width": 1280, "height": 800})
        page = context.new_page()
        page.goto(base + "/dashboard/login/")
        page.fill("#id_username", "ray@acme.test")
        page.fill("#id_password", PASSWORD)
        page.get_by_role("button", name="Sign in", exact=True).click()
        page.wait_for_url(base + "/dashboard/")
        page.get_by_role("link", name="My calendar").click()

        page.fill("#id_url", radicale.url)
        page.fill("#id_username", "ray")
        page.fill("#id_password", "not-the-password")
        page.get_by_role("button", name="Connect calendar").click()
        assert "Authentication failed" in page.get_by_test_id("calendar-error").inner_text()
        assert page.input_value("#id_password") == ""  # never echoed

        page.fill("#id_password", USERS["ray"])
        page.get_by_role("button", name="Connect calendar").click()
        page.wait_for_url(base + "/dashboard/calendar/")
        assert calendar_url in page.get_by_test_id("calendar-status").inner_text()
        assert "Calendar connected" in page.locator(".messages").inner_text()
        screenshot(page, "dashboard-calendar.png", full_page=True)
        context.close()
