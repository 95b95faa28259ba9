"""The dashboard's webhooks page over HTTP: subscriptions (the secret shown once), enable and
disable, delete, the legacy webhook settings (secret write-only), the delivery log with attempts,
and the manual retry of a failed delivery, through ``webhooks.services``; tenant and mode walls."""

from __future__ import annotations

from datetime import timedelta

import pytest

from tests.dashboard.client import Client, signed_in
from tests.factories import make_lead
from tests.fakes.webhook_receiver import Answer, WebhookReceiver
from webhooks import services
from webhooks.models import Delivery, LegacyWebhook, Subscription

SECRET = "whsec_dashboard_0123456789abcdef"


@pytest.fixture
def receiver():
    fake = WebhookReceiver()
    yield fake
    fake.close()


@pytest.fixture(autouse=True)
def local_targets(settings):
    settings.WEBHOOKS_ALLOW_HTTP = True
    settings.WEBHOOKS_ALLOW_PRIVATE_TARGETS = True
    settings.WEBHOOKS_TIMEOUT_SECONDS = 5


@pytest.fixture
def enqueued(monkeypatch):
    """What would go to the broker; the tests run the attempts themselves."""
    ids: list = []
    monkeypatch.setattr(services, "enqueue", lambda delivery_ids: ids.extend(delivery_ids))
    return ids


def subscribe(kit, receiver, livemode=True):
    sub, _ = services.subscription_create(tenant=kit.tenant, livemode=livemode, url=receiver.url(),
                                          events=["lead.created"], secret=SECRET)
    return sub


def failed_delivery(kit, receiver, capture, livemode=True) -> Delivery:
    """A lead.created delivery that has run its whole schedule against a receiver answering 500."""
    subscribe(kit, receiver, livemode)
    receiver.default = Answer(status=500, body=b"down")
    with capture(execute=True):
        make_lead(kit, mode="live" if livemode else "test", email="ann@hooli.com")
    delivery = Delivery.objects.get(livemode=livemode, tenant=kit.tenant)
    now = delivery.next_attempt_at
    while delivery.status != "failed":
        services.delivery_attempt(delivery_id=delivery.pk, now=now)
        delivery.refresh_from_db()
        now = (delivery.next_attempt_at or now) + timedelta(seconds=1)
    receiver.default = Answer()
    return delivery


def test_create_a_subscription_the_secret_shown_once(kit, manager):
    client = signed_in(manager)
    r = client.post("/dashboard/webhooks/subscriptions/new/",
                    {"url": "http://127.0.0.1:9/crm/hooks", "events": ["lead.created", "lead.updated"]})
    assert r.status_code == 200 and r["Cache-Control"] == "no-store"
    sub = Subscription.objects.get(tenant=kit.tenant)
    assert sub.livemode is True and sub.events == ["lead.created", "lead.updated"]
    assert sub.secret in r.content.decode() and b"Subscription created." in r.content
    page = client.get("/dashboard/webhooks/").content.decode()
    assert "http://127.0.0.1:9/crm/hooks" in page and sub.secret not in page

    # A chosen secret is kept; a refused URL is a message, not a row.
    client.post("/dashboard/webhooks/subscriptions/new/",
                {"url": "http://127.0.0.1:9/two/h", "events": ["lead.deleted"], "secret": SECRET})
    assert Subscription.objects.get(url="http://127.0.0.1:9/two/h").secret == SECRET
    r = client.post("/dashboard/webhooks/subscriptions/new/",
                    {"url": "ftp://nope", "events": ["lead.created"]}, follow=True)
    assert b"not valid" in r.content and Subscription.objects.count() == 2
    r = client.post("/dashboard/webhooks/subscriptions/new/", {"url": "http://127.0.0.1:9/x"},
                    follow=True)
    assert b"Please check the form" in r.content and Subscription.objects.count() == 2


