"""The inbox in Chromium against a real daphne process (docs/dashboard.md, "Inbox"), at desktop
and phone sizes: a visitor on a customer's site asks for a person; the rep sees the conversation
unread, the visitor panel, and each one's typing on the other's screen; the rep inserts a canned
reply with "/" and the keyboard, tags the conversation, and writes a note whose @mention
reaches a teammate's open page as a toast; a search marks the words it found. Under the
Content-Security-Policy, with no violation. Screenshots with ``SCREENSHOTS=1``."""

from __future__ import annotations

import json

import pytest

from tests.browser import HostSite, browser, screenshot, watch_csp
from tests.live import daphne, manage

from .test_browser import EMBEDDED

pytestmark = pytest.mark.live  # daphne and Chromium

PASSWORD = "inbox-browser-password"
DESKTOP = {"viewport": {"width": 1280, "height": 900}}
# The visitor's browser as a person's (headless Chromium says "HeadlessChrome": a robot's).
VISITOR_AGENT = ("Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
                 "Chrome/126.0.0.0 Safari/537.36")
PHONE = {"viewport": {"width": 390, "height": 844}, "device_scale_factor": 2, "is_mobile": True,
         "has_touch": True}

SETUP = """
from django.utils import timezone
from conversations.services import canned_reply_create, tag_create
from conversations.services.lifecycle import conversation_start
from conversations.services.messages import append_message
from django.db import transaction
from tenants.models import Tenant
from tenants.services import tenant_set_allowed_origins, user_create
tenant = Tenant.objects.get(pk={tenant!r})
tenant_set_allowed_origins(tenant=tenant, origins=[{origin!r}])
user_create(tenant=tenant, email="mia@acme.test", first_name="Mia", last_name="Manager",
            role="manager", password={password!r})
ray = user_create(tenant=tenant, email="ray@acme.test", first_name="Ray", last_name="Rep",
                  password={password!r})
# Ray works every hour of every day: his open page alone makes him the one handoffs go to.
ray.working_hours = {{"days": list(range(7)), "start_hour": 0, "end_hour": 24}}
ray.save()
tag_create(tenant=tenant, name="VIP", colour="#dc2626")
tag_create(tenant=tenant, name="Pricing", colour="#2563eb")
canned_reply_create(tenant=tenant, shortcut="intro",
                    content="Hi {{first_name}}, I'm {{agent_name}} from Acme. Happy to help!")
canned_reply_create(tenant=tenant, shortcut="demo",
                    content="You can book a demo here: {{meeting_link}}")
# Earlier chats that a search finds.
for visitor, words in [("v-olga", "Is the enterprise pricing per seat?"),
                       ("v-ben", "We compared your pricing with HubSpot's.")]:
    with transaction.atomic():
        c = conversation_start(tenant=tenant, livemode=True, visitor_id=visitor,
                               channel="web_chat", metadata={{}}, language="en",
                               now=timezone.now())
        append_message(c, role="user", content=words, now=timezone.now())
        append_message(c, role="assistant", content="Our pricing page has every plan.",
                       now=timezone.now())
        c.save()
"""


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    env = {**EMBEDDED, "VAR_DIR": str(tmp_path_factory.mktemp("inbox"))}
    manage("migrate", "--noinput", env=env)
    acme = json.loads(manage("create_tenant", "Acme", "--json", env=env))
    with daphne(env) as base:
        site = HostSite(base, acme["tenant"]["publicId"])
        manage("shell", "-c", SETUP.format(tenant=acme["tenant"]["id"], origin=site.origin,
                                            password=PASSWORD), env=env)
        with browser() as chromium:
            yield {"base": base, "site": site, "browser": chromium}
        site.close()


def _sign_in(stack, email: str, device: dict):
    context = stack["browser"].new_context(**device)
    violations = watch_csp(context)
    page = context.new_page()
    page.goto(stack["base"] + "/dashboard/login/")
    page.fill("#id_username", email)
    page.fill("#id_password", PASSWORD)
    page.get_by_role("button", name="Sign in", exact=True).click()
    page.wait_for_url(stack["base"] + "/dashboard/")
    return context, page, violations


def _visitor(stack):
    context = stack["browser"].new_context(**DESKTOP, timezone_id="Europe/Berlin",
                                           user_agent=VISITOR_AGENT)
    page = context.new_page()
    page.goto(stack["site"].origin + "/")
    page.wait_for_function("() => window.ServiceWidget && document.querySelector('[data-service-widget]')")
    page.locator("button.launcher").click()
    page.locator("#sw-input").wait_for()
    return context, page


def _say(visitor, text: str) -> None:
    visitor.locator("#sw-input").fill(text)
    visitor.locator("#sw-input").press("Enter")
    visitor.wait_for_function(
        "() => document.querySelector('[data-service-widget]').shadowRoot"
        ".querySelector('.log').getAttribute('aria-busy') === 'false'", timeout=15000)


def _no_sideways_scroll(page) -> None:
    width, inner = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    assert width <= inner, (width, inner)


