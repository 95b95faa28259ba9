"""Proactive messages in a real browser (headless Chromium, desktop and phone sizes) against a
real daphne, on a customer's page of another origin (docs/widget.md, "Proactive messages"):
each kind of condition (a page's path as a prefix and as a pattern, a time on the page, a
returning or first-time visitor), at most once per tab, never while the visitor types or after
they closed the chat, and the visitor's reply that stores the message in the transcript, where
the API and the counts see it. On a desktop the panel opens without taking the focus; on a
phone the message waits in a bubble beside the launcher."""

from __future__ import annotations

import json
import uuid

import httpx
import pytest

from tests.browser import customer_site, screenshot
from tests.live import manage

pytestmark = pytest.mark.live  # daphne and Chromium

DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}
PRICING = "Questions about **pricing**? I can help you pick a plan."
SETUP_HELP = "Stuck on setup? Ask me."
SLOW = "Still looking? I can answer in a minute."
BACK = "Welcome back! Pick up where you left off?"
FIRST = "First time here? Ask me anything."

SETUP = """
import json
from conversations.services import proactive_message_create
from tenants.models import Tenant
from tenants.services import tenant_set_allowed_origins
t = Tenant.objects.get(pk={tenant!r})
tenant_set_allowed_origins(tenant=t, origins=[{origin!r}])
made = [proactive_message_create(tenant=t, **fields) for fields in {rules!r}]
print(json.dumps({{m.message: m.pk.hex for m in made}}))
"""
RULES = [
    {"message": PRICING, "url_pattern": "/pricing", "priority": 10},
    {"message": SETUP_HELP, "url_pattern": "/docs/*/setup", "priority": 20},
    {"message": SLOW, "url_pattern": "/slow", "seconds_on_page": 2, "priority": 30},
    {"message": BACK, "url_pattern": "/hello", "returning": "yes", "priority": 40},
    {"message": FIRST, "url_pattern": "/hello", "returning": "no", "priority": 50},
]
WATCH = """
window.__proactiveAt = null;
const watch = setInterval(() => {
  const root = document.querySelector('[data-service-widget]')?.shadowRoot;
  if (root && root.querySelector('.msg.bot:not(.greeting)')) {
    window.__proactiveAt = performance.now();
    clearInterval(watch);
  }
}, 20);
"""
COUNTS = """
import json
from conversations.models import ProactiveMessage
print(json.dumps({{p.message: [p.shown_count, p.replied_count]
                  for p in ProactiveMessage.objects.filter(tenant_id={tenant!r})}}))
"""


