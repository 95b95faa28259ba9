"""The widget in a real browser (headless Chromium), on a customer's page served from another
origin, against a real daphne process: it opens, streams a reply, captures a lead, announces
qualification and booking on the page, renders hostile text as text and plain URLs as links, keeps
its session and its whole history across a reload, switches tenants, removes itself, and shows a
rep's reply at once (human takeover). The renderer itself: tests/widget/test_markdown.py."""

from __future__ import annotations

import json
import time

import httpx
import pytest

from tests.browser import HostSite, browser, screenshot
from tests.fakes.openai_server import FakeOpenAI
from tests.live import daphne, manage

EMBEDDED = {"DATABASE_URL": None, "REDIS_URL": None, "DEBUG": "1", "SECRET_KEY": None,
            "ALLOWED_HOSTS": None, "V1_REQUIRE_HTTPS": "0"}
REP_PASSWORD = "correct-horse-battery"
PRICING = "https://example.com/pricing"

pytestmark = pytest.mark.live  # daphne, a fake OpenAI server and Chromium

SETUP = """
import json
from tenants.models import Tenant
from tenants.services import tenant_set_allowed_origins, user_create
from widget.services import widget_settings_update
a = Tenant.objects.get(pk={a!r}); b = Tenant.objects.get(pk={b!r})
tenant_set_allowed_origins(tenant=a, origins=[{origin!r}])
tenant_set_allowed_origins(tenant=b, origins=[{origin!r}, {origin_b!r}])
widget_settings_update(tenant=a, title="Acme Sales", greeting="Hi! Ask me anything about **Acme**.",
                       position="bottom-right", primary_color="#4f46e5", text_color="#ffffff")
widget_settings_update(tenant=b, title="Beta Support", greeting="Welcome to Beta.",
                       position="bottom-left", primary_color="#047857", text_color="#ffffff")
rita = user_create(tenant=a, email="rita@acme.test", first_name="Rita", last_name="Rep",
                   role="manager", password={password!r})
# Rita is there whenever the test runs: online, working every hour (docs/dashboard.md).
rita.status, rita.working_hours = "online", {{"days": list(range(7)), "start_hour": 0,
                                              "end_hour": 24}}
rita.save()
"""


@pytest.fixture(scope="module")
def fake():
    server = FakeOpenAI()
    yield server
    server.close()


@pytest.fixture(scope="module")
def stack(fake, tmp_path_factory):
    env = {**EMBEDDED, "VAR_DIR": str(tmp_path_factory.mktemp("var")), "AGENT_MAX_RETRIES": "0"}
    manage("migrate", "--noinput", env=env)
    a = json.loads(manage("create_tenant", "Acme", "--json", env=env))
    b = json.loads(manage("create_tenant", "Beta", "--agent", "openai", "--json", env=env))
    manage("configure_agent", b["tenant"]["id"], "--api-key", "sk-fake", "--base-url",
           fake.base_url, "--model", "fake-model", env=env)
    with daphne(env) as base:
        site = HostSite(base, a["tenant"]["publicId"])
        site_b = HostSite(base, b["tenant"]["publicId"])  # B's widget, answered by the fake
        elsewhere = HostSite(base, a["tenant"]["publicId"])  # an origin nobody allowed
        manage("shell", "-c", SETUP.format(a=a["tenant"]["id"], b=b["tenant"]["id"],
                                            origin=site.origin, origin_b=site_b.origin,
                                            password=REP_PASSWORD), env=env)
        with browser() as chromium:
            yield {"base": base, "site": site, "site_b": site_b, "elsewhere": elsewhere, "a": a,
                   "b": b, "browser": chromium, "env": env}
        site.close()
        site_b.close()
        elsewhere.close()


@pytest.fixture
def page(stack):
    context = stack["browser"].new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    yield page
    context.close()


def open_widget(page, url):
    page.goto(url)
    page.wait_for_function("() => window.ServiceWidget && document.querySelector('[data-service-widget]')")
    page.locator("button.launcher").click()
    page.locator("#sw-input").wait_for()
    return page


def send(page, text):
    page.locator("#sw-input").fill(text)
    page.locator("#sw-input").press("Enter")


def wait_idle(page, timeout=15000):
    page.wait_for_function(
        "() => { const r = document.querySelector('[data-service-widget]')?.shadowRoot;"
        " return r?.querySelector('.log')?.getAttribute('aria-busy') === 'false'; }",
        timeout=timeout)


