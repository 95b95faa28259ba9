"""The widget's first embed and its failures, in headless Chromium against real daphne
processes: the demo page works at once; a page on an origin nobody allowed gets one console line
naming that origin and the Settings field; ``setTenant`` with an unknown tenant says the chat is
not available; a message that does not get through (server stopped, rate limit) is marked "Not
delivered" with a Retry that resends it, never a new bubble."""

from __future__ import annotations

import json
import time
from pathlib import Path

import httpx
import pytest

from tests.browser import HostSite, browser, screenshot
from tests.live import daphne, manage

pytestmark = pytest.mark.live  # daphne and Chromium

EMBEDDED = {"DATABASE_URL": None, "REDIS_URL": None, "DEBUG": "1", "SECRET_KEY": None,
            "ALLOWED_HOSTS": None, "V1_REQUIRE_HTTPS": "0", "EMAIL_URL": None}
UNKNOWN = "tn_00000000000000000000"
FIELD = '"Sites that may embed the widget" (dashboard, Settings → Allowed origins)'
PUBLIC_CHAT_PER_ADDRESS = 20  # config/ratelimit/tables.py, per minute

ALLOW = """
from tenants.models import Tenant
from tenants.services import tenant_set_allowed_origins
t = Tenant.objects.get(public_id={public_id!r})
tenant_set_allowed_origins(tenant=t, origins=[*t.allowed_origins, *{origins!r}])
"""


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    env = {**EMBEDDED, "VAR_DIR": str(tmp_path_factory.mktemp("var"))}
    manage("migrate", "--noinput", env=env)
    with daphne(env) as base:
        manage("demo_tenant", "--base-url", base, env=env)
        state = json.loads((Path(env["VAR_DIR"]) / "demo-tenant.json").read_text())
        public_id = state["tenant"]["publicId"]
        # The customer's site, two more for the servers the tests stop or rate-limit (their base
        # is set by the test), and a site nobody allowed.
        sites = {name: HostSite(base, public_id) for name in ("site", "down", "limited", "elsewhere")}
        manage("shell", "-c", ALLOW.format(public_id=public_id, origins=[
            sites[name].origin for name in ("site", "down", "limited")]), env=env)
        with browser() as chromium:
            yield {"base": base, "env": env, "public_id": public_id, "browser": chromium, **sites}
        for site in sites.values():
            site.close()


@pytest.fixture
def page(stack):
    context = stack["browser"].new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    yield page
    context.close()


def open_widget(page, url: str):
    page.goto(url)
    page.wait_for_function("() => window.ServiceWidget && document.querySelector('[data-service-widget]')")
    page.locator("button.launcher").click()
    page.locator("#sw-input").wait_for()


def send(page, text: str) -> None:
    page.locator("#sw-input").fill(text)
    page.locator("#sw-input").press("Enter")


def wait_idle(page, timeout=15000) -> None:
    page.wait_for_function(
        "() => document.querySelector('[data-service-widget]')?.shadowRoot"
        "?.querySelector('.log')?.getAttribute('aria-busy') === 'false'", timeout=timeout)


def said(page, role: str) -> list[str]:
    return page.locator(f".msg.{role}:not(.greeting) > div").all_inner_texts()


def test_the_demo_page_embeds_the_widget_and_it_answers(stack, page):
    messages: list[str] = []  # but the browser's own request of a /favicon.ico
    page.on("console", lambda m: "/favicon.ico" in m.location["url"] or messages.append(m.text))
    page.goto(stack["base"] + "/demo/")
    assert page.get_by_role("link", name="dashboard").get_attribute("href") == "/dashboard/"
    page.wait_for_function("() => document.querySelector('[data-service-widget]')")
    page.locator("button.launcher").click()
    send(page, "Hi! What do you do?")
    wait_idle(page)
    assert said(page, "user") == ["Hi! What do you do?"] and len(said(page, "bot")) == 1
    assert page.locator(".msg.err, .undelivered").count() == 0
    assert messages == []
    screenshot(page, "widget-demo.png")


def test_an_origin_not_allowed_logs_one_line_naming_it_and_the_field(stack, page):
    origin = stack["elsewhere"].origin
    messages: list[str] = []
    page.on("console", lambda m: messages.append(m.text))
    with page.expect_console_message(lambda m: m.text.startswith("ServiceWidget")):
        page.goto(origin + "/")
    page.wait_for_load_state("networkidle")
    expected = (f"ServiceWidget: Origin {origin} is not allowed to embed the widget of "
                f"{stack['public_id']}: add it to {FIELD}.")
    assert [m for m in messages if origin in m or "ServiceWidget" in m] == [expected]
    assert not any("Failed to fetch" in m or "CORS" in m for m in messages)
    assert page.evaluate("document.querySelector('[data-service-widget]')") is None