def last_json(output: str):
    """The JSON a shell command printed last (the shell prints its own lines before)."""
    return json.loads(output.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    with customer_site(tmp_path_factory.mktemp("var"), SETUP, rules=RULES) as stack:
        yield {**stack, "ids": last_json(stack["output"]), "keys": stack["created"]["keys"]}


@pytest.fixture(params=["desktop", "phone"])
def size(request):
    return request.param


@pytest.fixture
def context(stack, size):
    context = stack["browser"].new_context(viewport=DESKTOP if size == "desktop" else PHONE,
                                           is_mobile=size == "phone", has_touch=size == "phone")
    yield context
    context.close()


def visit(context, stack, path):
    page = context.new_page()
    page.goto(stack["site"].origin + path)
    page.wait_for_function("() => window.ServiceWidget && document.querySelector('[data-service-widget]')")
    return page


def shown(page, text, size, timeout=5000):
    """Waits for the proactive message where the size shows it: the open panel on a desktop,
    the bubble beside the launcher on a phone (then opened by a tap, as a visitor would)."""
    if size == "desktop":
        page.locator("#sw-panel").wait_for(state="visible", timeout=timeout)
        # Opened by itself, the panel left the focus where the visitor had it.
        assert page.evaluate("document.activeElement === document.body")
    else:
        bubble = page.locator(".tease")
        bubble.wait_for(state="visible", timeout=timeout)
        assert text.replace("**", "") in bubble.inner_text()  # as text, without its Markdown
        assert page.locator("#sw-panel").is_hidden()
        assert page.locator(".badge").inner_text() == "1"
        page.locator(".tease button").first.click()
        page.locator("#sw-panel").wait_for(state="visible")
    bots = page.locator(".msg.bot:not(.greeting) > div").all_inner_texts()
    assert bots[-1] == text.replace("**", "")
    assert page.locator(".msg.greeting").is_hidden()


def nothing_shown(page, wait_ms=1500):
    page.wait_for_timeout(wait_ms)
    assert page.locator("#sw-panel").is_hidden() and page.locator(".tease").is_hidden()
    assert page.locator(".msg.bot:not(.greeting)").count() == 0


def test_a_page_prefix_shows_its_message_once_per_tab(stack, context, size):
    page = visit(context, stack, "/pricing?plan=team")
    shown(page, PRICING, size)
    if size == "desktop":
        screenshot(page, "widget-proactive-desktop.png")
    # Closed, then the page again in the same tab: neither this message nor another.
    page.locator(".close").click()
    page.reload()
    page.wait_for_function("() => window.ServiceWidget")
    nothing_shown(page)
    # A page the pattern does not cover, in a new tab: nothing.
    nothing_shown(visit(context, stack, "/about"))


def test_a_pattern_with_a_star_matches_the_whole_path(stack, context, size):
    nothing_shown(visit(context, stack, "/docs/v2/setup-guide"))
    page = visit(context, stack, "/docs/v2/setup")
    shown(page, SETUP_HELP, size)


def test_a_time_on_the_page_waits_and_never_interrupts_typing(stack, context, size):
    # When the message first shows, in the page's own clock (however slow the machine is).
    context.add_init_script(WATCH)
    page = visit(context, stack, "/slow")
    shown(page, SLOW, size)
    assert page.evaluate("window.__proactiveAt") >= 2000  # not before its 2 s
    # A visitor typing in the site's own field when the time comes: nothing until they leave it.
    typing = visit(context, stack, "/slow")
    typing.evaluate("() => { const i = document.createElement('input'); i.id = 'q';"
                    " document.body.prepend(i); }")
    typing.locator("#q").focus()
    typing.locator("#q").type("looking for the pricing of", delay=20)
    # (A new tab: a new browser session for the widget, so the message may show again.)
    typing.wait_for_timeout(2500)
    assert typing.locator(".msg.bot:not(.greeting)").count() == 0
    typing.locator("#q").evaluate("i => i.blur()")
    typing.locator(".msg.bot:not(.greeting)").wait_for(state="attached", timeout=5000)


def test_a_visitor_who_closed_the_chat_gets_no_message(stack, context, size):
    page = visit(context, stack, "/about")
    page.locator("button.launcher").click()
    page.locator("#sw-panel").wait_for(state="visible")
    page.locator(".close").click()
    # Then a page with a message, in the same tab: not after a close.
    page.goto(stack["site"].origin + "/pricing")
    page.wait_for_function("() => window.ServiceWidget")
    nothing_shown(page, 2000)


def test_returning_and_first_time_visitors_get_their_own_message(stack, context, size):
    first = visit(context, stack, "/hello")
    shown(first, FIRST, size)
    first.close()
    # A later visit (a new tab: a new session; the visitor id is kept in localStorage).
    again = visit(context, stack, "/hello")
    shown(again, BACK, size)
    # A browser without that id is a first-time visitor again.
    other = context.browser.new_context(viewport=PHONE if size == "phone" else DESKTOP)
    try:
        page = visit(other, stack, "/hello")
        shown(page, FIRST, size)
    finally:
        other.close()


def test_the_visitors_reply_puts_the_message_in_the_transcript(stack, context, size):
    page = visit(context, stack, "/pricing")
    if size == "phone":
        page.locator(".tease").wait_for(state="visible", timeout=5000)
        screenshot(page, "widget-proactive-phone.png")
    shown(page, PRICING, size)
    page.locator("#sw-input").fill("Yes: how much for 12 seats?")
    page.locator("#sw-input").press("Enter")
    page.wait_for_function(
        "() => document.querySelector('[data-service-widget]').shadowRoot"
        ".querySelector('.log').getAttribute('aria-busy') === 'false'"
        " && window.ServiceWidget.sessionId", timeout=60000)
    sid = page.evaluate("window.ServiceWidget.sessionId")
    r = httpx.get(f"{stack['base']}/api/v1/conversations/conv_{uuid.UUID(sid).hex}",
                  headers={"Authorization": f"Bearer {stack['keys']['live']['read']}"},
                  timeout=10)
    assert r.status_code == 200, r.text
    messages = r.json()["messages"]
    assert [(m["role"], m["content"], m.get("proactive")) for m in messages[:2]] == [
        ("assistant", PRICING, True), ("user", "Yes: how much for 12 seats?", None)]
    assert messages[2]["role"] == "assistant" and "proactive" not in messages[2]
    counts = last_json(manage("shell", "-c", COUNTS.format(tenant=stack["tenant"]["id"]),
                              env=stack["env"]))
    shown_count, replied = counts[PRICING]
    assert shown_count >= 1 and replied >= 1
