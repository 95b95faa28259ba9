"""Delivery of v1 webhooks to a real HTTP receiver on 127.0.0.1: fan-out on commit, the exact
request, signatures checked independently, every step of the schedule on a controlled clock,
timeouts, redirects, claims, the sweeper, automatic disabling, and the live/test and tenant
walls."""

from __future__ import annotations

import contextlib
import re
import socket
import threading
import time
from datetime import timedelta

import pytest
from django.utils import timezone

from core import outbound
from core.models import Event
from tests.factories import make_lead
from tests.fakes.webhook_receiver import Answer
from webhooks import services
from webhooks.models import Delivery, DeliveryAttempt, Subscription
from webhooks.services import deliveries_sweep, subscription_create

from .conftest import SECRET, attempt_now, envelope, fresh, v1_signature_ok

pytestmark = pytest.mark.usefixtures("local_targets")


def _subscribe(kit, receiver, events=("lead.created",), livemode=True, **kwargs):
    sub, _ = subscription_create(tenant=kit.tenant, livemode=livemode, url=receiver.url(),
                                 events=list(events), secret=kwargs.pop("secret", SECRET), **kwargs)
    return sub


def _lead_with_delivery(kit, django_capture_on_commit_callbacks, mode="live", **fields):
    with django_capture_on_commit_callbacks(execute=True):
        lead = make_lead(kit, mode=mode, **fields)
    return lead


# --- fan-out --------------------------------------------------------------------------------

def test_fan_out_reaches_only_matching_active_subscriptions_of_the_tenant_and_mode(
        kit, stranger, receiver, enqueued, django_capture_on_commit_callbacks):
    wanted = _subscribe(kit, receiver, events=["lead.created", "lead.updated"])
    _subscribe(kit, receiver, events=["lead.deleted"])  # another type
    off = _subscribe(kit, receiver)
    services.subscription_update(subscription=off, status="disabled")
    test_mode = _subscribe(kit, receiver, livemode=False)
    _subscribe(stranger, receiver)

    with django_capture_on_commit_callbacks(execute=True):
        make_lead(kit, email="ann@example.com")
        # Nothing is enqueued before the commit.
        assert enqueued == []
    delivery = Delivery.objects.get()
    assert (delivery.subscription_id, delivery.surface, delivery.status) == (wanted.pk, "v1",
                                                                             "pending")
    assert enqueued == [delivery.pk]
    assert delivery.event.type == "lead.created" and delivery.livemode is True

    # A test-mode event goes to the test-mode subscription alone.
    with django_capture_on_commit_callbacks(execute=True):
        make_lead(kit, mode="test", email="tess@example.com")
    assert Delivery.objects.filter(livemode=False).get().subscription_id == test_mode.pk
    assert Delivery.objects.count() == 2


def test_non_webhook_event_types_are_not_delivered(kit, receiver, enqueued,
                                                   django_capture_on_commit_callbacks):
    _subscribe(kit, receiver, events=list(services.envelopes.V1_EVENT_TYPES))
    lead = make_lead(kit)
    with django_capture_on_commit_callbacks(execute=True):
        # A score move of 10+ points is lead.score_changed (activity only) and lead.updated.
        services_lead_update(lead, {"score": 40})
    types = sorted(Delivery.objects.values_list("event__type", flat=True))
    assert types == ["lead.updated"]
    assert Event.objects.filter(type="lead.score_changed").exists()


def services_lead_update(lead, changes):
    from leads.services import lead_update

    return lead_update(lead=lead, changes=changes)


def test_fan_out_twice_creates_nothing_more(kit, receiver, enqueued):
    _subscribe(kit, receiver)
    make_lead(kit)
    event = Event.objects.get(type="lead.created")
    services.deliveries_create_for_event(event=event)
    services.deliveries_create_for_event(event=event)
    assert Delivery.objects.count() == 1


def test_no_event_no_delivery_for_a_rolled_back_write(kit, receiver, enqueued,
                                                      django_capture_on_commit_callbacks):
    from django.db import transaction

    _subscribe(kit, receiver)
    with (django_capture_on_commit_callbacks(execute=True), pytest.raises(RuntimeError),
          transaction.atomic()):
        make_lead(kit)
        raise RuntimeError("roll back")
    assert not Delivery.objects.exists() and enqueued == []