def bot_texts(page):
    return page.locator(".msg.bot:not(.greeting)").all_inner_texts()


def said(page, role):
    """The text of each message of ``role`` (user, bot), without the greeting or the speaker."""
    return page.locator(f".msg.{role}:not(.greeting) > div").all_inner_texts()


def hrefs(page):
    return page.evaluate("Array.from(document.querySelector('[data-service-widget]').shadowRoot"
                         ".querySelectorAll('.msg:not(.greeting) a'), (a) => a.getAttribute('href'))")


def v1(stack, path, key=None):
    key = key or stack["a"]["keys"]["live"]["read"]
    return httpx.get(stack["base"] + path, headers={"Authorization": f"Bearer {key}"}, timeout=10)


def test_widget_script_is_small_cached_and_javascript(stack):
    r = httpx.get(stack["base"] + "/widget.js", headers={"Accept-Encoding": "gzip"})
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/javascript")
    assert r.headers["content-encoding"] == "gzip" and "max-age" in r.headers["cache-control"]
    assert int(r.headers["content-length"]) < 12_000  # gzipped: docs/widget.md
    again = httpx.get(stack["base"] + "/widget.js", headers={"If-None-Match": r.headers["etag"]})
    assert again.status_code == 304


def test_the_widget_chats_streams_captures_a_lead_and_announces_events(stack, page):
    url = stack["site"].origin + "/"
    requests: list[str] = []
    page.on("request", lambda req: requests.append(req.url))
    open_widget(page, url)
    panel = page.locator("#sw-panel")
    assert panel.get_attribute("role") == "dialog"
    assert page.locator("#sw-title").inner_text() == "Acme Sales"
    assert page.locator(".greeting strong").inner_text() == "Acme"  # Markdown, as DOM nodes
    screenshot(page, "widget-open.png")

    send(page, "Hi, I'm Ann, CEO at Hooli. ann@hooli.com")
    wait_idle(page)
    assert page.locator(".msg.user").last.inner_text().endswith("ann@hooli.com")
    assert "Ann" in bot_texts(page)[-1]
    session_id = page.evaluate("ServiceWidget.sessionId")
    visitor_id = page.evaluate("ServiceWidget.visitorId")
    assert len(session_id) == 36 and visitor_id.startswith("v_")

    send(page, "We need it this month, budget approved")
    wait_idle(page)
    events = page.evaluate("window.__events")
    assert [e["type"] for e in events] == ["service:lead.qualified"]
    detail = events[0]["detail"]
    assert detail["lead"]["email"] == "ann@hooli.com" and detail["lead"]["status"] == "qualified"
    assert detail["sessionId"] == session_id and detail["visitorId"] == visitor_id
    assert detail["tenant"] == stack["a"]["tenant"]["publicId"]

    send(page, "Book a demo")
    wait_idle(page)
    slot = page.locator(".actions button").first
    label = slot.inner_text()
    slot.click()
    page.wait_for_function("() => window.__events.length === 2", timeout=15000)
    booked = page.evaluate("window.__events[1]")
    assert booked["type"] == "service:meeting.booked"
    assert booked["detail"]["meeting"]["label"] == label
    assert len(booked["detail"]["meeting"]["id"]) == 36  # the meeting's UUID
    assert booked["detail"]["meeting"]["status"] == "scheduled"
    assert booked["detail"]["lead"]["status"] == "booked"
    wait_idle(page)
    screenshot(page, "widget-conversation.png")

    # The lead is there, through the API.
    found = v1(stack, "/api/v1/leads/search?q=ann@hooli").json()["data"]
    assert [lead["email"] for lead in found] == ["ann@hooli.com"]
    assert found[0]["status"] == "qualified"
    # The widget talked to the service only: no third-party request.
    assert all(u.startswith((stack["site"].origin, stack["base"])) for u in requests)

    # A reload continues the conversation: same session, history shown again.
    page.reload()
    page.wait_for_function("() => window.ServiceWidget")
    page.locator("button.launcher").click()
    page.wait_for_function(
        "() => document.querySelector('[data-service-widget]')?.shadowRoot"
        ".querySelectorAll('.msg.user').length >= 4", timeout=10000)
    assert page.evaluate("ServiceWidget.sessionId") == session_id
    assert page.locator(".msg.user").first.inner_text().endswith("ann@hooli.com")