def test_set_tenant_with_an_unknown_tenant_says_the_chat_is_not_available(stack, page):
    open_widget(page, stack["site"].origin + "/")
    send(page, "Hello")
    wait_idle(page)
    page.evaluate(f"ServiceWidget.setTenant({UNKNOWN!r})")
    page.locator(".notice", has_text="This chat isn't available.").wait_for()
    assert page.locator("#sw-panel").is_visible()
    assert page.locator("#sw-input").is_disabled() and page.locator("button.send").is_disabled()
    assert page.locator(".msg").count() == 0  # neither the greeting nor the other conversation
    screenshot(page, "widget-unavailable.png")
    # Closed and opened again, it still says so; a known tenant makes it usable again.
    page.evaluate("ServiceWidget.close(); ServiceWidget.open()")
    assert page.locator(".notice").inner_text() == "This chat isn't available."
    page.evaluate(f"ServiceWidget.setTenant({stack['public_id']!r})")
    page.locator(".greeting").wait_for()
    assert page.locator("#sw-input").is_enabled() and page.locator(".notice").count() == 0


def test_a_stopped_server_marks_the_message_and_retry_resends_it(stack, page):
    site = stack["down"]
    with daphne(stack["env"]) as base:
        site.base = base
        open_widget(page, site.origin + "/")
        port = int(base.rsplit(":", 1)[1])
    # The server has stopped: the message stays, marked, with a Retry.
    send(page, "Is anyone there?")
    wait_idle(page)
    assert said(page, "user") == ["Is anyone there?"] and said(page, "bot") == []
    assert page.locator(".undelivered").inner_text() == "Not delivered · Retry"
    assert "failed" in page.locator(".msg.user").get_attribute("class")
    screenshot(page, "widget-not-delivered.png")
    # Retry while it is still down: the same mark again, no new bubble, no error sentence.
    page.get_by_role("button", name="Retry").click()
    wait_idle(page)
    assert said(page, "user") == ["Is anyone there?"] and said(page, "bot") == []
    assert page.locator(".undelivered").count() == 1 and page.locator(".msg.err").count() == 0
    # The server is back: Retry delivers it, and the reply comes.
    with daphne(stack["env"], port=port):
        page.get_by_role("button", name="Retry").click()
        wait_idle(page)
        assert said(page, "user") == ["Is anyone there?"] and len(said(page, "bot")) == 1
        assert page.locator(".undelivered, .msg.failed, .msg.err").count() == 0


def test_a_rate_limited_message_waits_for_retry_after(stack, page):
    site = stack["limited"]
    with daphne(stack["env"]) as base:  # its own server: the limit it reaches stays there
        site.base = base
        page.clock.install()  # the page's clock, moved forward to the end of the wait below
        open_widget(page, site.origin + "/")
        # Late in a minute the wait would be a second or two: start early in one.
        while time.time() % 60 > 40:
            time.sleep(0.5)
        for _ in range(PUBLIC_CHAT_PER_ADDRESS):  # this address's minute of public chat
            httpx.post(f"{base}/api/chat?tenant={stack['public_id']}", json={})
        with page.expect_response(lambda r: "/api/chat?" in r.url and r.status == 429) as info:
            send(page, "Can I get a demo?")
        wait = int(info.value.headers["retry-after"])
        wait_idle(page)
        assert wait >= 15
        retry = page.locator("button.retry")
        assert retry.is_disabled() and retry.inner_text() == f"Retry in {wait} s"
        assert page.locator(".undelivered").inner_text() == f"Not delivered · Retry in {wait} s"
        screenshot(page, "widget-rate-limited.png")
        page.clock.fast_forward(wait * 1000)
        page.wait_for_function("() => document.querySelector('[data-service-widget]').shadowRoot"
                               ".querySelector('button.retry')?.disabled === false")
        assert retry.inner_text() == "Retry"
        # Still limited on the server (its minute is not over): marked again, in place.
        with page.expect_response(lambda r: "/api/chat?" in r.url and r.status == 429):
            retry.click()
        wait_idle(page)
        assert said(page, "user") == ["Can I get a demo?"] and said(page, "bot") == []
        assert page.locator(".undelivered").count() == 1
        assert page.locator("button.retry").inner_text().startswith("Retry in ")