# --- the request ----------------------------------------------------------------------------

def test_the_v1_request_is_the_specifications(kit, receiver, enqueued,
                                              django_capture_on_commit_callbacks):
    _subscribe(kit, receiver)
    lead = _lead_with_delivery(kit, django_capture_on_commit_callbacks, email="ann@example.com",
                               name="Ann", company="Acme")
    delivery = Delivery.objects.get()
    before = int(time.time())
    attempt = attempt_now(delivery)
    assert attempt.success and attempt.status_code == 200

    (request,) = receiver.received
    assert request.method == "POST" and request.path == "/hooks"
    headers = request.headers
    assert headers["content-type"] == "application/json"
    assert headers["user-agent"] == "SalesAgentService-Webhooks/1.0"
    assert headers["x-service-event"] == "lead.created"
    assert re.fullmatch(r"wha_[0-9a-f]{32}", headers["x-service-delivery"])
    assert headers["x-service-delivery"] == f"wha_{attempt.pk.hex}"
    assert before <= int(headers["x-service-timestamp"]) <= int(time.time())
    assert re.fullmatch(r"[0-9a-f]{64}", headers["x-service-signature"])
    assert v1_signature_ok(request)
    assert not v1_signature_ok(request, secret="another-secret-entirely")

    body = envelope(request)
    event = Event.objects.get(type="lead.created")
    assert list(body) == ["id", "type", "apiVersion", "createdAt", "data"]
    assert body["id"] == f"evt_{event.pk.hex}"
    assert body["type"] == "lead.created"
    assert body["apiVersion"] == "2026-11-01"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", body["createdAt"])
    assert body["data"] == {
        "lead": {"id": f"lead_{lead.pk.hex}", "email": "ann@example.com", "name": "Ann",
                 "company": "Acme", "status": "new", "score": 0, "source": "api",
                 "createdAt": body["data"]["lead"]["createdAt"]},
        "conversationId": None,
    }

    delivery = fresh(delivery)
    assert (delivery.status, delivery.attempt_count, delivery.last_status_code) == (
        "delivered", 1, 200)
    assert delivery.delivered_at is not None and delivery.next_attempt_at is None
    assert attempt.trigger == "scheduled" and attempt.number == 1
    assert attempt.response_excerpt == '{"ok":true}' and attempt.remote_address == "127.0.0.1"
    # Nothing is left to do: a second run of the task sends nothing.
    assert attempt_now(delivery) is None
    assert len(receiver.received) == 1


def test_the_timestamp_is_of_the_sending_not_of_the_event(kit, receiver, enqueued,
                                                          django_capture_on_commit_callbacks):
    _subscribe(kit, receiver)
    _lead_with_delivery(kit, django_capture_on_commit_callbacks)
    Event.objects.update(occurred_at=timezone.now() - timedelta(hours=3))
    attempt_now(Delivery.objects.get())
    (request,) = receiver.received
    assert abs(int(request.headers["x-service-timestamp"]) - time.time()) < 5
    assert envelope(request)["createdAt"].startswith(
        (timezone.now() - timedelta(hours=3)).strftime("%Y-%m-%dT%H"))


# --- the v1 schedule on a controlled clock ----------------------------------------------------

V1_DELAYS = [timedelta(minutes=1), timedelta(minutes=5), timedelta(minutes=30),
             timedelta(hours=2), timedelta(hours=12), timedelta(hours=24)]