def test_deltas_render_as_they_arrive(stack, page, fake):
    fake.reset()
    fake.analysis = {"intent": "product_question", "confidence": 0.8}
    fake.reply = "Our **widget** installs with one script tag and answers visitors in real time."
    fake.chunk_size, fake.chunk_delay = 6, 0.2
    site = HostSite(stack["base"], stack["b"]["tenant"]["publicId"])
    try:
        # Tenant B allows the first site's origin only: serve B's page from there instead.
        page.goto(stack["site"].origin + "/")
        page.wait_for_function("() => window.ServiceWidget")
        page.evaluate(f"ServiceWidget.setTenant({stack['b']['tenant']['publicId']!r})")
        page.wait_for_function("() => document.querySelector('[data-service-widget]')?.shadowRoot"
                               "?.querySelector('#sw-title')?.textContent === 'Beta Support'")
        page.evaluate("ServiceWidget.open()")
        send(page, "How does the widget work?")
        seen = set()
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            texts = bot_texts(page)
            if texts:
                seen.add(texts[-1])
            if texts and "real time." in texts[-1]:
                break
            time.sleep(0.05)
        partial = [t for t in seen if t and "real time." not in t]
        assert len(partial) >= 3, f"the reply did not appear progressively: {seen}"
        assert page.locator(".msg.bot strong").last.inner_text() == "widget"
    finally:
        site.close()
        fake.reset()


def test_hostile_text_renders_as_text(stack, page, fake):
    fake.reset()
    # No digits: the reply guard would hold back figures nothing supports (docs/agent.md).
    fake.reply = ("<img src=x onerror=\"window.__pwned='img'\"> <script>window.__pwned='tag'</script> "
                  "[click](javascript:window.__pwned='link') **bold** [docs](https://example.com/docs)")
    open_widget(page, stack["site"].origin + "/")
    page.evaluate(f"ServiceWidget.setTenant({stack['b']['tenant']['publicId']!r})")
    page.wait_for_function("() => document.querySelector('[data-service-widget]')?.shadowRoot"
                           "?.querySelector('#sw-title')?.textContent === 'Beta Support'")
    attack = '<img src=x onerror="window.__pwned=4"><script>window.__pwned=5</script>'
    send(page, attack)
    wait_idle(page)
    assert page.locator(".msg.user").last.inner_text().endswith(attack)
    reply = page.locator(".msg.bot").last
    assert "<img src=x" in reply.inner_text() and "<script>" in reply.inner_text()
    root_html = page.evaluate("document.querySelector('[data-service-widget]').shadowRoot.innerHTML")
    assert "<img" not in root_html and "<script" not in root_html.replace("&lt;script", "")
    hrefs = page.evaluate("Array.from(document.querySelector('[data-service-widget]')?.shadowRoot"
                          ".querySelectorAll('.msg a')).map(a => a.href)")
    assert hrefs == ["https://example.com/docs"]
    page.wait_for_load_state("networkidle")  # whatever the text could have loaded, it has
    assert page.evaluate("window.__pwned") is None
    fake.reset()


def test_a_bare_url_is_a_link_and_the_history_after_it_is_shown(stack, page, fake):
    # A plain URL in a reply used to overflow the renderer's stack: the reply never appeared,
    # and after a reload the history stopped before it.
    fake.reset()
    replies = [f"Our plans are at {PRICING}.", "Anything else? (see https://example.com/faq)",
               "Happy to help."]
    open_widget(page, stack["site_b"].origin + "/")
    for question, reply in zip(["Where are your prices?", "Thanks", "Bye"], replies, strict=True):
        fake.reply = reply
        send(page, question)
        wait_idle(page)
    assert said(page, "bot") == replies
    assert hrefs(page) == [PRICING, "https://example.com/faq"]

    page.reload()
    page.wait_for_function("() => window.ServiceWidget")
    page.locator("button.launcher").click()
    page.wait_for_function(
        "() => document.querySelector('[data-service-widget]')?.shadowRoot"
        ".querySelectorAll('.msg.bot:not(.greeting)').length >= 3", timeout=10000)
    assert said(page, "user") == ["Where are your prices?", "Thanks", "Bye"]
    assert said(page, "bot") == replies
    assert hrefs(page) == [PRICING, "https://example.com/faq"]
    link = page.locator(".msg.bot a").first
    assert (link.inner_text(), link.get_attribute("rel"), link.get_attribute("target")) == (
        PRICING, "noopener noreferrer nofollow", "_blank")

    page.evaluate(f"ServiceWidget.update({{greeting: 'Prices: {PRICING}'}})")  # the greeting too
    assert page.locator(".greeting a").get_attribute("href") == PRICING
    fake.reset()


