"""The Content-Security-Policy in a real browser (headless Chromium) against a real daphne
process: every dashboard page, with what its scripts do (a visitor's message arriving live on a
conversation, a processing document refreshing itself, Copy and a confirmation on the keys), the
widget preview and /demo/ with the widget opened and chatting, a meeting link page, and the admin
(sign-in, a change list, change forms) run with no violation of the policy: none reported by the
browser's ``securitypolicyviolation`` events, none in the console (tests/browser.py, watch_csp).
The header itself, directive by directive: tests/config/test_csp.py. Screenshots with
``SCREENSHOTS=1`` (``make screenshots``)."""

from __future__ import annotations

import json
import uuid

import httpx
import pytest

from tests.browser import browser, screenshot, watch_csp
from tests.live import daphne, manage

from .test_browser import EMBEDDED, PASSWORD

pytestmark = pytest.mark.live  # daphne and Chromium

# No worker, no eager tasks: a document stays processing until the test indexes it.
ENV = {**EMBEDDED, "CELERY_TASK_ALWAYS_EAGER": None, "EMAIL_URL": None, "EMAIL_HOST": None,
       "EMAIL_BACKEND": None}

SETUP = """
import json
from knowledge.services import document_create, document_index
from tenants.models import Tenant, User
from tenants.services import user_create, user_set_availability
from webhooks import services as webhooks
tenant = Tenant.objects.get(pk={tenant!r})
mia = user_create(tenant=tenant, email="mia@acme.test", first_name="Mia", last_name="Manager",
                  role="manager", password={password!r})
# Online and in working hours whenever the test runs (as tests.factories.make_available): Carl's
# handoff goes to her at any hour.
user_set_availability(user=mia, timezone_name="UTC", capacity=5,
                      working_hours={{"days": list(range(7)), "start_hour": 0, "end_hour": 24}})
User.objects.filter(pk=mia.pk).update(status="online")
User.objects.create_superuser(username="op", email="op@service.test", password={password!r})
webhooks.subscription_create(tenant=tenant, livemode=True, url="http://127.0.0.1:9/hooks",
                             events=["lead.created"])
ready = document_create(tenant=tenant, livemode=True, title="Pricing", type="markdown",
                        data=b"# Plans\\n\\nStarter is $49 per seat a month.")
document_index(document_id=ready.pk)
pending = document_create(tenant=tenant, livemode=True, title="Refund policy", type="text",
                          data=b"Refunds are possible within 30 days of purchase.")
print(json.dumps({{"pending": str(pending.pk)}}))
"""

LINKS = """
from conversations.links import link_token
from conversations.models import Meeting
meeting = Meeting.objects.get()
print(link_token(meeting.pk, "reschedule"), link_token(meeting.pk, "cancel"), meeting.lead_id)
"""


def _chat(base: str, key: str, message: str, visitor: str, session: str | None = None,
          metadata: dict | None = None) -> dict:
    body = {"message": message, "visitorId": visitor, **({"sessionId": session} if session else {}),
            **({"metadata": metadata} if metadata else {})}
    r = httpx.post(f"{base}/api/v1/chat", json=body, timeout=30,
                   headers={"Authorization": f"Bearer {key}"})
    assert r.status_code == 200, r.text
    return r.json()


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    env = {**ENV, "VAR_DIR": str(tmp_path_factory.mktemp("csp"))}
    manage("migrate", "--noinput", env=env)
    acme = json.loads(manage("create_tenant", "Acme", "--json", env=env))
    made = json.loads(manage("shell", "-c", SETUP.format(tenant=acme["tenant"]["id"],
                                                         password=PASSWORD), env=env).splitlines()[-1])
    key = acme["keys"]["live"]["write"]
    with browser() as chromium, daphne(env) as base:
        # Carl asks for a person: handed off to Mia, the tenant's only staff.
        carl = _chat(base, key, "Hi, I'm Carl, carl@initech.test", "carl")["sessionId"]
        _chat(base, key, "Can I talk to a person please?", "carl", carl)
        # Sam books a demo: a meeting, with its reschedule and cancel links.
        sam = _chat(base, key, "I'm Sam Lee, CTO at Umbrella, sam@umbrella.io", "sam")["sessionId"]
        offered = _chat(base, key, "Can we book a demo?", "sam", sam)
        slot = next(a for a in offered["suggestedActions"] if a["type"] == "reply")
        _chat(base, key, slot["message"], "sam", sam, metadata=slot["metadata"])
        reschedule, cancel, lead = manage("shell", "-c", LINKS, env=env).splitlines()[-1].split()
        yield {"base": base, "browser": chromium, "env": env, "key": key, "carl": carl,
               "lead": lead, "links": {"reschedule": reschedule, "cancel": cancel},
               "pending": made["pending"], "public_id": acme["tenant"]["publicId"]}