def test_every_step_of_the_v1_schedule_then_failed(kit, receiver, enqueued,
                                                   django_capture_on_commit_callbacks):
    receiver.default = Answer(status=503, body=b"down for maintenance")
    _subscribe(kit, receiver)
    _lead_with_delivery(kit, django_capture_on_commit_callbacks)
    delivery = Delivery.objects.get()
    assert enqueued == [delivery.pk]  # attempt 1: at once

    clock = timezone.now()
    attempt_now(delivery, now=clock)
    for number, delay in enumerate(V1_DELAYS, start=2):
        row = fresh(delivery)
        assert row.status == "waiting_retry" and row.attempt_count == number - 1
        assert row.next_attempt_at == clock + delay
        enqueued.clear()
        # Not a second early: neither the sweeper nor a stray task sends it.
        early = clock + delay - timedelta(seconds=1)
        assert deliveries_sweep(now=early).enqueued == 0 and enqueued == []
        assert attempt_now(delivery, now=early) is None
        clock = clock + delay
        assert deliveries_sweep(now=clock).enqueued == 1 and enqueued == [delivery.pk]
        attempt = attempt_now(delivery, now=clock)
        assert attempt.number == number and attempt.status_code == 503
        assert attempt.attempted_at == clock

    row = fresh(delivery)
    assert (row.status, row.attempt_count, row.next_attempt_at) == ("failed", 7, None)
    assert row.last_status_code == 503 and "503" in row.last_error
    assert deliveries_sweep(now=clock + timedelta(days=30)).enqueued == 0
    assert len(receiver.received) == 7

    # Every attempt carried the same event id, a new delivery id, and a valid signature.
    bodies = [envelope(r) for r in receiver.received]
    assert len({b["id"] for b in bodies}) == 1
    assert len({r.headers["x-service-delivery"] for r in receiver.received}) == 7
    assert all(v1_signature_ok(r) for r in receiver.received)
    attempts = list(DeliveryAttempt.objects.filter(delivery=delivery).order_by("number"))
    assert [a.number for a in attempts] == [1, 2, 3, 4, 5, 6, 7]
    assert all(a.response_excerpt == "down for maintenance" for a in attempts)
    assert [f"wha_{a.pk.hex}" for a in attempts] == [
        r.headers["x-service-delivery"] for r in receiver.received]


def test_a_later_success_ends_the_schedule(kit, receiver, enqueued,
                                           django_capture_on_commit_callbacks):
    receiver.answer(Answer(status=500), Answer(status=404), Answer(status=204, body=b""))
    _subscribe(kit, receiver)
    _lead_with_delivery(kit, django_capture_on_commit_callbacks)
    delivery = Delivery.objects.get()
    clock = timezone.now()
    attempt_now(delivery, now=clock)
    attempt_now(delivery, now=clock + timedelta(minutes=1))
    attempt = attempt_now(delivery, now=clock + timedelta(minutes=6))
    assert attempt.success and attempt.status_code == 204
    row = fresh(delivery)
    assert (row.status, row.attempt_count) == ("delivered", 3)
    assert deliveries_sweep(now=clock + timedelta(days=2)).enqueued == 0


# --- failures of every kind -----------------------------------------------------------------

def test_a_receiver_slower_than_the_timeout_is_a_failure(kit, receiver, enqueued, settings,
                                                         django_capture_on_commit_callbacks):
    settings.WEBHOOKS_TIMEOUT_SECONDS = 0.5
    receiver.answer(Answer(status=200, delay=3.0))
    _subscribe(kit, receiver)
    _lead_with_delivery(kit, django_capture_on_commit_callbacks)
    started = time.monotonic()
    attempt = attempt_now(Delivery.objects.get())
    assert time.monotonic() - started < 2.5  # the worker did not wait for the slow answer
    assert not attempt.success and attempt.status_code is None
    assert "Timed out" in attempt.error and 450 <= attempt.duration_ms < 2500
    assert fresh(attempt.delivery).status == "waiting_retry"


def test_redirects_are_not_followed_and_fail(kit, receiver, enqueued,
                                             django_capture_on_commit_callbacks):
    receiver.answer(Answer(status=302, headers={"Location": receiver.url("/elsewhere")}))
    _subscribe(kit, receiver)
    _lead_with_delivery(kit, django_capture_on_commit_callbacks)
    attempt = attempt_now(Delivery.objects.get())
    assert not attempt.success and attempt.status_code == 302
    assert "Redirect" in attempt.error and "not followed" in attempt.error
    assert [r.path for r in receiver.received] == ["/hooks"]


def test_a_refused_connection_is_a_failure(kit, enqueued, django_capture_on_commit_callbacks):
    from tests.live import free_port

    subscription_create(tenant=kit.tenant, livemode=True, events=["lead.created"],
                        url=f"http://127.0.0.1:{free_port()}/nobody", secret=SECRET)
    _lead_with_delivery(kit, django_capture_on_commit_callbacks)
    attempt = attempt_now(Delivery.objects.get())
    assert not attempt.success and attempt.status_code is None
    assert "refused" in attempt.error.lower()


