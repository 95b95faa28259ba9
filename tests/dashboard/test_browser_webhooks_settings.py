"""The webhooks and settings pages in a real browser (headless Chromium) against real daphne
processes: a test event reaches a local receiver signed, a waiting delivery is sent at once with
Retry now, a new subscription's secret is shown once and a reload creates nothing; refused forms
keep what was typed with the reasons beside the fields, the https rule naming the setting for
local development; a low-contrast widget theme is previewed and saved only once confirmed,
with a warning beside its colours.
Screenshots go to docs/screenshots/ with ``SCREENSHOTS=1`` (``make screenshots``)."""

from __future__ import annotations

import hashlib
import hmac
import json

import pytest

from tests.browser import browser, screenshot
from tests.fakes.webhook_receiver import Answer, WebhookReceiver
from tests.live import daphne, manage

pytestmark = pytest.mark.live  # daphne and Chromium

PASSWORD = "correct-horse-battery"
SECRET = "whsec_browser_0123456789abcdef"
# The embedded default (SQLite in VAR_DIR), as tests/dashboard/test_browser.py runs it.
EMBEDDED = {"DATABASE_URL": None, "REDIS_URL": None, "DEBUG": "1", "SECRET_KEY": None,
            "ALLOWED_HOSTS": None, "V1_REQUIRE_HTTPS": "0", "WEBHOOKS_TIMEOUT_SECONDS": "5",
            # No worker beside the server: a delivery's task runs in the process that enqueues
            # it, after the commit, as a worker would run it a moment later.
            "CELERY_TASK_ALWAYS_EAGER": "1"}
# The receiver listens on 127.0.0.1 over plain HTTP.
LOCAL = {**EMBEDDED, "WEBHOOKS_ALLOW_HTTP": "1", "WEBHOOKS_ALLOW_PRIVATE_TARGETS": "1"}
# As in production: https only, public addresses only.
STRICT = {**EMBEDDED, "WEBHOOKS_ALLOW_HTTP": "0", "WEBHOOKS_ALLOW_PRIVATE_TARGETS": "0"}

SETUP = """
from leads.services import lead_create
from tenants.models import Tenant
from tenants.services import user_create
from webhooks import services
tenant = Tenant.objects.get(pk={tenant!r})
user_create(tenant=tenant, email="mia@acme.test", first_name="Mia", last_name="Manager",
            role="manager", password={password!r})
if {url!r}:
    services.subscription_create(tenant=tenant, livemode=True, url={url!r},
                                 events=["lead.created"], secret={secret!r})
    # Its first attempt runs at the commit; the receiver answers 503, so it waits a minute.
    lead_create(tenant=tenant, livemode=True, email="ann@hooli.com", name="Ann Lee", company="Hooli")
"""


@pytest.fixture(scope="module")
def chromium():
    with browser() as instance:
        yield instance


def _stack(env: dict, var, url: str = ""):
    env = {**env, "VAR_DIR": str(var)}
    manage("migrate", "--noinput", env=env)
    acme = json.loads(manage("create_tenant", "Acme", "--json", env=env))
    manage("shell", "-c", SETUP.format(tenant=acme["tenant"]["id"], password=PASSWORD, url=url,
                                       secret=SECRET), env=env)
    return daphne(env)


@pytest.fixture(scope="module")
def local(chromium, tmp_path_factory):
    """A server that may deliver to the receiver on 127.0.0.1."""
    receiver = WebhookReceiver()
    receiver.default = Answer(status=503, body=b"busy")
    try:
        with _stack(LOCAL, tmp_path_factory.mktemp("local"), receiver.url()) as base:
            yield {"base": base, "receiver": receiver}
    finally:
        receiver.close()


@pytest.fixture(scope="module")
def strict(chromium, tmp_path_factory):
    """A server with production's rules for webhook URLs."""
    with _stack(STRICT, tmp_path_factory.mktemp("strict")) as base:
        yield base


def signed_in(chromium, base):
    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.goto(base + "/dashboard/login/")
    page.fill("#id_username", "mia@acme.test")
    page.fill("#id_password", PASSWORD)
    page.get_by_role("button", name="Sign in", exact=True).click()
    page.wait_for_url(base + "/dashboard/")
    return context, page