@pytest.fixture
def watched(stack):
    """A fresh browser context whose every page is watched for violations; the test ends with
    none."""
    context = stack["browser"].new_context(viewport={"width": 1280, "height": 900})
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=stack["base"])
    violations = watch_csp(context)
    page = context.new_page()
    yield page, violations
    context.close()


class Visit:
    """Opens pages of the service, checks each carries the policy and, once its scripts have
    run, that nothing violated it."""

    def __init__(self, page, violations: list[str], base: str):
        self.page, self.violations, self.base = page, violations, base

    def __call__(self, path: str, title: str | None = None):
        response = self.page.goto(self.base + path)
        assert response.ok, path
        assert "default-src 'self'" in response.headers["content-security-policy"], path
        if title:
            assert title in self.page.title(), (path, self.page.title())
        self.clean(path)
        return self.page

    def clean(self, where: str) -> None:
        self.page.wait_for_load_state("networkidle")
        self.page.evaluate("1")  # a round trip: reports sent before it have arrived
        assert self.violations == [], where


def _sign_in(page, base: str) -> None:
    page.goto(base + "/dashboard/login/")
    page.fill("#id_username", "mia@acme.test")
    page.fill("#id_password", PASSWORD)
    page.get_by_role("button", name="Sign in", exact=True).click()
    page.wait_for_url(base + "/dashboard/")


def test_the_watcher_sees_a_violation(stack, watched):
    """Without this, an empty list could mean a blind listener."""
    page, violations = watched
    page.goto(stack["base"] + "/")
    page.evaluate("""() => {
        const s = document.createElement("script"); s.textContent = "window.ran = 1";
        document.head.appendChild(s);
        const st = document.createElement("style"); st.textContent = "body { color: red }";
        document.head.appendChild(st);
    }""")
    page.evaluate("1")
    page.wait_for_function("() => true")
    assert page.evaluate("window.ran") is None
    assert any("script-src-elem" in v for v in violations), violations
    assert any("style-src-elem" in v for v in violations), violations


def test_every_dashboard_page_runs_without_a_violation(stack, watched):
    page, violations = watched
    base = stack["base"]
    visit = Visit(page, violations, base)
    visit("/dashboard/login/", "Sign in")
    _sign_in(page, base)
    visit.clean("sign-in")
    for path, title in [("/dashboard/", "Home"), ("/dashboard/leads/", "Leads"),
                        (f"/dashboard/leads/{stack['lead']}/", "Sam Lee"),
                        ("/dashboard/conversations/", "Conversations"),
                        ("/dashboard/webhooks/", "Webhooks"), ("/dashboard/settings/", "Settings"),
                        ("/dashboard/calendar/", "calendar"), ("/dashboard/analytics/", "Analytics"),
                        ("/dashboard/profile/", "profile"), ("/dashboard/team/", "Team"),
                        ("/dashboard/agent-tests/", "Agent tests")]:
        visit(path, title)
    # The lead's page styles its bars (style attributes) and its history from the style sheet.
    visit(f"/dashboard/leads/{stack['lead']}/")
    assert page.locator(".timeline > li").count() > 0
    assert page.locator(".timeline > li").first.evaluate(
        "e => getComputedStyle(e).borderLeftStyle") == "solid"
    assert page.locator(".score .bar i").first.evaluate("e => e.style.width") != ""
    visit("/dashboard/analytics/")
    assert page.locator("svg.chart").count() == 1
    assert page.locator(".funnel .fill").first.evaluate("e => getComputedStyle(e).display") == "block"


def test_a_live_message_arrives_on_the_conversation_page(stack, watched):
    page, violations = watched
    base, carl = stack["base"], stack["carl"]
    visit = Visit(page, violations, base)
    _sign_in(page, base)
    visit(f"/dashboard/conversations/{uuid.UUID(hex=carl[5:])}/", "Conversation")
    assert "You have this conversation" in page.content()
    # The replies' Markdown is rendered (markdown.js with the widget's renderer).
    assert page.locator("[data-markdown][data-rendered]").count() > 0
    # The visitor writes while the page is open: the live transcript (an EventSource) shows it.
    _chat(base, stack["key"], "Are you there? I have **questions**.", "carl", carl)
    page.locator(".bubble.user", has_text="Are you there?").wait_for(timeout=10000)
    visit.clean("the live transcript")
    page.fill("#id_content", "Hi Carl, Mia here. **How can I help?**")
    page.get_by_role("button", name="Send to the visitor").click()
    page.locator(".bubble.human strong", has_text="How can I help?").wait_for()
    visit.clean("a reply sent")
    screenshot(page, "dashboard-conversation-csp.png", full_page=True)