def test_a_name_that_resolves_slower_than_the_timeout_is_a_failure(
        kit, receiver, enqueued, settings, monkeypatch, django_capture_on_commit_callbacks):
    settings.WEBHOOKS_TIMEOUT_SECONDS = 0.2
    _subscribe(kit, receiver)
    _lead_with_delivery(kit, django_capture_on_commit_callbacks)
    real_resolve = outbound.resolve

    def slow_resolve(host, port):
        time.sleep(0.3)
        return real_resolve(host, port)

    monkeypatch.setattr(outbound, "resolve", slow_resolve)
    attempt = attempt_now(Delivery.objects.get())
    assert attempt.status_code is None and attempt.error == "Timed out: no answer within 0.2 s."
    assert receiver.received == []


@pytest.fixture
def babbler():
    """A TCP server on 127.0.0.1 that reads a request and answers with a line that is not HTTP."""
    server = socket.create_server(("127.0.0.1", 0))

    def serve():
        with contextlib.suppress(OSError):
            connection, _ = server.accept()
            with connection:
                connection.recv(65536)
                connection.sendall(b"not http at all\r\n\r\n")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.getsockname()[1]}/hooks"
    server.close()
    thread.join(timeout=5)


def test_an_answer_that_is_not_http_is_a_failure(kit, babbler, enqueued,
                                                 django_capture_on_commit_callbacks):
    subscription_create(tenant=kit.tenant, livemode=True, events=["lead.created"], url=babbler,
                        secret=SECRET)
    _lead_with_delivery(kit, django_capture_on_commit_callbacks)
    attempt = attempt_now(Delivery.objects.get())
    assert not attempt.success and attempt.status_code is None
    assert attempt.error.startswith("Invalid HTTP answer: BadStatusLine(")
    assert attempt.remote_address == "127.0.0.1"


def test_the_query_string_is_sent_and_a_server_error_recorded(
        kit, receiver, enqueued, django_capture_on_commit_callbacks):
    receiver.answer(Answer(status=503, body=b"down for maintenance"))
    subscription_create(tenant=kit.tenant, livemode=True, events=["lead.created"],
                        url=receiver.url("/hooks?source=acme&v=1"), secret=SECRET)
    _lead_with_delivery(kit, django_capture_on_commit_callbacks)
    attempt = attempt_now(Delivery.objects.get())
    assert [r.path for r in receiver.received] == ["/hooks?source=acme&v=1"]
    assert attempt.status_code == 503 and attempt.error == "The receiver answered 503."
    assert attempt.response_excerpt == "down for maintenance"


# --- claims, the sweeper, lost tasks ----------------------------------------------------------

def test_a_claimed_delivery_cannot_be_claimed_again(kit, receiver, enqueued):
    _subscribe(kit, receiver)
    make_lead(kit)
    services.deliveries_create_for_event(event=Event.objects.get(type="lead.created"))
    delivery = Delivery.objects.get()
    now = timezone.now()
    first = services._claim_many([delivery.pk], now)
    assert first != [] and fresh(delivery).status == "delivering"
    assert services._claim_many([delivery.pk], now) == []
    assert attempt_now(delivery, now=now) is None
    assert receiver.received == []


def test_the_sweeper_takes_back_a_delivery_whose_worker_died(kit, receiver, enqueued):
    _subscribe(kit, receiver)
    make_lead(kit)
    services.deliveries_create_for_event(event=Event.objects.get(type="lead.created"))
    delivery = Delivery.objects.get()
    now = timezone.now()
    (claim,) = services._claim_many([delivery.pk], now)  # ... and the worker dies here
    lease_end = fresh(delivery).lease_expires_at
    assert deliveries_sweep(now=lease_end - timedelta(seconds=1)).recovered == 0

    result = deliveries_sweep(now=lease_end + timedelta(seconds=1))
    assert result.recovered == 1
    row = fresh(delivery)
    assert row.status == "waiting_retry" and row.attempt_count == 1
    assert row.next_attempt_at == lease_end + timedelta(seconds=1) + timedelta(minutes=1)
    (lost,) = DeliveryAttempt.objects.filter(delivery=delivery)
    assert lost.number == 1 and lost.status_code is None and "lease expired" in lost.error
    # The dead worker's late result, should it come after all, changes nothing.
    outcome = services.transport.Outcome(200, 5)
    assert services._record_many([(claim, claim.token, outcome, now)]) == []
    assert fresh(delivery).status == "waiting_retry"