def _signed(request, secret: str = SECRET) -> bool:
    timestamp = request.headers["x-service-timestamp"]
    expected = hmac.new(secret.encode(), timestamp.encode() + b"." + request.body,
                        hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, request.headers["x-service-signature"])


def test_retry_now_and_a_test_event(chromium, local):
    base, receiver = local["base"], local["receiver"]
    assert len(receiver.received) == 1  # the lead's first attempt, answered 503
    context, page = signed_in(chromium, base)
    try:
        page.get_by_role("link", name="Webhooks").click()
        page.get_by_role("link", name="Waiting for retry").click()
        row = page.locator("#log tbody tr", has_text="lead.created")
        assert "Waiting for retry" in row.inner_text()

        receiver.default = Answer(status=200)  # the receiver is back: no need to wait
        row.get_by_role("button", name="Retry now").click()
        page.wait_for_url(f"{base}/dashboard/webhooks/deliveries/*/")
        arrived = receiver.wait_for(2)
        assert arrived[1].headers["x-service-event"] == "lead.created" and _signed(arrived[1])
        assert page.locator("#delivery-status").inner_text() == "Delivered"
        attempts = page.locator("table tbody tr")
        assert attempts.count() == 2 and "Manual" in attempts.last.inner_text()
        assert "HTTP 200" in attempts.last.inner_text()

        page.get_by_role("link", name="← Webhooks").click()
        page.locator("#subscriptions tbody tr").first.get_by_role(
            "button", name="Send test event").click()
        page.wait_for_url(f"{base}/dashboard/webhooks/deliveries/*/")
        test = receiver.wait_for(3)[2]
        assert test.headers["x-service-event"] == "webhook.test" and _signed(test)
        assert json.loads(test.body)["type"] == "webhook.test"
        assert "Test event (webhook.test) sent to" in page.locator(".messages").inner_text()
        assert page.locator("#delivery-status").inner_text() == "Delivered"
        assert page.locator("h1").inner_text().startswith("webhook.test to ")
        screenshot(page, "dashboard-webhook-test-event.png", full_page=True)
    finally:
        context.close()


def test_a_new_subscriptions_secret_is_shown_once_and_a_reload_creates_nothing(chromium, local):
    base, receiver = local["base"], local["receiver"]
    context, page = signed_in(chromium, base)
    try:
        page.goto(base + "/dashboard/webhooks/")
        page.fill("#id_url", receiver.url("/second"))
        page.locator("#new-subscription").get_by_label("lead.qualified").check()
        page.get_by_role("button", name="Create subscription").click()
        page.wait_for_url(f"{base}/dashboard/webhooks/created/**")
        secret = page.locator("#new-secret").inner_text().strip()
        assert secret.startswith("whsec_")
        page.reload()
        assert page.locator("#new-secret").count() == 0
        assert "was shown once" in page.locator("#secret-gone").inner_text()
        page.goto(base + "/dashboard/webhooks/")
        assert page.locator("#subscriptions tbody tr", has_text="/second").count() == 1
        assert secret not in page.content()
    finally:
        context.close()


