"""Deliveries in batches over kept connections (docs/webhooks.md, "How it works"): a batch is
claimed once, sent in order over one kept-alive connection to its receiver, and recorded
together; concurrent batches never send one delivery twice; a kept connection is reused only
for the address that passed the check, under the rules of the moment; a receiver that closes
its keep-alive connections is handled; leases are renewed while a slow receiver holds a batch.

Every request is checked at a real receiver on 127.0.0.1 (tests/fakes/webhook_receiver.py).
"""

from __future__ import annotations

import ipaddress
import os
import threading
import time
import uuid
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from core import outbound
from core.models import Event
from tests.fakes.webhook_receiver import Answer, WebhookReceiver
from webhooks import services, transport
from webhooks.models import Delivery, DeliveryAttempt, Surface
from webhooks.services import deliveries_attempt, deliveries_sweep, subscription_create

from .conftest import SECRET, envelope, v1_signature_ok

pytestmark = pytest.mark.usefixtures("local_targets")

on_postgresql = pytest.mark.skipif(
    not os.environ.get("DATABASE_URL", "").startswith("postgres"),
    reason="row locks (SELECT ... FOR UPDATE SKIP LOCKED) and concurrent connections need "
           "PostgreSQL")


@pytest.fixture(autouse=True)
def no_kept_connections():
    """Each test starts and ends without connections kept by an earlier one."""
    transport.connections.clear()
    yield
    transport.connections.clear()


def _subscription(kit, url):
    sub, _ = subscription_create(tenant=kit.tenant, livemode=True, url=url,
                                 events=["lead.created"], secret=SECRET)
    return sub


def _backlog(kit, sub, count: int) -> list[uuid.UUID]:
    """``count`` due deliveries of as many lead.created events to ``sub``, oldest first."""
    now = timezone.now()
    events = Event.objects.bulk_create([
        Event(tenant=kit.tenant, livemode=True, type="lead.created", description="batch",
              facts={"lead": _lead_facts(f"lead{i}@example.com")}, occurred_at=now)
        for i in range(count)])
    rows = Delivery.objects.bulk_create([
        Delivery(tenant=kit.tenant, livemode=True, surface=Surface.V1, event=event,
                 subscription=sub, next_attempt_at=now, enqueued_at=now, created_at=now,
                 updated_at=now)
        for event in events])
    return [row.pk for row in rows]


def _lead_facts(email: str) -> dict:
    """A lead as a lead.created event records it (leads.events.lead_facts)."""
    at = "2026-11-21T00:00:00+00:00"
    return {"id": str(uuid.uuid4()), "email": email, "name": "", "company": "", "title": "",
            "phone": "", "status": "new", "score": 0, "source": "api", "tags": [],
            "custom_fields": {}, "assigned_to_id": None, "last_intent": "", "first_seen_at": at,
            "last_active_at": at, "created_at": at, "updated_at": at}


# --- one batch ------------------------------------------------------------------------------

def test_a_batch_goes_over_one_kept_connection_and_every_attempt_is_recorded(kit, receiver):
    sub = _subscription(kit, receiver.url())
    ids = _backlog(kit, sub, 6)
    receiver.answer(Answer(200), Answer(503, body=b"busy"), Answer(204, body=b""),
                    Answer(302, headers={"Location": "https://elsewhere.example/"}),
                    Answer(200), Answer(400, body=b"bad"))
    attempts = deliveries_attempt(delivery_ids=ids)

    assert len(receiver.received) == 6 and receiver.connections_opened == 1
    assert all(v1_signature_ok(request) for request in receiver.received)
    # In the order given: the receiver saw the events of the deliveries one after the other.
    events = {pk: f"evt_{event_id.hex}" for pk, event_id in
              Delivery.objects.filter(pk__in=ids).values_list("pk", "event_id")}
    assert [envelope(r)["id"] for r in receiver.received] == [events[pk] for pk in ids]
    # One attempt recorded per request, named by the request's X-Service-Delivery.
    assert [f"wha_{a.pk.hex}" for a in attempts] == [
        r.headers["x-service-delivery"] for r in receiver.received]
    rows = {a.delivery_id: a for a in DeliveryAttempt.objects.filter(delivery_id__in=ids)}
    assert [(rows[pk].number, rows[pk].status_code, rows[pk].success) for pk in ids] == [
        (1, 200, True), (1, 503, False), (1, 204, True), (1, 302, False), (1, 200, True),
        (1, 400, False)]
    assert rows[ids[1]].response_excerpt == "busy"
    assert rows[ids[3]].error == "Redirect (302 to https://elsewhere.example/) not followed."
    deliveries = {d.pk: d for d in Delivery.objects.filter(pk__in=ids)}
    assert [deliveries[pk].status for pk in ids] == [
        "delivered", "waiting_retry", "delivered", "waiting_retry", "delivered", "waiting_retry"]
    for pk in ids:
        row, attempt = deliveries[pk], rows[pk]
        assert row.attempt_count == 1 and row.claim_token is None and row.lease_expires_at is None
        assert row.last_attempt_at == attempt.attempted_at
        if attempt.success:
            assert row.delivered_at == attempt.attempted_at and row.next_attempt_at is None
        else:
            # The schedule counts from this delivery's own attempt, not from the batch's start.
            assert row.next_attempt_at == attempt.attempted_at + timedelta(minutes=1)
            assert row.last_status_code == attempt.status_code
    # The connection stays for the next attempts.
    assert len(transport.connections) == 1

    # Running the same batch again sends nothing: none is due.
    assert deliveries_attempt(delivery_ids=ids) == []
    assert len(receiver.received) == 6