def test_a_task_lost_by_the_broker_is_enqueued_again(kit, receiver, enqueued,
                                                     django_capture_on_commit_callbacks):
    _subscribe(kit, receiver)
    _lead_with_delivery(kit, django_capture_on_commit_callbacks)
    delivery = Delivery.objects.get()
    assert enqueued == [delivery.pk]
    created = delivery.enqueued_at
    enqueued.clear()
    # The task was enqueued at creation: the sweeper leaves it to that task for a while...
    assert deliveries_sweep(now=created + timedelta(seconds=30)).enqueued == 0
    # ...and enqueues it again once that task should long have run.
    assert deliveries_sweep(now=created + timedelta(seconds=61)).enqueued == 1
    assert enqueued == [delivery.pk]
    assert deliveries_sweep(now=created + timedelta(seconds=62)).enqueued == 0


# --- automatic disabling ----------------------------------------------------------------------

def test_five_days_of_failures_disable_the_subscription(api, kit, receiver, enqueued,
                                                        django_capture_on_commit_callbacks):
    receiver.default = Answer(status=500)
    sub = _subscribe(kit, receiver)
    start = timezone.now() + timedelta(seconds=5)  # after every delivery below is due
    for day in range(6):
        _lead_with_delivery(kit, django_capture_on_commit_callbacks)
        latest = Delivery.objects.order_by("-created_at").first()
        attempt_now(latest, now=start + timedelta(days=day))
        sub.refresh_from_db()
        assert sub.status == ("active" if day < 5 else "disabled"), day
    assert sub.failing_since == start
    assert "5 days" in sub.disabled_reason and "500" in sub.disabled_reason

    shown = api.get(f"/api/v1/webhooks/wh_{sub.pk.hex}", headers=kit.auth("admin")).json()
    assert shown["status"] == "disabled" and shown["disabledReason"] == sub.disabled_reason

    # Pending deliveries of a disabled subscription are not sent.
    sent = len(receiver.received)
    earlier = Delivery.objects.order_by("created_at").first()
    assert attempt_now(earlier, now=start + timedelta(days=6)) is None
    assert len(receiver.received) == sent and fresh(earlier).status == "failed"
    assert "disabled" in fresh(earlier).last_error

    # One PATCH re-enables it, with a clean slate.
    r = api.patch(f"/api/v1/webhooks/wh_{sub.pk.hex}", json={"status": "active"},
                  headers=kit.auth("admin"))
    assert r.status_code == 200
    assert r.json()["status"] == "active" and r.json()["disabledReason"] is None
    sub.refresh_from_db()
    assert sub.failing_since is None


def test_a_success_resets_the_failure_streak(kit, receiver, enqueued,
                                             django_capture_on_commit_callbacks):
    receiver.answer(Answer(status=500), Answer(status=500))
    sub = _subscribe(kit, receiver)
    start = timezone.now() + timedelta(seconds=5)
    for day in (0, 3):
        _lead_with_delivery(kit, django_capture_on_commit_callbacks)
        attempt_now(Delivery.objects.order_by("-created_at").first(), now=start + timedelta(days=day))
    receiver.answer(Answer(status=200))
    _lead_with_delivery(kit, django_capture_on_commit_callbacks)
    attempt_now(Delivery.objects.order_by("-created_at").first(), now=start + timedelta(days=4))
    sub.refresh_from_db()
    assert sub.failing_since is None
    receiver.default = Answer(status=500)
    _lead_with_delivery(kit, django_capture_on_commit_callbacks)
    attempt_now(Delivery.objects.order_by("-created_at").first(), now=start + timedelta(days=6))
    sub.refresh_from_db()
    assert sub.status == "active" and sub.failing_since == start + timedelta(days=6)


# --- walls between tenants and modes ---------------------------------------------------------