def test_disable_enable_and_delete(kit, manager, receiver):
    sub = subscribe(kit, receiver)
    client = signed_in(manager)
    r = client.post(f"/dashboard/webhooks/subscriptions/{sub.pk}/status/", {"status": "disabled"},
                    follow=True)
    assert b"disabled." in r.content
    sub.refresh_from_db()
    assert sub.status == "disabled"
    client.post(f"/dashboard/webhooks/subscriptions/{sub.pk}/status/", {"status": "active"})
    sub.refresh_from_db()
    assert sub.status == "active"
    r = client.post(f"/dashboard/webhooks/subscriptions/{sub.pk}/status/", {"status": "bogus"},
                    follow=True)
    assert b"active or disabled" in r.content
    r = client.post(f"/dashboard/webhooks/subscriptions/{sub.pk}/delete/", follow=True)
    assert b"deleted." in r.content and not Subscription.objects.exists()


def test_legacy_webhook_settings_with_a_write_only_secret(kit, manager):
    client = signed_in(manager)
    r = client.post("/dashboard/webhooks/legacy/new/", {
        "new-url": "http://127.0.0.1:9/legacy/in", "new-events": ["lead.created", "meeting.booked"],
        "new-active": "on"})
    assert r.status_code == 200 and r["Cache-Control"] == "no-store"
    webhook = LegacyWebhook.objects.get(tenant=kit.tenant)
    assert webhook.secret in r.content.decode()
    page = client.get("/dashboard/webhooks/").content.decode()
    assert "http://127.0.0.1:9/legacy/in" in page and webhook.secret not in page
    prefix = f"l{webhook.pk.hex[:8]}"
    old_secret = webhook.secret
    # Blank keeps the secret.
    client.post(f"/dashboard/webhooks/legacy/{webhook.pk}/", {
        f"{prefix}-url": "http://127.0.0.1:9/legacy/v2", f"{prefix}-events": ["lead.qualified"]})
    webhook.refresh_from_db()
    assert (webhook.url, webhook.events, webhook.active) == ("http://127.0.0.1:9/legacy/v2",
                                                            ["lead.qualified"], False)
    assert webhook.secret == old_secret
    client.post(f"/dashboard/webhooks/legacy/{webhook.pk}/", {
        f"{prefix}-url": "http://127.0.0.1:9/legacy/v2", f"{prefix}-events": ["lead.qualified"],
        f"{prefix}-secret": SECRET, f"{prefix}-active": "on"})
    webhook.refresh_from_db()
    assert webhook.secret == SECRET and webhook.active is True
    # Only the legacy event types.
    r = client.post(f"/dashboard/webhooks/legacy/{webhook.pk}/", {
        f"{prefix}-url": "http://127.0.0.1:9/legacy/v2", f"{prefix}-events": ["lead.deleted"]},
        follow=True)
    assert b"Please check the form" in r.content
    r = client.post(f"/dashboard/webhooks/legacy/{webhook.pk}/delete/", follow=True)
    assert b"deleted." in r.content and not LegacyWebhook.objects.exists()


def test_the_log_shows_attempts_and_a_failed_delivery_is_retried(
        kit, manager, receiver, enqueued, django_capture_on_commit_callbacks,
        django_assert_max_num_queries):
    delivery = failed_delivery(kit, receiver, django_capture_on_commit_callbacks)
    assert len(receiver.received) == services.V1_MAX_ATTEMPTS
    client = signed_in(manager)
    client.get("/dashboard/")
    with django_assert_max_num_queries(12):
        page = client.get("/dashboard/webhooks/").content.decode()
    assert "Failed deliveries" in page and f"/dashboard/webhooks/deliveries/{delivery.pk}/retry/" in page
    assert "7 attempts" in page and "HTTP 500" in page
    assert "Failed deliveries" in client.get("/dashboard/webhooks/?status=failed").content.decode()
    detail = client.get(f"/dashboard/webhooks/deliveries/{delivery.pk}/").content.decode()
    assert detail.count("HTTP 500") == services.V1_MAX_ATTEMPTS and ">Retry<" in detail

    enqueued.clear()
    with django_capture_on_commit_callbacks(execute=True):
        r = client.post(f"/dashboard/webhooks/deliveries/{delivery.pk}/retry/")
    assert r.status_code == 302 and r["Location"] == f"/dashboard/webhooks/deliveries/{delivery.pk}/"
    assert enqueued == [delivery.pk]
    services.delivery_attempt(delivery_id=delivery.pk)
    assert len(receiver.received) == services.V1_MAX_ATTEMPTS + 1
    detail = client.get(r["Location"]).content.decode()
    assert "Retry queued" in detail and 'id="delivery-status">Delivered' in detail
    assert "Manual" in detail and "HTTP 200" in detail
    assert "Failed deliveries" not in client.get("/dashboard/webhooks/").content.decode()


