"""The dashboard on a phone (390×844, headless Chromium) against a real daphne process: a rep
signs in, opens a conversation handed off by the agent, takes it over and replies from a
transcript and a reply box that fill the screen (the reply is stored, authored by the rep); and
no dashboard page scrolls sideways as a whole: wide tables scroll inside their own box.
Screenshots with ``SCREENSHOTS=1`` (``make screenshots``)."""

from __future__ import annotations

import json
import uuid

import httpx
import pytest

from tests.browser import browser, screenshot
from tests.live import daphne, manage

from .test_browser import EMBEDDED, PASSWORD

pytestmark = pytest.mark.live  # daphne and Chromium

PHONE = {"viewport": {"width": 390, "height": 844}, "device_scale_factor": 2,
         "is_mobile": True, "has_touch": True}
# Nothing listens there: deliveries fail at once and the pages show their errors.
RECEIVER = "http://127.0.0.1:9/hooks/acme-international/crm-synchronisation-endpoint-v2"

SETUP = """
import json
from analytics.services import record_widget_visit
from apikeys.services import api_key_create
from knowledge.services import document_create
from leads.services import lead_create, lead_update
from tenants.models import Tenant
from tenants.services import user_create
from webhooks import services
from webhooks.models import Delivery
tenant = Tenant.objects.get(pk={tenant!r})
user_create(tenant=tenant, email="mia@acme.test", first_name="Mia", last_name="Manager",
            role="manager", password={password!r})
services.subscription_create(tenant=tenant, livemode=True, url={receiver!r},
                             events=["lead.created", "lead.updated", "lead.qualified"])
services.legacy_webhook_create(tenant=tenant, url={receiver!r} + "/legacy",
                               events=["lead.created", "lead.qualified"])
for i in range(12):
    record_widget_visit(tenant=tenant, visitor_id="v%d" % i)
lead = lead_create(tenant=tenant, livemode=True, name="Alexandra Konstantinopoulou",
                   email="alexandra.konstantinopoulou@international-logistics-holdings.example",
                   company="International Logistics Holdings Group", title="VP Procurement",
                   phone="+30 210 555 0100", tags=["enterprise", "logistics", "q3-pipeline"])
lead_update(lead=lead, changes={{"status": "qualified"}})
for name in ("Bob Ng", "Chidi Okafor", "Dana Whitfield-Montgomery"):
    lead_create(tenant=tenant, livemode=True, name=name, source="form",
                email=name.lower().replace(" ", ".") + "@example-enterprises.example")
api_key_create(tenant=tenant, name="Salesforce CRM synchronisation (production)", scope="write",
               livemode=True, created_by="dashboard:mia@acme.test")
for title, type, data in [
    ("Pricing and plans for enterprise customers", "markdown",
     b"# Plans\\n\\nStarter is $49 per seat a month.\\n\\n# Enterprise\\n\\nAsk us."),
    ("Objections", "faq", b"Q: Is it secure?\\nA: Yes: SOC 2 Type II, data stays in the EU."),
]:
    document_create(tenant=tenant, livemode=True, title=title, type=type, data=data,
                    url="https://acme.example/resources/" + type + "/a-long-public-address")
delivery = Delivery.objects.filter(surface="v1").order_by("created_at").first()
print(json.dumps({{"lead": str(lead.pk), "delivery": str(delivery.pk)}}))
"""

REP = """
from tenants.models import Tenant
from tenants.services import user_create
user_create(tenant=Tenant.objects.get(pk={tenant!r}), email="ray@acme.test", first_name="Ray",
            last_name="Rep", password={password!r})
"""

REPLIES = """
from conversations.models import Message
print(list(Message.objects.filter(conversation_id={conversation!r}, author__email="ray@acme.test")
           .values_list("content", flat=True)))
"""


def _chat(base: str, key: str, message: str, session: str | None = None) -> dict:
    body = {"message": message, "visitorId": "carl", **({"sessionId": session} if session else {})}
    r = httpx.post(f"{base}/api/v1/chat", json=body, timeout=30,
                   headers={"Authorization": f"Bearer {key}"})
    assert r.status_code == 200, r.text
    return r.json()


