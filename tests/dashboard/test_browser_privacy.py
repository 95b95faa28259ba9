"""The staff access audit in a real browser (headless Chromium) against a real daphne process on
the embedded default: a manager opens a lead's page from the Leads list, then the Privacy page
(in the navigation) lists that view with the manager's name, the lead as a link back to it, and
the time. Screenshot with ``SCREENSHOTS=1`` (``make screenshots``): ``dashboard-privacy.png``."""

from __future__ import annotations

import json
import re

import pytest

from tests.browser import browser, screenshot, watch_csp
from tests.live import daphne, manage

from .test_browser import EMBEDDED, PASSWORD

pytestmark = pytest.mark.live  # daphne and Chromium

SETUP = """
import json
from leads.services import lead_create
from tenants.models import Tenant
from tenants.services import user_create
tenant = Tenant.objects.get(pk={tenant!r})
user_create(tenant=tenant, email="mia@acme.test", first_name="Mia", last_name="Manager",
            role="manager", password={password!r})
lead = lead_create(tenant=tenant, livemode=True, email="olga@initech.example", name="Olga Ivanova",
                   company="Initech", source="form")
print(json.dumps({{"lead": str(lead.pk)}}))
"""


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    env = {**EMBEDDED, "VAR_DIR": str(tmp_path_factory.mktemp("privacy"))}
    manage("migrate", "--noinput", env=env)
    acme = json.loads(manage("create_tenant", "Acme", "--json", env=env))
    made = json.loads(manage("shell", "-c", SETUP.format(tenant=acme["tenant"]["id"],
                                                         password=PASSWORD),
                             env=env).splitlines()[-1])
    with browser() as chromium, daphne(env) as base:
        yield {"base": base, "browser": chromium, "lead": made["lead"]}


def test_a_managers_look_at_a_lead_shows_on_the_privacy_page(stack):
    base = stack["base"]
    context = stack["browser"].new_context(viewport={"width": 1280, "height": 900})
    violations = watch_csp(context)
    try:
        page = context.new_page()
        page.goto(base + "/dashboard/login/")
        page.fill("#id_username", "mia@acme.test")
        page.fill("#id_password", PASSWORD)
        page.get_by_role("button", name="Sign in", exact=True).click()
        page.wait_for_url(base + "/dashboard/")

        page.get_by_role("link", name="Leads", exact=True).click()
        page.get_by_role("link", name="Olga Ivanova").click()
        page.wait_for_url(f"{base}/dashboard/leads/{stack['lead']}/")

        page.get_by_role("link", name="Privacy", exact=True).click()
        page.wait_for_url(base + "/dashboard/privacy/")
        section = page.locator("#staff-access")
        assert section.get_by_role("heading", name="Staff access").is_visible()
        rows = section.locator("tbody tr")
        assert rows.count() == 1
        cells = rows.first.locator("td").all_inner_texts()
        assert cells[0] == "Mia Manager" and cells[1] == "Viewed the lead"
        assert cells[2] == f"lead_{stack['lead'].replace('-', '')}"
        assert re.fullmatch(r"[A-Z][a-z]{2} \d{1,2}, \d{4} \d{2}:\d{2}:\d{2}", cells[3]), cells[3]
        body = page.locator("main").inner_text()
        assert "Olga" not in body and "olga@initech.example" not in body  # ids only
        screenshot(page, "dashboard-privacy.png", full_page=True)

        # The lead is a link back to its page (which records that view too).
        rows.first.get_by_role("link").click()
        page.wait_for_url(f"{base}/dashboard/leads/{stack['lead']}/")
        page.go_back()
        page.reload()
        assert page.locator("#staff-access tbody tr").count() == 2
        assert violations == []
    finally:
        context.close()