def test_a_refused_subscription_keeps_the_input_with_the_reasons_beside_the_fields(chromium,
                                                                                   strict):
    context, page = signed_in(chromium, strict)
    try:
        page.goto(strict + "/dashboard/webhooks/")
        form = page.locator("#new-subscription")
        form.locator("#id_url").fill("http://localhost:8000/hooks")
        form.locator("#id_secret").fill("too-short")
        form.get_by_label("lead.created").check()
        form.get_by_label("meeting.booked").check()
        form.get_by_role("button", name="Create subscription").click()
        form = page.locator("#new-subscription")
        url_field = form.locator(".field", has=page.locator("#id_url"))
        assert url_field.locator(".errorlist").inner_text() == (
            "Use an https:// URL. For local development, set WEBHOOKS_ALLOW_HTTP=1.")
        assert form.locator("#id_url").input_value() == "http://localhost:8000/hooks"
        assert form.get_by_label("lead.created").is_checked()
        assert form.get_by_label("meeting.booked").is_checked()
        assert page.evaluate("document.activeElement.id") == "id_url"  # the page opens there
        assert "Nothing was saved" in page.locator(".messages").inner_text()
        form.scroll_into_view_if_needed()
        screenshot(page, "dashboard-webhook-errors.png")

        # Past the scheme, where the name leads is checked; the address stays unsaid.
        form.locator("#id_url").fill("https://localhost:8000/hooks")
        form.locator("#id_secret").fill("too-short")
        form.get_by_role("button", name="Create subscription").click()
        form = page.locator("#new-subscription")
        url_error = form.locator(".field", has=page.locator("#id_url")).locator(".errorlist")
        assert "'localhost' resolves to an address that is not public" in url_error.inner_text()
        assert "127.0.0.1" not in page.content() and "::1" not in url_error.inner_text()
        secret_field = form.locator(".field", has=page.locator("#id_secret"))
        assert secret_field.locator(".errorlist").count() == 0  # the URL is checked first
    finally:
        context.close()


def test_a_low_contrast_theme_is_saved_once_confirmed_with_a_warning(chromium, strict):
    context, page = signed_in(chromium, strict)
    try:
        page.goto(strict + "/dashboard/settings/")
        assert page.locator("#contrast-warning").count() == 0
        screenshot(page, "dashboard-settings.png", full_page=True)
        page.fill("#id_primary_color", "#ffd60a")  # a brand yellow, under white text
        page.get_by_role("button", name="Save widget").click()
        # Not saved yet: the pair previewed, and a box to save it anyway.
        assert "Nothing was saved" in page.locator(".messages").inner_text()
        warning = page.locator("#widget #contrast-warning")
        assert "Low contrast: 1.4" in warning.inner_text() and "4.5:1" in warning.inner_text()
        header = page.locator("#contrast-preview .cp-header")
        assert header.evaluate("e => getComputedStyle(e).backgroundColor") == "rgb(255, 214, 10)"
        assert header.evaluate("e => getComputedStyle(e).color") == "rgb(255, 255, 255)"
        page.locator("#widget").scroll_into_view_if_needed()
        screenshot(page, "dashboard-settings-contrast-confirm.png")
        page.get_by_label("Save these colours anyway").check()
        page.get_by_role("button", name="Save widget").click()
        page.wait_for_url(strict + "/dashboard/settings/")
        assert "Widget saved" in page.locator(".messages").inner_text()
        assert "Low contrast: 1.4" in page.locator("#widget #contrast-warning").inner_text()
        assert page.locator("#id_primary_color").input_value() == "#ffd60a"  # saved
        page.locator("#widget").scroll_into_view_if_needed()
        screenshot(page, "dashboard-settings-contrast.png")

        page.fill("#id_text_color", "#111827")  # dark text: readable on the yellow
        page.get_by_role("button", name="Save widget").click()
        page.wait_for_url(strict + "/dashboard/settings/")
        assert page.locator("#contrast-warning").count() == 0
    finally:
        context.close()


def test_refused_origins_stay_with_each_reason(chromium, strict):
    context, page = signed_in(chromium, strict)
    try:
        page.goto(strict + "/dashboard/settings/")
        typed = "https://www.acme.com\nshop.acme.com\nhttps://acme.com/pricing"
        page.fill("#id_origins", typed)
        page.get_by_role("button", name="Save origins").click()
        field = page.locator("#origins .field", has=page.locator("#id_origins"))
        errors = field.locator(".errorlist li").all_inner_texts()
        assert errors == ["shop.acme.com: add the scheme, as in https://shop.acme.com.",
                          "https://acme.com/pricing: remove the path (/pricing): an origin ends "
                          "after the host and port."]
        assert page.locator("#id_origins").input_value() == typed
        assert page.evaluate("document.activeElement.id") == "id_origins"
        page.locator("#origins").scroll_into_view_if_needed()
        screenshot(page, "dashboard-settings-origins.png")
    finally:
        context.close()