@pytest.fixture(scope="module")
def phone_stack(tmp_path_factory):
    env = {**EMBEDDED, "VAR_DIR": str(tmp_path_factory.mktemp("phone"))}
    manage("migrate", "--noinput", env=env)
    acme = json.loads(manage("create_tenant", "Acme", "--json", env=env))
    tenant = acme["tenant"]["id"]
    ids = json.loads(manage("shell", "-c", SETUP.format(
        tenant=tenant, password=PASSWORD, receiver=RECEIVER), env=env).splitlines()[-1])
    with browser() as chromium, daphne(env) as base:
        key = acme["keys"]["live"]["write"]
        session = _chat(base, key, "Hi, I'm Carl Jones from Initech, carl@initech.test")["sessionId"]
        handoff = _chat(base, key, "Can I talk to a person please?", session)
        assert handoff["handoff"], handoff
        # The rep joins after the handoff: the conversation is not theirs until they take it.
        manage("shell", "-c", REP.format(tenant=tenant, password=PASSWORD), env=env)
        conversation = str(uuid.UUID(session.removeprefix("sess_")))  # the session is the chat
        yield {"base": base, "browser": chromium, "env": env, "conversation": conversation, **ids}


def _sign_in(stack, email: str, device: dict | None = None):
    context = stack["browser"].new_context(**(device or PHONE))
    page = context.new_page()
    page.goto(stack["base"] + "/dashboard/login/")
    page.fill("#id_username", email)
    page.fill("#id_password", PASSWORD)
    page.get_by_role("button", name="Sign in", exact=True).click()
    page.wait_for_url(stack["base"] + "/dashboard/")
    return context, page


def _page_width(page) -> tuple[int, int]:
    return page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")


def test_a_rep_takes_over_and_replies_on_a_phone(phone_stack):
    base, conversation = phone_stack["base"], phone_stack["conversation"]
    context, page = _sign_in(phone_stack, "ray@acme.test")
    try:
        page.goto(f"{base}/dashboard/conversations/{conversation}/")
        page.get_by_role("button", name="Take over").click()
        page.wait_for_url(f"{base}/dashboard/conversations/{conversation}/")
        assert "You have this conversation" in page.locator(".notice").inner_text()

        # The transcript and the reply box take the phone's width (less the page's margins).
        transcript = page.locator("#transcript").bounding_box()
        reply = page.locator("#id_content").bounding_box()
        assert transcript["width"] >= 300 and reply["width"] >= 300, (transcript, reply)
        assert _page_width(page)[0] <= 390

        page.locator("#id_content").fill("Hi Carl, Ray here: what would you like to know?")
        page.get_by_role("button", name="Send to the visitor").click()
        page.wait_for_url(f"{base}/dashboard/conversations/{conversation}/")
        assert "Reply sent." in page.locator(".messages").inner_text()
        mine = page.locator(".bubble.human", has_text="Ray here")
        assert mine.count() == 1 and "Ray Rep" in mine.inner_text()
        stored = manage("shell", "-c", REPLIES.format(conversation=conversation),
                        env=phone_stack["env"])
        assert "Hi Carl, Ray here: what would you like to know?" in stored
        screenshot(page, "dashboard-phone-conversation.png", full_page=True)
    finally:
        context.close()


def test_no_dashboard_page_scrolls_sideways_on_a_phone(phone_stack):
    base = phone_stack["base"] + "/dashboard/"
    pages = {
        "home": "", "leads": "leads/", "lead": f"leads/{phone_stack['lead']}/",
        "conversations": "conversations/?view=all",
        "conversation": f"conversations/{phone_stack['conversation']}/",
        "knowledge": "knowledge/", "keys": "keys/", "webhooks": "webhooks/",
        "delivery": f"webhooks/deliveries/{phone_stack['delivery']}/", "settings": "settings/",
        "analytics": "analytics/", "calendar": "calendar/", "profile": "profile/",
        "team": "team/",
    }
    shots = {"home": True, "keys": True, "knowledge": True, "lead": True, "webhooks": False}
    context, page = _sign_in(phone_stack, "mia@acme.test")
    try:
        wide = {}
        for name, path in pages.items():
            response = page.goto(base + path)
            assert response.status == 200, (name, response.status)
            # A phone widens its layout viewport (innerWidth) to fit a page wider than the screen.
            scroll, inner = _page_width(page)
            if scroll > inner or inner != PHONE["viewport"]["width"]:
                wide[name] = scroll
            if name in shots:  # the webhooks page is long: its first screen says enough
                screenshot(page, f"dashboard-phone-{name}.png", full_page=shots[name])
        assert wide == {}, f"pages wider than the phone: {wide}"

        # A wide table scrolls inside its own box, which stays within the screen.
        page.goto(base + "webhooks/")
        boxes = page.evaluate("""Array.from(document.querySelectorAll('.table-wrap'), (w) => (
            {scroll: w.scrollWidth, client: w.clientWidth,
             right: w.getBoundingClientRect().right,
             overflow: getComputedStyle(w).overflowX}))""")
        assert boxes and all(b["overflow"] == "auto" and b["right"] <= 390 for b in boxes), boxes
        assert any(b["scroll"] > b["client"] for b in boxes), boxes
    finally:
        context.close()


