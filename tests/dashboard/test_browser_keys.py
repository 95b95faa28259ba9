"""API keys, Copy buttons and confirmations in a real browser (headless Chromium, phone-sized)
against a real daphne process: reloading the page that shows a new key makes no second key and
no longer shows the value; Copy puts the key (and the widget's embed snippet) on the clipboard
and says so; declining "Revoke key …?" keeps the key working, accepting revokes it. Screenshot
with ``SCREENSHOTS=1`` (``make screenshots``)."""

from __future__ import annotations

import json

import httpx
import pytest

from tests.browser import browser, screenshot
from tests.live import daphne, manage

from .test_browser import EMBEDDED, PASSWORD
from .test_browser_phone import PHONE

pytestmark = pytest.mark.live  # daphne and Chromium

SETUP = """
from tenants.models import Tenant
from tenants.services import user_create
user_create(tenant=Tenant.objects.get(pk={tenant!r}), email="mia@acme.test", first_name="Mia",
            last_name="Manager", role="manager", password={password!r})
"""

KEYS = """
import json
from apikeys.models import ApiKey
print(json.dumps([[k.name, k.revoked_at is not None] for k in
                  ApiKey.objects.filter(name={name!r}).order_by("created_at")]))
"""


@pytest.fixture(scope="module")
def keys_stack(tmp_path_factory):
    env = {**EMBEDDED, "VAR_DIR": str(tmp_path_factory.mktemp("keys"))}
    manage("migrate", "--noinput", env=env)
    acme = json.loads(manage("create_tenant", "Acme", "--json", env=env))
    manage("shell", "-c", SETUP.format(tenant=acme["tenant"]["id"], password=PASSWORD), env=env)
    with browser() as chromium, daphne(env) as base:
        yield {"base": base, "browser": chromium, "env": env,
               "public_id": acme["tenant"]["publicId"]}


@pytest.fixture
def page(keys_stack):
    base = keys_stack["base"]
    context = keys_stack["browser"].new_context(**PHONE)
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=base)
    page = context.new_page()
    page.goto(base + "/dashboard/login/")
    page.fill("#id_username", "mia@acme.test")
    page.fill("#id_password", PASSWORD)
    page.get_by_role("button", name="Sign in", exact=True).click()
    page.wait_for_url(base + "/dashboard/")
    yield page
    context.close()


def _stored(stack, name: str) -> list[list]:
    """The keys of that name in the database: [name, revoked] each."""
    return json.loads(manage("shell", "-c", KEYS.format(name=name), env=stack["env"]).splitlines()[-1])


def _status(stack, raw: str) -> int:
    return httpx.get(stack["base"] + "/api/v1/leads", timeout=10,
                     headers={"Authorization": f"Bearer {raw}"}).status_code


def _generate(page, base: str, name: str) -> str:
    page.goto(base + "/dashboard/keys/")
    page.fill("#id_name", name)
    page.get_by_role("button", name="Generate").click()
    page.wait_for_url(base + "/dashboard/keys/*/created/")
    return page.locator("#new-key").inner_text()


def test_reloading_the_new_key_page_makes_no_second_key_and_hides_it(keys_stack, page):
    base = keys_stack["base"]
    raw = _generate(page, base, "CRM sync")
    assert raw.startswith("sk_live_") and _status(keys_stack, raw) == 200
    assert "Key “CRM sync” created." in page.locator(".messages").inner_text()

    copy = page.get_by_role("button", name="Copy")
    copy.click()
    page.get_by_role("button", name="Copied").wait_for()
    assert page.evaluate("navigator.clipboard.readText()") == raw
    screenshot(page, "dashboard-phone-key-created.png", full_page=True)

    page.reload()
    assert raw not in page.content() and page.locator("#new-key").count() == 0
    assert "The key was shown once" in page.locator("#new-key-gone").inner_text()
    assert page.get_by_role("button", name="Copy").count() == 0
    assert _stored(keys_stack, "CRM sync") == [["CRM sync", False]]
    page.get_by_role("link", name="Done").click()
    assert page.locator("#keys tr", has_text="CRM sync").count() == 1
    assert _status(keys_stack, raw) == 200


def test_rotate_then_reload_shows_the_new_key_once(keys_stack, page):
    base = keys_stack["base"]
    first = _generate(page, base, "Zapier")
    page.goto(base + "/dashboard/keys/")
    page.locator("#keys tr", has_text="Zapier").get_by_role("button", name="Rotate").click()
    page.wait_for_url(base + "/dashboard/keys/*/created/")
    second = page.locator("#new-key").inner_text()
    assert second != first and "Key rotated" in page.locator("h1").inner_text()
    page.reload()
    assert second not in page.content() and page.locator("#new-key-gone").count() == 1
    assert [revoked for _, revoked in _stored(keys_stack, "Zapier")] == [False, False]
    assert _status(keys_stack, first) == 200 and _status(keys_stack, second) == 200

    # "Revoke old key now" asks first; accepted, the old key stops working.
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Revoke old key now").click()
    page.wait_for_url(base + "/dashboard/keys/")
    assert _status(keys_stack, first) == 401 and _status(keys_stack, second) == 200


def test_revoke_asks_first_and_declining_keeps_the_key(keys_stack, page):
    base = keys_stack["base"]
    raw = _generate(page, base, "Old CRM")
    page.goto(base + "/dashboard/keys/")
    row = page.locator("#keys tr", has_text="Old CRM")
    questions = []

    def decline(dialog):
        questions.append(dialog.message)
        dialog.dismiss()

    page.once("dialog", decline)
    row.get_by_role("button", name="Revoke", exact=True).click()
    assert questions == ["Revoke key “Old CRM”? Clients using it stop working at once."]
    assert page.url == base + "/dashboard/keys/" and row.locator(".pill").inner_text() == "Active"
    assert _stored(keys_stack, "Old CRM") == [["Old CRM", False]] and _status(keys_stack, raw) == 200

    page.once("dialog", lambda dialog: dialog.accept())
    row.get_by_role("button", name="Revoke", exact=True).click()
    page.wait_for_load_state()
    assert "Key “Old CRM” revoked." in page.locator(".messages").inner_text()
    assert row.locator(".pill").inner_text() == "Revoked"
    assert _stored(keys_stack, "Old CRM") == [["Old CRM", True]] and _status(keys_stack, raw) == 401


def test_the_embed_snippet_is_copied(keys_stack, page):
    base = keys_stack["base"]
    page.goto(base + "/dashboard/settings/")
    page.locator("#widget").get_by_role("button", name="Copy").click()
    page.locator("#widget").get_by_role("button", name="Copied").wait_for()
    assert page.evaluate("navigator.clipboard.readText()") == (
        f'<script src="{base}/widget.js" data-tenant="{keys_stack["public_id"]}" async></script>')
