"""The staff access audit in a real browser (headless Chromium) against a real daphne process on
the embedded default: a manager opens a lead's page from the Leads list, then the Privacy page
(in the navigation) lists that view with the manager's name, the lead as a link back to it, and
the time. Then a data-protection officer's path: the manager exports the person's data from the
lead's page, asks to erase them, reads what goes, confirms; the person is gone from the leads,
and the Privacy page lists the erasure and names nobody. Screenshots with ``SCREENSHOTS=1``
(``make screenshots``): ``dashboard-privacy.png``, ``dashboard-erase.png`` (the confirmation),
``dashboard-privacy-erasures.png`` and ``dashboard-erase-phone.png``."""

from __future__ import annotations

import json
import re
from pathlib import Path

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
lead_create(tenant=tenant, livemode=True, email="kept@example.com", name="Kept Person")
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


def _signed_in(stack, viewport):
    context = stack["browser"].new_context(viewport=viewport, accept_downloads=True)
    page = context.new_page()
    base = stack["base"]
    page.goto(base + "/dashboard/login/")
    page.fill("#id_username", "mia@acme.test")
    page.fill("#id_password", PASSWORD)
    page.get_by_role("button", name="Sign in", exact=True).click()
    page.wait_for_url(base + "/dashboard/")
    return context, page


def test_a_manager_exports_then_erases_a_person(stack):
    base, lead = stack["base"], stack["lead"]
    context, page = _signed_in(stack, {"width": 1280, "height": 900})
    violations = watch_csp(context)
    try:
        page.goto(f"{base}/dashboard/leads/{lead}/")
        with page.expect_download() as download:
            page.get_by_role("link", name="Export data").first.click()
        exported = json.loads(Path(download.value.path()).read_text(encoding="utf-8"))
        assert exported["leads"][0]["email"] == "olga@initech.example"

        page.get_by_role("link", name="Erase this person").click()
        page.wait_for_url(f"{base}/dashboard/leads/{lead}/erase/")
        preview = page.locator("#erase-preview").inner_text()
        assert "1 lead (olga@initech.example)" in preview and "0 conversations" in preview
        screenshot(page, "dashboard-erase.png", full_page=True)
        page.get_by_role("button", name="Erase this person").click()
        page.wait_for_url(base + "/dashboard/leads/")
        assert "Erased: 1 lead" in page.locator("body").inner_text()
        assert page.get_by_role("link", name="Olga Ivanova").count() == 0
        assert page.get_by_role("link", name="Kept Person").count() == 1

        page.get_by_role("link", name="Privacy", exact=True).click()
        row = page.locator("#erasures tbody tr")
        assert row.count() == 1
        cells = row.first.locator("td").all_inner_texts()
        assert cells[1] == "Lead" and cells[2] == "Mia Manager" and "Completed" in cells[3]
        assert cells[4].startswith("1 lead, ")
        body = page.locator("main").inner_text()
        assert "Olga" not in body and "olga@initech.example" not in body
        screenshot(page, "dashboard-privacy-erasures.png", full_page=True)
        assert violations == []
    finally:
        context.close()


def test_the_privacy_page_reads_on_a_phone(stack):
    context, page = _signed_in(stack, {"width": 390, "height": 844})
    try:
        page.goto(f"{stack['base']}/dashboard/privacy/")
        assert page.locator("#erasures").is_visible()
        scroll = page.evaluate("document.documentElement.scrollWidth")
        assert scroll <= 390 + 1, scroll  # the tables scroll inside their cards
        screenshot(page, "dashboard-erase-phone.png", full_page=True)
    finally:
        context.close()