def test_a_legacy_or_pending_delivery_is_not_retried(kit, manager, receiver, enqueued,
                                                     django_capture_on_commit_callbacks):
    subscribe(kit, receiver)
    with django_capture_on_commit_callbacks(execute=True):
        make_lead(kit)
    delivery = Delivery.objects.get()
    r = signed_in(manager).post(f"/dashboard/webhooks/deliveries/{delivery.pk}/retry/", follow=True)
    assert b"only failed or delivered deliveries can be retried" in r.content
    assert Delivery.objects.get().status == "pending"


def test_test_mode_shows_test_webhooks(kit, manager, receiver, enqueued,
                                       django_capture_on_commit_callbacks):
    live = failed_delivery(kit, receiver, django_capture_on_commit_callbacks)
    client = signed_in(manager)
    client.post("/dashboard/mode/", {"mode": "test"})
    page = client.get("/dashboard/webhooks/").content.decode()
    assert str(live.pk) not in page and "No subscription yet." in page
    assert client.get(f"/dashboard/webhooks/deliveries/{live.pk}/").status_code == 404
    client.post("/dashboard/webhooks/subscriptions/new/",
                {"url": "http://127.0.0.1:9/test/h", "events": ["lead.created"]})
    assert Subscription.objects.get(url="http://127.0.0.1:9/test/h").livemode is False


def test_a_strangers_webhooks_are_404(kit, stranger, manager, receiver, enqueued,
                                      django_capture_on_commit_callbacks):
    delivery = failed_delivery(stranger, receiver, django_capture_on_commit_callbacks)
    sub = delivery.subscription
    webhook, _ = services.legacy_webhook_create(tenant=stranger.tenant, url=receiver.url(),
                                                events=["lead.created"])
    client = signed_in(manager)
    assert client.get(f"/dashboard/webhooks/deliveries/{delivery.pk}/").status_code == 404
    assert client.post(f"/dashboard/webhooks/deliveries/{delivery.pk}/retry/").status_code == 404
    assert client.post(f"/dashboard/webhooks/subscriptions/{sub.pk}/status/",
                       {"status": "disabled"}).status_code == 404
    assert client.post(f"/dashboard/webhooks/subscriptions/{sub.pk}/delete/").status_code == 404
    assert client.post(f"/dashboard/webhooks/legacy/{webhook.pk}/",
                       {"url": "http://127.0.0.1:9/x"}).status_code == 404
    assert client.post(f"/dashboard/webhooks/legacy/{webhook.pk}/delete/").status_code == 404
    assert client.get("/dashboard/webhooks/deliveries/not-a-uuid/").status_code == 404
    page = client.get("/dashboard/webhooks/").content.decode()
    assert receiver.url() not in page
    assert Delivery.objects.get().status == "failed" and Subscription.objects.get().status == "active"
    assert LegacyWebhook.objects.exists()


def test_reps_do_not_manage_webhooks_and_forms_need_csrf(kit, rep, manager):
    r = signed_in(rep).get("/dashboard/webhooks/", follow=True)
    assert b"Only sales managers" in r.content
    r = signed_in(rep).post("/dashboard/webhooks/subscriptions/new/",
                            {"url": "http://127.0.0.1:9/crm/h", "events": ["lead.created"]})
    assert r.status_code == 302 and not Subscription.objects.exists()
    client = Client(enforce_csrf_checks=True)
    client.force_login(manager)
    r = client.post("/dashboard/webhooks/subscriptions/new/",
                    {"url": "http://127.0.0.1:9/crm/h", "events": ["lead.created"]})
    assert r.status_code == 403 and not Subscription.objects.exists()