def test_deliveries_not_due_taken_or_gone_are_left_out_of_a_batch(kit, receiver):
    sub = _subscription(kit, receiver.url())
    ids = _backlog(kit, sub, 4)
    Delivery.objects.filter(pk=ids[0]).update(next_attempt_at=timezone.now() + timedelta(hours=1))
    Delivery.objects.filter(pk=ids[1]).update(status="delivering")
    Delivery.objects.filter(pk=ids[2]).delete()
    attempts = deliveries_attempt(delivery_ids=[*ids, uuid.uuid4()])
    assert [a.delivery_id for a in attempts] == [ids[3]]
    assert len(receiver.received) == 1


def test_a_disabled_receivers_batch_ends_failed_without_requests(kit, receiver):
    sub = _subscription(kit, receiver.url())
    ids = _backlog(kit, sub, 3)
    services.subscription_update(subscription=sub, status="disabled")
    assert deliveries_attempt(delivery_ids=ids) == []
    assert receiver.received == []
    assert set(Delivery.objects.filter(pk__in=ids).values_list("status", "attempt_count",
                                                                "last_error")) == {
        ("failed", 0, "Not sent: the receiver is disabled.")}


def test_enqueue_puts_each_receivers_deliveries_in_batches_of_their_own(kit, receiver):
    first = _subscription(kit, receiver.url("/a"))
    second = _subscription(kit, receiver.url("/b"))
    a, b = _backlog(kit, first, services.BATCH_SIZE + 5), _backlog(kit, second, 3)
    mixed = [pk for pair in zip(a, b, strict=False) for pk in pair] + a[len(b):]
    batches = services._batches(mixed)
    assert batches == [[str(pk) for pk in a[:services.BATCH_SIZE]],
                       [str(pk) for pk in a[services.BATCH_SIZE:]], [str(pk) for pk in b]]
    assert services._batches([b[0]]) == [[str(b[0])]]


# --- kept connections and the address rule ---------------------------------------------------

def test_a_kept_connection_is_not_used_once_the_rules_refuse_its_address(
        kit, receiver, local_targets):
    sub = _subscription(kit, receiver.url())
    first, second, third = _backlog(kit, sub, 3)
    deliveries_attempt(delivery_ids=[first])
    deliveries_attempt(delivery_ids=[second])
    assert len(receiver.received) == 2 and receiver.connections_opened == 1  # kept, reused

    local_targets.WEBHOOKS_ALLOW_PRIVATE_TARGETS = False
    (attempt,) = deliveries_attempt(delivery_ids=[third])
    assert attempt.error.startswith("Refused: The host '127.0.0.1' resolves to an address that "
                                    "is not public")
    assert len(receiver.received) == 2  # nothing went through the kept connection