def test_set_tenant_starts_fresh_and_destroy_removes_everything(stack, page):
    open_widget(page, stack["site"].origin + "/")
    send(page, "Hello there")
    wait_idle(page)
    first_session = page.evaluate("ServiceWidget.sessionId")
    assert first_session

    page.evaluate(f"ServiceWidget.setTenant({stack['b']['tenant']['publicId']!r})")
    page.wait_for_function("() => document.querySelector('[data-service-widget]')?.shadowRoot"
                           "?.querySelector('#sw-title')?.textContent === 'Beta Support'")
    assert page.evaluate("ServiceWidget.sessionId") is None
    assert page.locator(".msg.user").count() == 0
    assert page.locator(".greeting").inner_text() == "Welcome to Beta."
    assert "left" in page.locator(".w").get_attribute("class")

    page.evaluate("ServiceWidget.update({title: 'Talk to Beta', primaryColor: '#b91c1c', "
                  "position: 'bottom-right'})")
    assert page.locator("#sw-title").inner_text() == "Talk to Beta"
    colour = page.evaluate("getComputedStyle(document.querySelector('[data-service-widget]')"
                           ".shadowRoot.querySelector('header')).backgroundColor")
    assert colour == "rgb(185, 28, 28)"

    requests: list[str] = []
    page.on("request", lambda req: requests.append(req.url))
    page.evaluate("ServiceWidget.close(); ServiceWidget.destroy()")
    assert page.evaluate("document.querySelector('[data-service-widget]')") is None
    assert page.evaluate("typeof window.ServiceWidget") == "undefined"
    page.locator("#host-button").click()  # the page still works, nothing of the widget reacts
    page.keyboard.press("Escape")
    page.wait_for_load_state("networkidle")
    assert requests == []


def test_keyboard_only_use(stack, page):
    page.goto(stack["site"].origin + "/")
    page.wait_for_function("() => document.querySelector('[data-service-widget]')")
    page.locator("#host-button").focus()
    page.keyboard.press("Tab")  # from the site's last control to the widget's launcher
    assert page.evaluate("document.activeElement.hasAttribute('data-service-widget')")
    page.keyboard.press("Enter")
    assert page.locator("button.launcher").get_attribute("aria-expanded") == "true"
    assert page.evaluate("document.querySelector('[data-service-widget]')?.shadowRoot"
                         ".activeElement.id") == "sw-input"
    page.keyboard.type("Hi")
    page.keyboard.press("Enter")
    wait_idle(page)
    page.keyboard.press("Escape")
    assert page.locator("#sw-panel").is_hidden()
    assert page.evaluate("document.querySelector('[data-service-widget]')?.shadowRoot"
                         ".activeElement.className") == "launcher"


def test_escape_closes_the_widget_from_its_launcher(stack, page):
    """Issue 29: Escape closed the widget only from inside its panel; on the launcher (where
    Shift+Tab from the panel leads, and where a click leaves the focus) it did nothing."""
    shadow = "document.querySelector('[data-service-widget]')?.shadowRoot"
    open_widget(page, stack["site"].origin + "/")
    for _ in range(3):  # from the message box back: the conversation, Close, the launcher
        page.keyboard.press("Shift+Tab")
    assert page.evaluate(f"{shadow}.activeElement.className") == "launcher"
    assert page.locator("#sw-panel").is_visible()
    page.keyboard.press("Escape")
    assert page.locator("#sw-panel").is_hidden()
    assert page.locator("button.launcher").get_attribute("aria-expanded") == "false"
    assert page.evaluate(f"{shadow}.activeElement.className") == "launcher"
    # Closed, Escape on the launcher leaves it closed; Enter opens it again.
    page.keyboard.press("Escape")
    assert page.locator("#sw-panel").is_hidden()
    page.keyboard.press("Enter")
    assert page.locator("#sw-panel").is_visible()


def test_on_a_phone_the_panel_fills_the_screen(stack, fake):
    context = stack["browser"].new_context(viewport={"width": 390, "height": 844},
                                           device_scale_factor=2, is_mobile=True, has_touch=True)
    page = context.new_page()
    try:
        open_widget(page, stack["site"].origin + "/")
        box = page.locator("#sw-panel").bounding_box()
        assert box["width"] == 390 and box["height"] == 844
        send(page, "Hi")
        wait_idle(page)
        screenshot(page, "widget-phone.png")
    finally:
        context.close()