def test_a_processing_document_refreshes_itself(stack, watched):
    page, violations = watched
    base, pending = stack["base"], stack["pending"]
    visit = Visit(page, violations, base)
    _sign_in(page, base)
    visit("/dashboard/knowledge/", "Knowledge base")
    row = f"#documents tr[data-document='{pending}']"
    assert page.locator(row).get_attribute("data-status") == "processing"
    assert page.locator("script[src='/static/dashboard/knowledge.js']").count() == 1
    manage("shell", "-c", "from knowledge.services import document_index; "
           f"document_index(document_id={pending!r})", env=stack["env"])
    # No reload: the page's script fetches it again and swaps the row.
    page.locator(f"{row}[data-status='ready']").wait_for(timeout=15000)
    visit.clean("the knowledge base refreshed")


def test_keys_copy_and_confirm(stack, watched):
    page, violations = watched
    base = stack["base"]
    visit = Visit(page, violations, base)
    _sign_in(page, base)
    visit("/dashboard/keys/", "API keys")
    page.fill("#id_name", "CSP key")
    page.get_by_role("button", name="Generate").click()
    page.wait_for_url(base + "/dashboard/keys/*/created/")
    visit.clean("a key created")
    page.get_by_role("button", name="Copy").click()
    page.get_by_role("button", name="Copied").wait_for()
    assert page.evaluate("navigator.clipboard.readText()") == page.locator("#new-key").inner_text()
    page.get_by_role("link", name="Done").click()
    row = page.locator("tr", has_text="CSP key")
    page.once("dialog", lambda dialog: dialog.dismiss())
    row.get_by_role("button", name="Revoke").click()
    assert page.url == base + "/dashboard/keys/"  # declined: nothing sent
    page.once("dialog", lambda dialog: dialog.accept())
    row.get_by_role("button", name="Revoke").click()
    page.wait_for_load_state()
    assert "revoked" in page.locator(".messages").inner_text().lower()
    visit.clean("a key revoked")


def _open_widget_and_chat(page, open_it) -> None:
    page.wait_for_function("() => window.ServiceWidget && document.querySelector('[data-service-widget]')")
    open_it()
    shadow = "document.querySelector('[data-service-widget]').shadowRoot"
    # Its styles apply (a constructed style sheet, which the policy does not govern).
    assert page.evaluate(f"getComputedStyle({shadow}.querySelector('.launcher')).position") == "fixed"
    assert page.evaluate(f"getComputedStyle({shadow}.querySelector('.panel')).display") == "flex"
    page.locator("#sw-input").fill("What does it cost?")
    page.locator("#sw-input").press("Enter")
    page.wait_for_function(
        f"() => {shadow}.querySelector('.log').getAttribute('aria-busy') === 'false'"
        f" && {shadow}.querySelectorAll('.msg.bot:not(.greeting)').length > 0", timeout=15000)


def test_the_widget_preview_opens_and_chats(stack, watched):
    page, violations = watched
    visit = Visit(page, violations, stack["base"])
    _sign_in(page, stack["base"])
    visit("/dashboard/settings/widget/preview/", "Widget preview")
    _open_widget_and_chat(page, lambda: page.get_by_role("button", name="Open the widget").click())
    visit.clean("the widget preview, chatting")


def test_the_demo_page_and_a_meeting_link_page(stack, watched):
    page, violations = watched
    visit = Visit(page, violations, stack["base"])
    visit(f"/demo/?tenant={stack['public_id']}", "widget demo")
    _open_widget_and_chat(page, lambda: page.locator("button.launcher").click())
    visit.clean("the demo page, chatting")
    screenshot(page, "demo-widget-csp.png")
    visit(f"/meetings/{stack['links']['reschedule']}/", "Your meeting")
    assert page.locator("input[type=radio][name=slot]").count() > 0
    visit(f"/meetings/{stack['links']['cancel']}/", "Your meeting")
    page.get_by_role("button", name="Yes, cancel the meeting").click()
    page.get_by_role("heading", name="Your meeting is cancelled").wait_for()
    visit.clean("a meeting cancelled")
    visit("/", "Sales Agent Service")
    visit("/docs/errors")


def test_the_admin_signs_in_lists_and_edits(stack, watched):
    page, violations = watched
    base = stack["base"]
    visit = Visit(page, violations, base)
    visit("/admin/login/?next=/admin/", "Log in")
    page.fill("#id_username", "op")
    page.fill("#id_password", PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(base + "/admin/")
    visit.clean("the admin's index")
    visit("/admin/leads/lead/", "Select lead")
    page.fill("#searchbar", "sam")
    page.keyboard.press("Enter")
    page.wait_for_url("**/admin/leads/lead/?q=sam")
    assert page.locator("#result_list tbody tr").count() == 1
    visit.clean("a search")
    visit(f"/admin/leads/lead/{stack['lead']}/change/", "lead")
    visit("/admin/tenants/tenant/", "Select tenant")
    page.locator("#result_list tbody a").first.click()
    page.wait_for_load_state()
    assert page.locator("form#tenant_form").count() == 1
    visit.clean("a tenant's change form")
    screenshot(page, "admin-csp.png", full_page=True)
    visit("/admin/tenants/user/add/", "Add user")