def test_a_kept_connection_to_a_checked_address_is_rechecked_before_reuse(
        kit, receiver, local_targets, monkeypatch):
    """Even if resolution were fooled into passing a non-public address, a kept connection to
    it is checked again under the rules of the moment and closed, not reused."""
    sub = _subscription(kit, receiver.url())
    first, second = _backlog(kit, sub, 2)
    deliveries_attempt(delivery_ids=[first])
    assert len(transport.connections) == 1
    local_targets.WEBHOOKS_ALLOW_PRIVATE_TARGETS = False
    monkeypatch.setattr(outbound, "public_addresses",
                        lambda host, port, policy: [ipaddress.ip_address("127.0.0.1")])
    (attempt,) = deliveries_attempt(delivery_ids=[second])
    assert attempt.error.startswith("Refused: The host '127.0.0.1' resolves to an address that "
                                    "is not public")
    assert len(receiver.received) == 1 and len(transport.connections) == 0


def test_a_name_whose_dns_answer_changed_gets_a_new_connection_to_the_new_address(
        kit, receiver, monkeypatch):
    """Connections are kept by the resolved, checked address: the same name resolving
    elsewhere never reuses the connection to the old address."""
    answers = {"hooks.example": ["127.0.0.1"]}
    monkeypatch.setattr(outbound, "resolve", lambda host, port: answers[host])
    sub = _subscription(kit, f"http://hooks.example:{receiver.port}/in")
    first, second = _backlog(kit, sub, 2)
    (ok,) = deliveries_attempt(delivery_ids=[first])
    assert ok.success and len(transport.connections) == 1

    # 127.0.0.2 is loopback too, and nothing listens on the receiver's port there.
    answers["hooks.example"] = ["127.0.0.2"]
    (attempt,) = deliveries_attempt(delivery_ids=[second])
    assert attempt.error == "Connection refused." and attempt.remote_address == "127.0.0.2"
    assert len(receiver.received) == 1


def test_a_receiver_that_closed_a_kept_connection_still_gets_the_next_attempt_once(
        kit, receiver):
    sub = _subscription(kit, receiver.url())
    first, second, third = _backlog(kit, sub, 3)
    deliveries_attempt(delivery_ids=[first])
    assert len(transport.connections) == 1
    receiver.drop_connections()  # as a receiver ending an idle keep-alive connection does
    time.sleep(0.05)

    (attempt,) = deliveries_attempt(delivery_ids=[second])
    assert attempt.success
    assert len(receiver.received) == 2 and receiver.connections_opened == 2
    assert receiver.received[1].headers["x-service-delivery"] == f"wha_{attempt.pk.hex}"

    # A receiver that answers "Connection: close" gets a new connection for every attempt.
    receiver.answer(Answer(200, headers={"Connection": "close"}))
    (closing,) = deliveries_attempt(delivery_ids=[third])
    assert closing.success and len(transport.connections) == 0


def test_an_idle_connection_older_than_the_keep_alive_window_is_not_reused(kit, receiver,
                                                                           monkeypatch):
    monkeypatch.setattr(transport.connections, "idle_seconds", 0.05)
    sub = _subscription(kit, receiver.url())
    first, second = _backlog(kit, sub, 2)
    deliveries_attempt(delivery_ids=[first])
    time.sleep(0.1)
    deliveries_attempt(delivery_ids=[second])
    assert len(receiver.received) == 2 and receiver.connections_opened == 2


def test_a_receiver_past_the_timeout_on_a_kept_connection_is_a_failure_and_not_kept(
        kit, receiver, local_targets):
    local_targets.WEBHOOKS_TIMEOUT_SECONDS = 0.3
    sub = _subscription(kit, receiver.url())
    first, second = _backlog(kit, sub, 2)
    deliveries_attempt(delivery_ids=[first])
    receiver.answer(Answer(200, delay=1.0))
    (attempt,) = deliveries_attempt(delivery_ids=[second])
    assert attempt.error == "Timed out: no answer within 0.3 s."
    assert len(transport.connections) == 0


# --- concurrency (PostgreSQL) ----------------------------------------------------------------

def _in_threads(count: int, work) -> list:
    """Runs ``work(i)`` in ``count`` threads at once, each on its own database connection."""
    results: list = [None] * count
    errors: list = []
    start = threading.Barrier(count)

    def run(i: int) -> None:
        try:
            start.wait()
            results[i] = work(i)
        except Exception as exc:  # reported below, in the test's thread
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert errors == []
    return results


