"""The Integrations page in a real browser (headless Chromium) against a real daphne process:
a manager connects HubSpot with OAuth 2.0 through the stand-in's authorize and token endpoints,
a new lead reaches HubSpot as a contact, and a revoked grant shows "Reconnect needed" with the
sync waiting rather than retrying. Screenshot with ``SCREENSHOTS=1``."""

from __future__ import annotations

import json

import pytest

from tests.browser import browser, screenshot, sign_in
from tests.live import daphne, manage

from .standins.hubspot import HubSpotStandIn

pytestmark = pytest.mark.live  # daphne and Chromium

PASSWORD = "correct-horse-battery"
SETUP = """
from tenants.models import Tenant
from tenants.services import user_create
tenant = Tenant.objects.get(pk={tenant!r})
user_create(tenant=tenant, email="mia@acme.test", first_name="Mia", last_name="Manager",
            role="manager", password={password!r})
user_create(tenant=tenant, email="ray@acme.test", first_name="Ray", password={password!r})
"""
LEAD = """
from leads.services import lead_create
from tenants.models import Tenant
lead_create(tenant=Tenant.objects.get(pk={tenant!r}), livemode=True, email={email!r},
            name="Ann Lee", company="Hooli")
"""


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    hub = HubSpotStandIn().start()
    env = {"DATABASE_URL": None, "REDIS_URL": None, "DEBUG": "1", "SECRET_KEY": None,
           "ALLOWED_HOSTS": None, "V1_REQUIRE_HTTPS": "0", "CELERY_TASK_ALWAYS_EAGER": "1",
           # No chat here: the embedding model need not load at start-up.
           "AGENT_WARM_UP": "0",
           "VAR_DIR": str(tmp_path_factory.mktemp("crm")),
           "INTEGRATIONS_ALLOW_HTTP": "1", "INTEGRATIONS_ALLOW_PRIVATE_TARGETS": "1",
           "HUBSPOT_CLIENT_ID": hub.client_id, "HUBSPOT_CLIENT_SECRET": hub.client_secret,
           "HUBSPOT_API_BASE_URL": hub.url, "HUBSPOT_AUTHORIZE_URL": f"{hub.url}/oauth/authorize"}
    manage("migrate", "--noinput", env=env)
    acme = json.loads(manage("create_tenant", "Acme", "--json", env=env))
    tenant = acme["tenant"]["id"]
    manage("shell", "-c", SETUP.format(tenant=tenant, password=PASSWORD), env=env)
    try:
        with daphne(env) as base, browser() as chromium:
            yield {"base": base, "hub": hub, "env": env, "tenant": tenant, "chromium": chromium}
    finally:
        hub.stop()


def _signed_in(stack, email="mia@acme.test"):
    context = stack["chromium"].new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    sign_in(page, stack["base"], email, PASSWORD)
    return context, page


def test_a_manager_connects_hubspot_with_oauth_and_a_lead_becomes_a_contact(stack):
    base, hub = stack["base"], stack["hub"]
    context, page = _signed_in(stack)
    try:
        page.get_by_role("link", name="Integrations").click()
        card = page.get_by_test_id("crm-hubspot")
        assert "Not connected." in card.inner_text()
        card.get_by_test_id("crm-oauth").click()
        # HubSpot's consent page (the stand-in's), asking for the fewest scopes: contacts, and
        # owners read-only (owner-aware routing); nothing more.
        page.wait_for_url(f"{hub.url}/oauth/authorize?*")
        content = page.content()
        assert "crm.objects.contacts.write" in content and "crm.objects.owners.read" in content
        assert "crm.objects.owners.write" not in content and "crm.schemas" not in content
        page.get_by_role("button", name="Connect app").click()
        page.wait_for_url(base + "/dashboard/integrations/")
        assert "HubSpot connected." in page.locator(".messages").inner_text()
        assert card.get_by_test_id("crm-status").inner_text() == "Connected"
        assert "account 24680" in card.inner_text()
        token_calls = [r for r in hub.requests if r.path == "/oauth/v1/token"]
        assert len(token_calls) == 1 and token_calls[0].status == 200

        manage("shell", "-c", LEAD.format(tenant=stack["tenant"], email="ann@hooli.com"),
               env=stack["env"])
        assert [c["properties"]["email"] for c in hub.contacts()] == ["ann@hooli.com"]
        page.reload()
        row = card.get_by_test_id("crm-log").locator("tbody tr", has_text="ann@hooli.com")
        assert "Synced" in row.inner_text() and hub.contacts()[0]["id"] in row.inner_text()

        # The grant is revoked at HubSpot: the next sync is refused, the page says to reconnect.
        hub.revoke_all()
        manage("shell", "-c", LEAD.format(tenant=stack["tenant"], email="bo@hooli.com"),
               env=stack["env"])
        page.reload()
        assert card.get_by_test_id("crm-status").inner_text() == "Reconnect needed"
        assert "refused the token" in card.get_by_test_id("crm-reconnect").inner_text()
        row = card.get_by_test_id("crm-log").locator("tbody tr", has_text="bo@hooli.com")
        assert "Waiting for reconnect" in row.inner_text()
        assert "Reconnect with HubSpot" in card.inner_text()
        screenshot(page, "dashboard-integrations.png", full_page=True)
    finally:
        context.close()


def test_reps_do_not_see_the_integrations_page(stack):
    context, page = _signed_in(stack, "ray@acme.test")
    try:
        assert page.get_by_role("link", name="Integrations").count() == 0
        page.goto(stack["base"] + "/dashboard/integrations/")
        page.wait_for_url(stack["base"] + "/dashboard/")
        assert "Only sales managers" in page.locator(".messages").inner_text()
    finally:
        context.close()