def test_an_origin_not_allowed_gets_no_widget(stack, page):
    with page.expect_console_message(lambda m: "ServiceWidget" in m.text):
        page.goto(stack["elsewhere"].origin + "/")
    assert page.evaluate("document.querySelector('[data-service-widget]')") is None


def test_human_takeover_reaches_the_open_widget(stack, page):
    visitor = open_widget(page, stack["site"].origin + "/")
    send(visitor, "Hi, I'm Carl, carl@initech.test")
    wait_idle(visitor)
    send(visitor, "Can I talk to a person please?")
    wait_idle(visitor)
    visitor.locator(".notice").first.wait_for()
    session_id = visitor.evaluate("ServiceWidget.sessionId")

    rep_context = stack["browser"].new_context(viewport={"width": 1280, "height": 900})
    rep = rep_context.new_page()
    try:
        rep.goto(stack["base"] + "/dashboard/")
        rep.fill("#id_username", "rita@acme.test")
        rep.fill("#id_password", REP_PASSWORD)
        rep.get_by_role("button", name="Sign in", exact=True).click()
        rep.wait_for_url(stack["base"] + "/dashboard/")
        rep.goto(stack["base"] + f"/dashboard/conversations/{session_id}/")
        assert "You have this conversation" in rep.content()
        # The visitor writes while the rep has the page open: it appears there at once.
        send(visitor, "Are you there?")
        rep.locator(".bubble.user", has_text="Are you there?").wait_for(timeout=5000)
        screenshot(rep, "dashboard-takeover.png", full_page=True)

        rep.fill("#id_content", f"Hi Carl, Rita here. **How can I help?** Prices: {PRICING}")
        rep.get_by_role("button", name="Send to the visitor").click()
        assert "Reply sent." in rep.content()
        visitor.locator(".msg.human", has_text="Rita here").wait_for(timeout=5000)
        assert visitor.locator(".msg.human .who").last.inner_text() == "Rita Rep"
        assert visitor.locator(".msg.human strong").last.inner_text() == "How can I help?"
        assert visitor.locator(".msg.human a").last.get_attribute("href") == PRICING
        screenshot(visitor, "widget-takeover.png")

        rep.get_by_role("button", name="Hand back to the agent").click()
        visitor.locator(".notice", has_text="assistant again").wait_for(timeout=5000)
        send(visitor, "Thanks, what does it cost?")
        wait_idle(visitor)
        assert "A member of our team" not in bot_texts(visitor)[-1]
    finally:
        rep_context.close()


def test_dashboard_key_generation_rotation_and_early_revocation(stack):
    context = stack["browser"].new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    base = stack["base"]

    def status(raw):
        return v1(stack, "/api/v1/leads", key=raw).status_code

    try:
        page.goto(base + "/dashboard/login/")
        page.fill("#id_username", "rita@acme.test")
        page.fill("#id_password", REP_PASSWORD)
        page.get_by_role("button", name="Sign in", exact=True).click()
        page.wait_for_url(base + "/dashboard/")
        page.goto(base + "/dashboard/leads/")
        screenshot(page, "dashboard-leads.png", full_page=True)
        lead_link = page.locator("table a").first
        if lead_link.count():
            lead_link.click()
            screenshot(page, "dashboard-lead.png", full_page=True)

        page.goto(base + "/dashboard/keys/")
        page.fill("#id_name", "Browser key")
        page.select_option("#id_scope", "read")
        page.get_by_role("button", name="Generate").click()
        first = page.locator("#new-key").inner_text().strip()
        assert first.startswith("sk_live_") and status(first) == 200
        page.get_by_role("link", name="Done").click()
        assert first not in page.content()  # shown once
        row = page.locator("tr", has_text="Browser key")
        row.get_by_role("button", name="Rotate").click()
        second = page.locator("#new-key").inner_text().strip()
        assert second != first and status(first) == 200 and status(second) == 200
        page.get_by_role("link", name="Done").click()
        screenshot(page, "dashboard-keys.png", full_page=True)
        page.once("dialog", lambda dialog: dialog.accept())  # "Revoke the old key…?"
        page.locator("tr", has_text="Browser key").get_by_role("button", name="Revoke old key").click()
        assert "only the new one works now" in page.content()
        assert status(first) == 401 and status(second) == 200
    finally:
        context.close()