def test_a_rep_works_a_handoff_with_the_inbox(stack):
    base = stack["base"]
    ray_context, ray, ray_violations = _sign_in(stack, "ray@acme.test", DESKTOP)
    visitor_context, visitor = _visitor(stack)
    try:
        _say(visitor, "Hi, I'm Carl from Initech, carl@initech.test")
        _say(visitor, "I want to talk to a person about your pricing")
        visitor.locator(".notice", has_text="Ray").first.wait_for(timeout=10000)
        session = visitor.evaluate("ServiceWidget.sessionId")

        # The list: Ray's handoff, unread.
        ray.goto(base + "/dashboard/conversations/")
        row = ray.locator("tr", has=ray.locator(f"a[href='/dashboard/conversations/{session}/']"))
        assert "unread" in row.locator(".unread-count").inner_text()
        row.locator("a").first.click()
        ray.wait_for_url(f"{base}/dashboard/conversations/{session}/")
        panel = ray.locator("#visitor")
        facts = panel.inner_text()
        assert "Europe/Berlin" in facts and "Desktop · Linux" in facts and "Chrome 126" in facts

        # Typing, both ways.
        box = ray.locator("#id_content")
        box.press_sequentially("Let me check")
        visitor.locator(".notice", has_text="Ray is typing…").wait_for(timeout=5000)
        screenshot(visitor, "widget-typing.png")
        visitor.locator("#sw-input").press_sequentially("thanks")
        ray.locator("#typing", has_text="The visitor is typing…").wait_for(timeout=5000)

        # "/" and a shortcut: the canned reply, filled, by the keyboard.
        box.fill("")
        box.press_sequentially("/in")
        option = ray.locator(".suggest-option", has_text="/intro")
        option.wait_for()
        assert ray.locator(".suggest-option").count() == 1  # /demo does not start with "in"
        screenshot(ray, "dashboard-canned-reply.png")
        box.press("Enter")
        assert box.input_value() == "Hi Carl, I'm Ray from Acme. Happy to help!"
        assert ray.locator("#suggest-1").is_hidden()
        ray.get_by_role("button", name="Send to the visitor").click()
        visitor.locator(".msg.human", has_text="Happy to help!").wait_for(timeout=5000)
        assert visitor.locator(".notice", has_text="is typing").count() == 0  # gone with it

        # A tag.
        ray.select_option("#tag-add", label="Pricing")
        ray.get_by_role("button", name="Add", exact=True).click()
        assert ray.locator("#tags .tag", has_text="Pricing").is_visible()

        # A note mentioning Mia, whose open page shows it at once.
        mia_context, mia, mia_violations = _sign_in(stack, "mia@acme.test", DESKTOP)
        note = ray.locator("#note-content")
        note.press_sequentially("@m")
        ray.locator(".suggest-option", has_text="@mia").wait_for()
        note.press("Enter")
        note.press_sequentially("can you confirm the enterprise discount for Carl?")
        assert note.input_value() == "@mia can you confirm the enterprise discount for Carl?"
        ray.get_by_role("button", name="Add note").click()
        assert ray.locator(".note-list .mention", has_text="@mia").is_visible()
        toast = mia.locator(".toast", has_text="Ray Rep mentioned you")
        toast.wait_for(timeout=5000)
        assert "enterprise discount" in toast.inner_text()
        screenshot(mia, "dashboard-mention-toast.png")
        screenshot(ray, "dashboard-inbox-conversation.png", full_page=True)
        toast.get_by_role("link", name="Open the note").click()
        mia.locator(".note-list li:target").wait_for()
        assert mia_violations == []
        mia_context.close()

        # Read now: the list has no marker for it; a search marks what it found.
        ray.goto(base + "/dashboard/conversations/?view=all")
        row = ray.locator("tr", has=ray.locator(f"a[href='/dashboard/conversations/{session}/']"))
        assert row.locator(".unread-count").count() == 0
        ray.fill("#q", "pricing")
        ray.get_by_role("button", name="Search").click()
        marks = ray.locator("#search-results mark")
        assert marks.count() >= 4 and set(marks.all_inner_texts()) == {"pricing"}
        assert ray.locator("#search-results li").first.locator("a").get_attribute(
            "href").startswith(f"/dashboard/conversations/{session}/#m-")
        screenshot(ray, "dashboard-inbox-search.png", full_page=True)
        assert ray_violations == []
    finally:
        visitor_context.close()
        ray_context.close()


def test_the_inbox_on_a_phone(stack):
    base = stack["base"]
    context, page, violations = _sign_in(stack, "ray@acme.test", PHONE)
    try:
        page.goto(base + "/dashboard/conversations/?view=all&q=pricing")
        page.locator("#search-results mark").first.wait_for()
        _no_sideways_scroll(page)
        screenshot(page, "dashboard-phone-inbox-search.png", full_page=True)
        page.locator("#search-results li a").first.click()
        page.locator("#visitor").wait_for()
        _no_sideways_scroll(page)
        note = page.locator("#note-content")
        note.tap()
        note.press_sequentially("@")
        page.locator(".suggest-option").first.wait_for()
        assert page.locator(".suggest-option").count() == 2  # Mia and Ray
        page.keyboard.press("ArrowDown")
        assert page.locator(".suggest-option[aria-selected='true']").inner_text().startswith("@ray")
        page.keyboard.press("Escape")
        assert page.locator(".suggest[aria-label='Teammates']").is_hidden()
        assert note.input_value() == "@"
        screenshot(page, "dashboard-phone-inbox-conversation.png", full_page=True)
        assert violations == []
    finally:
        context.close()