def test_a_stranger_never_receives_our_events_nor_we_theirs(kit, stranger, receiver, enqueued,
                                                            django_capture_on_commit_callbacks):
    from tests.fakes.webhook_receiver import WebhookReceiver

    theirs = WebhookReceiver()
    try:
        _subscribe(kit, receiver)
        subscription_create(tenant=stranger.tenant, livemode=True, url=theirs.url(),
                            events=["lead.created"], secret=SECRET)
        _lead_with_delivery(kit, django_capture_on_commit_callbacks, email="ours@example.com")
        for delivery in Delivery.objects.all():
            attempt_now(delivery)
        assert theirs.received == []
        assert [envelope(r)["data"]["lead"]["email"] for r in receiver.received] == [
            "ours@example.com"]
    finally:
        theirs.close()


def test_test_mode_events_reach_only_test_mode_subscriptions(kit, receiver, enqueued,
                                                             django_capture_on_commit_callbacks):
    from tests.fakes.webhook_receiver import WebhookReceiver

    live_receiver = WebhookReceiver()
    try:
        subscription_create(tenant=kit.tenant, livemode=True, url=live_receiver.url(),
                            events=["lead.created"], secret=SECRET)
        _subscribe(kit, receiver, livemode=False)
        _lead_with_delivery(kit, django_capture_on_commit_callbacks, mode="test",
                            email="sandbox@example.com")
        for delivery in Delivery.objects.all():
            attempt_now(delivery)
        assert live_receiver.received == []
        assert [envelope(r)["data"]["lead"]["email"] for r in receiver.received] == [
            "sandbox@example.com"]
    finally:
        live_receiver.close()


def test_deliveries_use_the_subscriptions_current_url_and_stored_secret(
        kit, receiver, enqueued, django_capture_on_commit_callbacks):
    sub = _subscribe(kit, receiver)
    assert Subscription.objects.get().secret_encrypted != SECRET  # encrypted at rest
    _lead_with_delivery(kit, django_capture_on_commit_callbacks)
    services.subscription_update(subscription=sub, url=receiver.url("/moved"))
    attempt_now(Delivery.objects.get())
    assert receiver.received[0].path == "/moved" and v1_signature_ok(receiver.received[0])


# --- an event whose fan-out never ran ---------------------------------------------------------

def test_an_event_whose_fan_out_hook_never_ran_is_caught_up(kit, receiver, enqueued,
                                                            django_capture_on_commit_callbacks):
    sub = _subscribe(kit, receiver)
    make_lead(kit)  # the on-commit hook never runs here: as if the process died after the commit
    event = Event.objects.get(type="lead.created")
    assert not Delivery.objects.exists()
    Subscription.objects.filter(pk=sub.pk).update(updated_at=event.occurred_at - timedelta(
        seconds=1))
    # Within the grace period the event is still the hook's.
    assert services.deliveries_catch_up(now=event.occurred_at + timedelta(seconds=10)) == 0
    with django_capture_on_commit_callbacks(execute=True):
        assert services.deliveries_catch_up(now=event.occurred_at + timedelta(seconds=31)) == 1
    delivery = Delivery.objects.get()
    assert (delivery.event_id, delivery.subscription_id) == (event.pk, sub.pk)
    assert enqueued == [delivery.pk]
    assert services.deliveries_catch_up(now=event.occurred_at + timedelta(seconds=40)) == 0
    attempt = attempt_now(delivery, now=event.occurred_at + timedelta(seconds=41))
    assert attempt.success and envelope(receiver.received[0])["id"] == f"evt_{event.pk.hex}"


def test_catch_up_respects_receivers_created_later_and_its_window(kit, receiver, enqueued):
    make_lead(kit)
    event = Event.objects.get(type="lead.created")
    later = _subscribe(kit, receiver)  # subscribed after the event happened
    Subscription.objects.filter(pk=later.pk).update(updated_at=event.occurred_at + timedelta(
        seconds=1))
    assert services.deliveries_catch_up(now=event.occurred_at + timedelta(minutes=1)) == 0
    Subscription.objects.filter(pk=later.pk).update(updated_at=event.occurred_at - timedelta(
        days=1))
    assert services.deliveries_catch_up(now=event.occurred_at + timedelta(minutes=16)) == 0
    assert services.deliveries_catch_up(now=event.occurred_at + timedelta(minutes=14)) == 1