@on_postgresql
@pytest.mark.django_db(transaction=True)
def test_concurrent_batches_of_the_same_deliveries_send_each_once(kit, receiver):
    receiver.default = Answer(200, delay=0.005)  # long enough for the batches to overlap
    sub = _subscription(kit, receiver.url())
    ids = _backlog(kit, sub, 60)
    # Four workers, each given half of them, each delivery in two batches (a sweeper's and a
    # fan-out's, a message given again...): whichever claims first, the others have the rest.
    windows = [(ids * 2)[i * 15:i * 15 + 30] for i in range(4)]
    results = _in_threads(4, lambda i: deliveries_attempt(delivery_ids=windows[i]))

    assert sum(len(attempts) for attempts in results) == 60
    assert sum(1 for attempts in results if attempts) > 1  # they really ran side by side
    assert len(receiver.received) == 60
    assert len({envelope(r)["id"] for r in receiver.received}) == 60
    assert DeliveryAttempt.objects.filter(delivery_id__in=ids).count() == 60
    assert set(Delivery.objects.filter(pk__in=ids).values_list("status", "attempt_count")) == {
        ("delivered", 1)}


@on_postgresql
@pytest.mark.django_db(transaction=True)
def test_a_claimed_batch_is_skipped_not_waited_for(kit, receiver):
    sub = _subscription(kit, receiver.url())
    ids = _backlog(kit, sub, 5)
    claims = services._claim_many(ids, timezone.now())
    assert len(claims) == 5
    started = time.monotonic()
    (other,) = _in_threads(1, lambda i: services._claim_many(ids, timezone.now()))
    assert other == [] and time.monotonic() - started < 5
    assert receiver.received == []


@on_postgresql
@pytest.mark.django_db(transaction=True)
def test_a_slow_receiver_renews_the_leases_of_the_deliveries_still_waiting(
        kit, receiver, local_targets, monkeypatch):
    """Each claim's lease covers one request (timeout + margin), not the whole batch: while a
    slow receiver holds the batch, the waiting deliveries' leases are renewed, so the sweeper
    does not take them back from a worker that is alive."""
    local_targets.WEBHOOKS_TIMEOUT_SECONDS = 1
    monkeypatch.setattr(services, "LEASE_MARGIN", timedelta(seconds=0.4))
    receiver.default = Answer(200, delay=0.6)
    sub = _subscription(kit, receiver.url())
    ids = _backlog(kit, sub, 3)
    # The batch's first lease ends 1.4 s after the claim; the three answers take 1.8 s.
    worker = threading.Thread(target=lambda: (deliveries_attempt(delivery_ids=ids),
                                              connection.close()))
    worker.start()
    receiver.wait_for(3, timeout=10)  # about 1.2 s after the claim
    time.sleep(0.35)
    assert deliveries_sweep().recovered == 0
    # The results that came before a renewal were recorded then, not held to the batch's end.
    assert Delivery.objects.get(pk=ids[0]).status == "delivered"
    worker.join(timeout=10)
    assert set(Delivery.objects.filter(pk__in=ids).values_list("status", "attempt_count")) == {
        ("delivered", 1)}
    assert DeliveryAttempt.objects.filter(delivery_id__in=ids, success=True).count() == 3


def test_a_second_receiver_gets_its_own_connection(kit, receiver):
    other = WebhookReceiver()
    try:
        a, b = _subscription(kit, receiver.url()), _subscription(kit, other.url())
        deliveries_attempt(delivery_ids=_backlog(kit, a, 2))
        deliveries_attempt(delivery_ids=_backlog(kit, b, 2))
        assert (receiver.connections_opened, other.connections_opened) == (1, 1)
        assert len(transport.connections) == 2
    finally:
        other.close()


def test_both_tasks_deliver_a_batch_and_a_message_from_before_batches(kit, receiver):
    """``webhooks.deliver_many`` carries a batch; ``webhooks.deliver``, one delivery per message
    as enqueued before batches, still delivers what an upgrade finds on the broker."""
    from webhooks import tasks

    sub = _subscription(kit, receiver.url())
    first, second, third = _backlog(kit, sub, 3)
    assert tasks.deliver_many([str(first), str(second)]) == 2
    assert tasks.deliver(str(third)) is True
    assert tasks.deliver_many([str(first), str(second)]) == 0  # idempotent: nothing is due
    assert len(receiver.received) == 3
    assert set(Delivery.objects.filter(pk__in=[first, second, third]).values_list("status",
                                                                                    flat=True)) == {
        "delivered"}
