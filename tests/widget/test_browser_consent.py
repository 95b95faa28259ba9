"""Consent in a real browser (headless Chromium, a customer's page on another origin, a real
daphne process; docs/widget.md, "Consent", "Do Not Track"): the widget shows the tenant's notice
in place of the message box and sends nothing, not a session's start nor its live stream, until
the visitor accepts; then the chat works, the acceptance is remembered across a reload, and a
newer notice is asked for again. A browser with Global Privacy Control sends no page metadata."""

from __future__ import annotations

import json

import httpx
import pytest

from tests.browser import HostSite, browser, screenshot
from tests.live import daphne, manage

pytestmark = pytest.mark.live  # daphne and Chromium

EMBEDDED = {"DATABASE_URL": None, "REDIS_URL": None, "DEBUG": "1", "SECRET_KEY": None,
            "ALLOWED_HOSTS": None, "V1_REQUIRE_HTTPS": "0", "EMAIL_URL": None}
NOTICE = ("We keep this conversation to answer you and follow up.\n"
          "By chatting you accept our privacy policy.")
POLICY = "https://acme.test/privacy"

SETUP = """
from tenants.models import Tenant
from tenants.services import tenant_set_allowed_origins, tenant_set_consent
t = Tenant.objects.get(pk={tenant!r})
tenant_set_allowed_origins(tenant=t, origins=[{origin!r}])
tenant_set_consent(tenant=t, consent_required=True, consent_text={text!r}, consent_link={link!r},
                   honour_do_not_track=True)
"""
NEW_NOTICE = """
from tenants.models import Tenant
from tenants.services import tenant_set_consent
tenant_set_consent(tenant=Tenant.objects.get(pk={tenant!r}), consent_text={text!r})
"""


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    env = {**EMBEDDED, "VAR_DIR": str(tmp_path_factory.mktemp("var"))}
    manage("migrate", "--noinput", env=env)
    acme = json.loads(manage("create_tenant", "Acme", "--json", env=env))
    with daphne(env) as base:
        site = HostSite(base, acme["tenant"]["publicId"])
        manage("shell", "-c", SETUP.format(tenant=acme["tenant"]["id"], origin=site.origin,
                                            text=NOTICE, link=POLICY), env=env)
        with browser() as chromium:
            yield {"base": base, "env": env, "site": site, "acme": acme, "browser": chromium}
        site.close()


@pytest.fixture
def context(stack):
    context = stack["browser"].new_context(viewport={"width": 1280, "height": 800})
    yield context
    context.close()


class Sent:
    """The requests the page makes to the service (not the script itself): method, path and
    query, and the body of each chat request."""

    def __init__(self, page, base: str):
        self.calls: list[str] = []
        self.chats: list[dict] = []

        def seen(request) -> None:
            if not request.url.startswith(base) or request.url.endswith("/widget.js"):
                return
            self.calls.append(f"{request.method} {request.url[len(base):]}")
            if request.method == "POST" and "/api/chat?" in request.url:
                self.chats.append(json.loads(request.post_data))

        page.on("request", seen)

    def paths(self) -> list[str]:
        return [call.split("?")[0] for call in self.calls]


def widget(page, url: str):
    page.goto(url)
    page.wait_for_function("() => window.ServiceWidget && document.querySelector('[data-service-widget]')")
    page.locator("button.launcher").click()


def wait_idle(page, timeout=15000) -> None:
    page.wait_for_function(
        "() => document.querySelector('[data-service-widget]')?.shadowRoot"
        "?.querySelector('.log')?.getAttribute('aria-busy') === 'false'", timeout=timeout)


def send(page, text: str) -> None:
    page.locator("#sw-input").fill(text)
    page.locator("#sw-input").press("Enter")


def conversation(stack, session_id: str) -> dict:
    key = stack["acme"]["keys"]["live"]["read"]
    r = httpx.get(f"{stack['base']}/api/v1/conversations/conv_{session_id.replace('-', '')}",
                  headers={"Authorization": f"Bearer {key}"}, timeout=10)
    assert r.status_code == 200, r.text
    return r.json()


def test_the_notice_on_a_phone(stack):
    context = stack["browser"].new_context(viewport={"width": 390, "height": 844},
                                           is_mobile=True, has_touch=True)
    try:
        page = context.new_page()
        widget(page, stack["site"].origin + "/")
        accept = page.get_by_role("button", name="Accept")
        accept.wait_for()
        box = accept.bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= 390
        assert box["y"] + box["height"] <= 844 and box["height"] >= 36  # reachable by a thumb
        screenshot(page, "widget-consent-phone.png")
    finally:
        context.close()


