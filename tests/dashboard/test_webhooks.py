"""The dashboard's webhooks page over HTTP: subscriptions (the secret shown once), enable and
disable, delete, the legacy webhook settings (secret write-only), the delivery log with attempts,
and the manual retry of a failed delivery, through ``webhooks.services``; tenant and mode walls."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from core import outbound
from tenants.services import user_create
from tests.dashboard.client import Client, signed_in
from tests.dashboard.html import checked, errors_beside, value_of
from tests.factories import PASSWORD, make_lead
from tests.fakes.webhook_receiver import Answer, WebhookReceiver
from tests.webhooks.conftest import envelope, legacy_signature_ok, v1_signature_ok
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
    # POST-redirect-GET: the answer to the form is a redirect, the secret is on the page it names.
    assert r.status_code == 302 and r["Location"].startswith("/dashboard/webhooks/created/")
    sub = Subscription.objects.get(tenant=kit.tenant)
    assert sub.livemode is True and sub.events == ["lead.created", "lead.updated"]
    assert sub.secret not in r.content.decode()
    shown = client.get(r["Location"])
    assert shown.status_code == 200 and shown["Cache-Control"] == "no-store"
    assert sub.secret in shown.content.decode() and b"Subscription created." in shown.content
    # A reload shows it no more, and creates nothing.
    again = client.get(r["Location"])
    assert again["Cache-Control"] == "no-store" and sub.secret not in again.content.decode()
    assert b"was shown once" in again.content and Subscription.objects.count() == 1
    page = client.get("/dashboard/webhooks/").content.decode()
    assert "http://127.0.0.1:9/crm/hooks" in page and sub.secret not in page

    # A chosen secret is kept; a refused URL is an error on the form, not a row.
    client.post("/dashboard/webhooks/subscriptions/new/",
                {"url": "http://127.0.0.1:9/two/h", "events": ["lead.deleted"], "secret": SECRET})
    assert Subscription.objects.get(url="http://127.0.0.1:9/two/h").secret == SECRET
    r = client.post("/dashboard/webhooks/subscriptions/new/",
                    {"url": "ftp://nope", "events": ["lead.created"]})
    assert r.status_code == 400 and Subscription.objects.count() == 2
    assert errors_beside(r.content, "id_url") == ["Expected an https:// URL."]
    r = client.post("/dashboard/webhooks/subscriptions/new/", {"url": "http://127.0.0.1:9/x"})
    assert r.status_code == 400 and Subscription.objects.count() == 2
    assert errors_beside(r.content, "id_events_0") == ["This field is required."]


def test_the_secret_page_is_the_creators_alone(kit, manager, stranger):
    """The secret waits in the creator's session: another session of the same person who gets
    the address sees nothing, and a person of another tenant finds no such webhook."""
    r = signed_in(manager).post("/dashboard/webhooks/subscriptions/new/",
                                {"url": "http://127.0.0.1:9/crm/hooks", "events": ["lead.created"]})
    sub = Subscription.objects.get()
    other = user_create(tenant=stranger.tenant, email="sam@stranger.test", role="manager",
                        password=PASSWORD)
    page = signed_in(manager).get(r["Location"])
    assert sub.secret not in page.content.decode() and b"was shown once" in page.content
    page = signed_in(other).get(r["Location"])
    assert page.status_code == 404 and sub.secret not in page.content.decode()


def test_a_legacy_webhooks_secret_is_shown_once_after_a_redirect(kit, manager):
    client = signed_in(manager)
    r = client.post("/dashboard/webhooks/legacy/new/", {
        "new-url": "http://127.0.0.1:9/legacy/in", "new-events": ["lead.created"],
        "new-active": "on"})
    assert r.status_code == 302
    webhook = LegacyWebhook.objects.get()
    assert webhook.secret in client.get(r["Location"]).content.decode()
    assert webhook.secret not in client.get(r["Location"]).content.decode()
    assert LegacyWebhook.objects.count() == 1


def test_a_refused_subscription_keeps_its_input_and_says_why_beside_each_field(kit, manager,
                                                                                 settings):
    settings.WEBHOOKS_ALLOW_HTTP = False
    client = signed_in(manager)
    typed = {"url": "http://127.0.0.1:9/crm/hooks", "events": ["lead.created", "message.sent"],
             "secret": "short"}
    r = client.post("/dashboard/webhooks/subscriptions/new/", typed)
    assert r.status_code == 400 and not Subscription.objects.exists()
    assert errors_beside(r.content, "id_url") == [
        "Use an https:// URL. For local development, set WEBHOOKS_ALLOW_HTTP=1."]
    assert value_of(r.content, "id_url") == typed["url"]
    assert checked(r.content, "events") == ["lead.created", "message.sent"]
    assert b"short" not in r.content  # a typed secret is never sent back
    assert "Nothing was saved" in r.content.decode()

    settings.WEBHOOKS_ALLOW_HTTP = True
    r = client.post("/dashboard/webhooks/subscriptions/new/", typed)
    assert r.status_code == 400
    assert errors_beside(r.content, "id_secret") == ["At least 16 characters."]
    assert errors_beside(r.content, "id_url") == []


def test_a_host_on_a_private_network_is_refused_without_saying_where_it_points(
        kit, manager, settings, monkeypatch):
    settings.WEBHOOKS_ALLOW_PRIVATE_TARGETS = False
    monkeypatch.setattr(outbound, "resolve", lambda host, port: ["93.184.216.34", "10.20.30.40"])
    r = signed_in(manager).post("/dashboard/webhooks/subscriptions/new/", {
        "url": "http://intranet.example/hooks", "events": ["lead.created"]})
    assert r.status_code == 400 and not Subscription.objects.exists()
    (error,) = errors_beside(r.content, "id_url")
    assert "'intranet.example' resolves to an address that is not public" in error
    assert "WEBHOOKS_ALLOW_PRIVATE_TARGETS=1" in error
    assert b"10.20.30.40" not in r.content and b"93.184.216.34" not in r.content


def test_a_refused_legacy_webhook_change_keeps_its_input(kit, manager, settings):
    webhook, _ = services.legacy_webhook_create(tenant=kit.tenant, url="http://127.0.0.1:9/in",
                                                events=["lead.created"])
    settings.WEBHOOKS_ALLOW_HTTP = False
    prefix = f"l{webhook.pk.hex[:8]}"
    r = signed_in(manager).post(f"/dashboard/webhooks/legacy/{webhook.pk}/", {
        f"{prefix}-url": "http://127.0.0.1:9/moved", f"{prefix}-events": ["meeting.booked"],
        f"{prefix}-active": "on"})
    assert r.status_code == 400
    assert value_of(r.content, f"id_{prefix}-url") == "http://127.0.0.1:9/moved"
    assert checked(r.content, f"{prefix}-events") == ["meeting.booked"]
    assert "WEBHOOKS_ALLOW_HTTP=1" in errors_beside(r.content, f"id_{prefix}-url")[0]
    webhook.refresh_from_db()
    assert webhook.url == "http://127.0.0.1:9/in" and webhook.events == ["lead.created"]


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
    assert r.status_code == 302
    webhook = LegacyWebhook.objects.get(tenant=kit.tenant)
    shown = client.get(r["Location"])
    assert shown["Cache-Control"] == "no-store" and webhook.secret in shown.content.decode()
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
        f"{prefix}-url": "http://127.0.0.1:9/legacy/v2", f"{prefix}-events": ["lead.deleted"]})
    assert r.status_code == 400
    assert "lead.deleted is not one of the available choices" in " ".join(
        errors_beside(r.content, f"id_{prefix}-events_0"))
    r = client.post(f"/dashboard/webhooks/legacy/{webhook.pk}/delete/", follow=True)
    assert b"deleted." in r.content and not LegacyWebhook.objects.exists()


def test_the_log_shows_attempts_and_a_failed_delivery_is_retried(
        kit, manager, receiver, enqueued, django_capture_on_commit_callbacks,
        django_assert_max_num_queries):
    delivery = failed_delivery(kit, receiver, django_capture_on_commit_callbacks)
    assert len(receiver.received) == services.V1_SCHEDULE.max_attempts
    client = signed_in(manager)
    client.get("/dashboard/")
    with django_assert_max_num_queries(12):
        page = client.get("/dashboard/webhooks/").content.decode()
    assert "Failed deliveries" in page and f"/dashboard/webhooks/deliveries/{delivery.pk}/retry/" in page
    assert "7 attempts" in page and "HTTP 500" in page
    assert "Failed deliveries" in client.get("/dashboard/webhooks/?status=failed").content.decode()
    detail = client.get(f"/dashboard/webhooks/deliveries/{delivery.pk}/").content.decode()
    assert detail.count("HTTP 500") == services.V1_SCHEDULE.max_attempts and ">Retry<" in detail

    enqueued.clear()
    with django_capture_on_commit_callbacks(execute=True):
        r = client.post(f"/dashboard/webhooks/deliveries/{delivery.pk}/retry/")
    assert r.status_code == 302 and r["Location"] == f"/dashboard/webhooks/deliveries/{delivery.pk}/"
    assert enqueued == [delivery.pk]
    services.delivery_attempt(delivery_id=delivery.pk)
    assert len(receiver.received) == services.V1_SCHEDULE.max_attempts + 1
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
    assert b"it is on its way. Only failed, delivered or waiting deliveries can be retried" in r.content
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


# --- the test event ---------------------------------------------------------------------------

def test_send_a_test_event_to_a_subscription(kit, manager, receiver, enqueued,
                                             django_capture_on_commit_callbacks):
    sub = subscribe(kit, receiver)
    other, _ = services.subscription_create(tenant=kit.tenant, livemode=True,
                                            url=receiver.url("/other"),
                                            events=list(services.envelopes.V1_EVENT_TYPES))
    client = signed_in(manager)
    page = client.get("/dashboard/webhooks/").content.decode()
    assert f"/dashboard/webhooks/subscriptions/{sub.pk}/test/" in page

    with django_capture_on_commit_callbacks(execute=True):
        r = client.post(f"/dashboard/webhooks/subscriptions/{sub.pk}/test/")
    delivery = Delivery.objects.get()  # for this subscription alone
    assert delivery.subscription_id == sub.pk and delivery.event.type == "webhook.test"
    assert r.status_code == 302 and r["Location"] == f"/dashboard/webhooks/deliveries/{delivery.pk}/"
    assert enqueued == [delivery.pk]

    attempt = services.delivery_attempt(delivery_id=delivery.pk)  # what the worker does
    assert attempt.trigger == "manual" and attempt.success
    (request,) = receiver.received
    assert request.path == "/hooks" and request.headers["x-service-event"] == "webhook.test"
    assert v1_signature_ok(request, SECRET)
    body = envelope(request)
    assert body["type"] == "webhook.test" and body["id"] == f"evt_{delivery.event_id.hex}"
    assert body["data"]["webhookId"] == f"wh_{sub.pk.hex}" and "test event" in body["data"]["message"]

    detail = client.get(r["Location"]).content.decode()
    assert f"Test event (webhook.test) sent to {receiver.url()}" in detail
    assert 'id="delivery-status">Delivered' in detail and "HTTP 200" in detail
    assert not other.deliveries.exists()


def test_send_a_test_event_to_a_legacy_webhook(kit, manager, receiver, enqueued,
                                               django_capture_on_commit_callbacks):
    webhook, _ = services.legacy_webhook_create(tenant=kit.tenant, url=receiver.url("/legacy"),
                                                events=["lead.created"], secret=SECRET)
    with django_capture_on_commit_callbacks(execute=True):
        r = signed_in(manager).post(f"/dashboard/webhooks/legacy/{webhook.pk}/test/")
    delivery = Delivery.objects.get(legacy_webhook=webhook)
    assert r["Location"] == f"/dashboard/webhooks/deliveries/{delivery.pk}/"
    services.delivery_attempt(delivery_id=delivery.pk)
    (request,) = receiver.received
    assert request.headers["x-service-event"] == "webhook.test"
    assert legacy_signature_ok(request, SECRET)
    body = envelope(request)
    assert body["event"] == "webhook.test" and body["data"]["webhookId"] == str(webhook.pk)


def test_a_test_event_that_fails_is_not_retried_on_the_schedule(
        kit, manager, receiver, enqueued, django_capture_on_commit_callbacks):
    """A person is waiting for the answer: one attempt, failed, shown; they send another (or
    Retry it) once the receiver is fixed, rather than a test going on for two days."""
    sub = subscribe(kit, receiver)
    receiver.default = Answer(status=404, body=b"no such route")
    client = signed_in(manager)
    with django_capture_on_commit_callbacks(execute=True):
        r = client.post(f"/dashboard/webhooks/subscriptions/{sub.pk}/test/")
    delivery = Delivery.objects.get()
    services.delivery_attempt(delivery_id=delivery.pk)
    delivery.refresh_from_db()
    assert delivery.status == "failed" and delivery.next_attempt_at is None
    detail = client.get(r["Location"]).content.decode()
    assert 'id="delivery-status">Failed' in detail and "HTTP 404" in detail
    assert "no such route" in detail and ">Retry<" in detail


def test_no_test_event_for_a_disabled_receiver(kit, manager, receiver, enqueued):
    sub = subscribe(kit, receiver)
    services.subscription_update(subscription=sub, status="disabled")
    client = signed_in(manager)
    assert f"/subscriptions/{sub.pk}/test/" not in client.get("/dashboard/webhooks/").content.decode()
    r = client.post(f"/dashboard/webhooks/subscriptions/{sub.pk}/test/", follow=True)
    assert b"enable it before sending a test event" in r.content
    assert not Delivery.objects.exists() and enqueued == []


def test_a_strangers_receivers_get_no_test_event(kit, stranger, manager, receiver, enqueued):
    sub = subscribe(stranger, receiver)
    webhook, _ = services.legacy_webhook_create(tenant=stranger.tenant, url=receiver.url(),
                                                events=["lead.created"])
    client = signed_in(manager)
    assert client.post(f"/dashboard/webhooks/subscriptions/{sub.pk}/test/").status_code == 404
    assert client.post(f"/dashboard/webhooks/legacy/{webhook.pk}/test/").status_code == 404
    assert not Delivery.objects.exists()


# --- retry now --------------------------------------------------------------------------------

def test_retry_now_brings_a_waiting_deliverys_next_attempt_forward(
        kit, manager, receiver, enqueued, django_capture_on_commit_callbacks):
    subscribe(kit, receiver)
    receiver.default = Answer(status=503, body=b"busy")
    with django_capture_on_commit_callbacks(execute=True):
        make_lead(kit)
    delivery = Delivery.objects.get()
    services.delivery_attempt(delivery_id=delivery.pk)
    delivery.refresh_from_db()
    assert delivery.status == "waiting_retry" and delivery.next_attempt_at > timezone.now()

    client = signed_in(manager)
    log = client.get("/dashboard/webhooks/?status=waiting_retry").content.decode()
    assert f"/dashboard/webhooks/deliveries/{delivery.pk}/retry/" in log and "Retry now" in log
    assert ">Retry now<" in client.get(f"/dashboard/webhooks/deliveries/{delivery.pk}/").content.decode()

    # Still failing: the manual attempt is the schedule's second, and the schedule goes on.
    enqueued.clear()
    with django_capture_on_commit_callbacks(execute=True):
        r = client.post(f"/dashboard/webhooks/deliveries/{delivery.pk}/retry/")
    assert r.status_code == 302 and enqueued == [delivery.pk]
    delivery.refresh_from_db()
    assert delivery.status == "waiting_retry" and delivery.next_attempt_at <= timezone.now()
    before = timezone.now()
    attempt = services.delivery_attempt(delivery_id=delivery.pk)
    assert (attempt.number, attempt.trigger, attempt.success) == (2, "manual", False)
    assert services.delivery_attempt(delivery_id=delivery.pk) is None  # the task ran twice: one send
    assert len(receiver.received) == 2
    delivery.refresh_from_db()
    assert delivery.status == "waiting_retry"
    assert before + services.V1_SCHEDULE.delays[1] <= delivery.next_attempt_at
    assert delivery.next_attempt_at <= timezone.now() + services.V1_SCHEDULE.delays[1]

    # Fixed: the next Retry now delivers it.
    receiver.default = Answer()
    with django_capture_on_commit_callbacks(execute=True):
        client.post(f"/dashboard/webhooks/deliveries/{delivery.pk}/retry/")
    services.delivery_attempt(delivery_id=delivery.pk)
    detail = client.get(f"/dashboard/webhooks/deliveries/{delivery.pk}/").content.decode()
    assert 'id="delivery-status">Delivered' in detail and detail.count("Manual") == 2
    assert len(receiver.received) == 3


def test_retry_now_twice_sends_once(kit, manager, receiver, enqueued,
                                    django_capture_on_commit_callbacks):
    subscribe(kit, receiver)
    receiver.default = Answer(status=500)
    with django_capture_on_commit_callbacks(execute=True):
        make_lead(kit)
    delivery = Delivery.objects.get()
    services.delivery_attempt(delivery_id=delivery.pk)
    client = signed_in(manager)
    client.post(f"/dashboard/webhooks/deliveries/{delivery.pk}/retry/")
    r = client.post(f"/dashboard/webhooks/deliveries/{delivery.pk}/retry/", follow=True)
    assert b"next attempt is due: it is on its way now" in r.content
    receiver.default = Answer()
    services.delivery_attempt(delivery_id=delivery.pk)
    services.delivery_attempt(delivery_id=delivery.pk)
    assert len(receiver.received) == 2
    assert Delivery.objects.get().status == "delivered"


def test_retry_now_of_a_waiting_legacy_delivery(kit, manager, receiver, enqueued,
                                                django_capture_on_commit_callbacks):
    """Bringing a legacy delivery's next attempt forward adds no attempt to its schedule, so it
    is offered on both surfaces (a failed legacy delivery is still not retried by hand)."""
    services.legacy_webhook_create(tenant=kit.tenant, url=receiver.url(), events=["lead.created"])
    receiver.default = Answer(status=500)
    with django_capture_on_commit_callbacks(execute=True):
        make_lead(kit)
    delivery = Delivery.objects.get()
    services.delivery_attempt(delivery_id=delivery.pk)
    receiver.default = Answer()
    client = signed_in(manager)
    assert ">Retry now<" in client.get(f"/dashboard/webhooks/deliveries/{delivery.pk}/").content.decode()
    client.post(f"/dashboard/webhooks/deliveries/{delivery.pk}/retry/")
    attempt = services.delivery_attempt(delivery_id=delivery.pk)
    assert attempt.trigger == "manual" and attempt.success
    assert Delivery.objects.get().status == "delivered"