@pytest.mark.parametrize("width", [1440, 1280, 1024])
def test_the_dashboard_s_links_stay_on_one_line_on_a_wider_screen(phone_stack, width):
    """A manager's navigation (Team included) is one row of links: the sign-in and presence
    controls go to a row of their own rather than squeeze the links onto three."""
    context, page = _sign_in(phone_stack, "mia@acme.test",
                             {"viewport": {"width": width, "height": 800}})
    try:
        rows = page.evaluate("""Array.from(document.querySelectorAll('nav.main a'),
            (a) => Math.round(a.getBoundingClientRect().top))""")
        assert len(rows) >= 7 and len(set(rows)) == 1, rows
        assert _page_width(page)[0] <= width
    finally:
        context.close()


def test_on_a_phone_the_header_folds_into_a_menu(phone_stack):
    """Issue 29: on a phone the header took about 400 of 844 px. It is one row now, the
    brand and a Menu button (<button aria-expanded aria-controls>) that opens the navigation
    and the person's controls over the page: nothing below moves, Escape closes it and gives
    the focus back. The fold is the style sheet's (no jump when the script arrives); without
    JavaScript the header shows everything, as before."""
    base = phone_stack["base"]
    context, page = _sign_in(phone_stack, "mia@acme.test")
    try:
        toggle = page.get_by_role("button", name="Menu")
        header = page.locator("header.top").bounding_box()
        assert header["height"] <= 64, header
        assert toggle.get_attribute("aria-expanded") == "false"
        assert toggle.get_attribute("aria-controls") == "dashboard-menu"
        leads = page.locator("nav.main a", has_text="Leads")
        assert not leads.is_visible() and not page.get_by_role("button", name="Sign out").is_visible()
        title = page.locator("h1").bounding_box()
        screenshot(page, "dashboard-phone-menu-closed.png")

        toggle.click()
        assert toggle.get_attribute("aria-expanded") == "true"
        assert leads.is_visible() and page.get_by_role("button", name="Sign out").is_visible()
        assert page.get_by_role("button", name="Live").is_visible()
        assert page.locator("h1").bounding_box() == title  # over the page, not pushing it
        menu = page.locator("#dashboard-menu").bounding_box()
        assert menu["y"] == header["height"] and menu["width"] == 390, menu
        screenshot(page, "dashboard-phone-menu-open.png")
        page.keyboard.press("Escape")
        assert toggle.get_attribute("aria-expanded") == "false" and not leads.is_visible()
        assert page.evaluate("document.activeElement.getAttribute('aria-controls')") == "dashboard-menu"

        toggle.click()
        leads.click()
        page.wait_for_url(base + "/dashboard/leads/")
        assert page.get_by_role("button", name="Menu").get_attribute("aria-expanded") == "false"

        # Folded before any script runs: the page is laid out once.
        page.route("**/dashboard.js", lambda route: route.abort())
        page.goto(base + "/dashboard/")
        assert page.locator("header.top").bounding_box()["height"] <= 64
        assert page.get_by_role("button", name="Menu").is_visible()
    finally:
        context.close()

    context = phone_stack["browser"].new_context(**PHONE, java_script_enabled=False)
    page = context.new_page()
    try:
        page.goto(base + "/dashboard/login/")
        page.fill("#id_username", "mia@acme.test")
        page.fill("#id_password", PASSWORD)
        page.get_by_role("button", name="Sign in", exact=True).click()
        page.wait_for_url(base + "/dashboard/")
        assert not page.get_by_role("button", name="Menu").is_visible()
        assert page.locator("nav.main a", has_text="Leads").is_visible()
        assert page.get_by_role("button", name="Sign out").is_visible()
    finally:
        context.close()

    # On a wide screen there is no Menu button: the links are in the header's row.
    context, page = _sign_in(phone_stack, "mia@acme.test", {"viewport": {"width": 1280, "height": 800}})
    try:
        assert not page.get_by_role("button", name="Menu").is_visible()
        assert page.locator("nav.main a", has_text="Leads").is_visible()
        screenshot(page, "dashboard-header-desktop.png", clip={"x": 0, "y": 0, "width": 1280,
                                                               "height": 200})
    finally:
        context.close()