def test_nothing_is_sent_before_the_visitor_accepts_then_the_chat_works(stack, context):
    page = context.new_page()
    sent = Sent(page, stack["base"])
    widget(page, stack["site"].origin + "/")
    notice = page.locator(".consent")
    notice.wait_for()
    assert page.locator(".consent p").inner_text() == NOTICE
    link = page.get_by_role("link", name="Privacy policy")
    assert (link.get_attribute("href"), link.get_attribute("target")) == (POLICY, "_blank")
    accept = page.get_by_role("button", name="Accept")
    assert accept.evaluate("b => b.getRootNode().activeElement === b")  # focused on open
    assert not page.locator("#sw-input").is_visible()  # no message box to type in
    screenshot(page, "widget-consent.png")
    # The visitor's attempts before accepting send nothing either.
    page.evaluate("ServiceWidget.open()")
    page.wait_for_timeout(500)
    assert sent.paths() == ["GET /api/widget"]
    assert "consent=" not in sent.calls[0]  # nothing accepted yet

    accept.click()
    assert not notice.is_visible()
    send(page, "Hi, what does Acme sell?")
    wait_idle(page)
    assert page.locator(".msg.bot:not(.greeting)").count() == 1
    # Accepting loaded the configuration again (the visit counts now), then the message went
    # with the acceptance.
    assert sent.paths()[:3] == ["GET /api/widget", "GET /api/widget", "POST /api/chat"]
    assert "consent=1" in sent.calls[1]
    (chat,) = sent.chats
    assert chat["consent"]["version"] == 1
    session_id = page.evaluate("ServiceWidget.sessionId")
    stored = conversation(stack, session_id)["consent"]
    assert (stored["version"], stored["text"], stored["link"]) == (1, NOTICE, POLICY)
    assert stored["acceptedAt"] == chat["consent"]["acceptedAt"]

    # Remembered for this visitor: a reload shows the message box at once.
    page.reload()
    page.wait_for_function("() => window.ServiceWidget")
    page.locator("button.launcher").click()
    page.locator("#sw-input").wait_for()
    assert not page.locator(".consent").is_visible()

    # A newer notice: the next message is refused, the notice comes back with its new words,
    # and once accepted the message goes through in the same conversation.
    manage("shell", "-c", NEW_NOTICE.format(tenant=stack["acme"]["tenant"]["id"],
                                            text="Our updated notice."), env=stack["env"])
    send(page, "And the price?")
    page.locator(".consent p").filter(has_text="Our updated notice.").wait_for()
    assert page.locator(".undelivered").is_visible()
    page.get_by_role("button", name="Accept").click()
    page.get_by_role("button", name="Retry").click()
    wait_idle(page)
    assert page.locator(".msg.bot:not(.greeting)").count() >= 2
    assert page.evaluate("ServiceWidget.sessionId") == session_id
    assert conversation(stack, session_id)["consent"]["version"] == 2

    # The visitor comes back (their storage, not the browser's cache) after yet another notice:
    # even their stored session's live stream waits for the acceptance.
    manage("shell", "-c", NEW_NOTICE.format(tenant=stack["acme"]["tenant"]["id"],
                                            text="Our third notice."), env=stack["env"])
    back = stack["browser"].new_context(storage_state=context.storage_state())
    try:
        page = back.new_page()
        sent = Sent(page, stack["base"])
        widget(page, stack["site"].origin + "/")
        page.locator(".consent p").filter(has_text="Our third notice.").wait_for()
        page.wait_for_timeout(500)
        assert sent.paths() == ["GET /api/widget"] and "consent=2" in sent.calls[0]
        page.get_by_role("button", name="Accept").click()
        page.wait_for_function("() => window.ServiceWidget.sessionId")
        page.wait_for_timeout(500)
        assert sent.paths() == ["GET /api/widget", "GET /api/widget", "GET /api/chat/stream"]
        assert page.evaluate("ServiceWidget.sessionId") == session_id
    finally:
        back.close()


def test_global_privacy_control_sends_no_page_metadata(stack):
    """The browser says so (navigator.globalPrivacyControl and the Sec-GPC header), and the
    tenant honours it: the widget sends no page or referrer, the server keeps none."""
    context = stack["browser"].new_context(extra_http_headers={"Sec-GPC": "1"})
    context.add_init_script(
        "Object.defineProperty(Navigator.prototype, 'globalPrivacyControl', {get: () => true})")
    try:
        page = context.new_page()
        sent = Sent(page, stack["base"])
        widget(page, stack["site"].origin + "/?from=newsletter")
        page.get_by_role("button", name="Accept").click()
        send(page, "Hello")
        wait_idle(page)
        (chat,) = sent.chats
        assert "landingPage" not in chat["metadata"] and "referrer" not in chat["metadata"]
        assert chat["metadata"]["timezone"]
        metadata = conversation(stack, page.evaluate("ServiceWidget.sessionId"))["metadata"]
        assert (metadata["userAgent"], metadata["referrer"], metadata["landingPage"]) == (
            None, None, None)
    finally:
        context.close()
