"""Every write of the webhooks: subscriptions of both surfaces, the fan-out of committed events
into delivery rows, the attempt that sends one, the sweeper, and the manual retry.

Delivery is at least once (docs/webhooks.md): a delivery row exists before anything is sent, a
worker claims it so that no two workers send it at once, the attempt is recorded after the
request, a sweeper re-enqueues whatever is due or was stranded by a dead worker, and a catch-up
creates the rows of events whose on-commit fan-out never ran. Receivers de-duplicate on the
event id, which every attempt repeats.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone

from core import broker, crypto, metrics
from core.errors import Conflict, FieldError, InvalidRequest, Unprocessable
from core.events import emit, payload
from core.models import Event, EventType
from core.sql import fetch_all
from core.work import V1_SCHEDULE, Backoff
from tenants.models import Tenant

from . import envelopes, transport
from .events import test_facts
from .models import (
    CLAIMABLE,
    Delivery,
    DeliveryAttempt,
    DeliveryStatus,
    LegacyWebhook,
    Subscription,
    SubscriptionStatus,
    Surface,
    Trigger,
)

logger = logging.getLogger("salesagent.webhooks")

# The specification's schedules: the delays after a failed attempt, before the next one
# (core.work.Backoff, which outbound emails and calendar writes use too). The legacy table lists
# six attempts (immediately, then five delays) although its prose says "after 5 failed
# attempts": we follow the table (docs/webhooks.md).
LEGACY_SCHEDULE = Backoff(V1_SCHEDULE.delays[:4] + (timedelta(hours=24),))
SCHEDULES = {Surface.V1: V1_SCHEDULE, Surface.LEGACY: LEGACY_SCHEDULE}

# A subscription every attempt of which has failed for this long is disabled.
DISABLE_AFTER = timedelta(days=5)
# A due delivery whose task has not run this long after it was enqueued is enqueued again: the
# broker may have lost the message (a restarted Redis without persistence).
REQUEUE_AFTER = timedelta(seconds=60)
# A claim outlives the request's timeout by this much before the sweeper takes it back.
LEASE_MARGIN = timedelta(seconds=60)
SWEEP_BATCH = 500
# Deliveries to one receiver that one task claims, sends one after the other over a kept
# connection, and records together (docs/webhooks.md, "How it works").
BATCH_SIZE = 25
# Events whose fan-out never ran are looked for this far back, once the hook had time to run.
CATCH_UP_WINDOW = timedelta(minutes=15)
CATCH_UP_GRACE = timedelta(seconds=30)

SECRET_MIN_LENGTH = 16
SECRET_MAX_LENGTH = 256
UNSET: Any = object()


def timeout_seconds() -> float:
    return float(getattr(settings, "WEBHOOKS_TIMEOUT_SECONDS", 30))


# --- validation -----------------------------------------------------------------------------

def _clean_url(url: Any) -> str:
    """A URL that may receive webhooks now: 400 for its shape, 422 for where it points."""
    if not isinstance(url, str) or not url.strip():
        raise InvalidRequest(details=[FieldError("url", "required", "A URL is required.")])
    url = url.strip()
    try:
        transport.check_target(url)
    except transport.TargetRefused as exc:
        error = FieldError("url", exc.code, exc.message)
        if exc.semantic:
            raise Unprocessable("The webhook URL may not receive webhooks.",
                                details=[error]) from None
        raise InvalidRequest("The webhook URL is not valid.", details=[error]) from None
    return url


def _clean_events(events: Any, allowed: tuple[str, ...]) -> list[str]:
    """The event types, in the order given, without repeats; each must be one of ``allowed``."""
    if not isinstance(events, list) or not events:
        raise InvalidRequest(details=[FieldError("events", "required",
                                                 "At least one event type is required.")])
    bad = [FieldError(f"events[{i}]", "invalid_enum", "One of " + ", ".join(allowed) + ".")
           for i, value in enumerate(events) if value not in allowed]
    if bad:
        raise InvalidRequest("Unknown event types.", details=bad)
    return list(dict.fromkeys(events))


def _clean_secret(secret: Any) -> str:
    if secret is None:
        return envelopes.new_secret()
    if not isinstance(secret, str):
        raise InvalidRequest(details=[FieldError("secret", "invalid_format", "Expected a string.")])
    if len(secret) < SECRET_MIN_LENGTH:
        raise InvalidRequest(details=[FieldError(
            "secret", "too_short", f"At least {SECRET_MIN_LENGTH} characters.")])
    if len(secret) > SECRET_MAX_LENGTH:
        raise InvalidRequest(details=[FieldError(
            "secret", "too_long", f"At most {SECRET_MAX_LENGTH} characters.")])
    return secret


# --- v1 subscriptions -----------------------------------------------------------------------

@transaction.atomic
def subscription_create(*, tenant: Tenant, livemode: bool, url: str, events: list[str],
                        secret: str | None = None) -> tuple[Subscription, str]:
    """Creates an active subscription; returns it with its secret (generated when not given),
    which the caller shows this once."""
    return _receiver_create(Subscription, tenant=tenant, livemode=livemode, url=url,
                            events=events, allowed=envelopes.V1_EVENT_TYPES, secret=secret)


def _receiver_create(model, *, tenant: Tenant, livemode: bool, url: str, events: list[str],
                     allowed: tuple[str, ...], secret: str | None):
    """A new receiver (subscription or legacy webhook): URL, event types and secret checked in
    that order; returns it with its secret."""
    url = _clean_url(url)
    events = _clean_events(events, allowed)
    secret = _clean_secret(secret)
    now = timezone.now()
    receiver = model.objects.create(
        tenant=tenant, livemode=livemode, url=url, events=events,
        secret_encrypted=crypto.encrypt(secret), created_at=now, updated_at=now,
    )
    return receiver, secret


@transaction.atomic
def subscription_update(*, subscription: Subscription, url: str = UNSET, events: list[str] = UNSET,
                        status: str = UNSET) -> Subscription:
    """Changes the URL, the event types or the status. Setting ``active`` re-enables a disabled
    subscription (and forgets its failure streak); ``disabled`` stops its deliveries."""
    current = Subscription.objects.select_for_update().get(pk=subscription.pk)
    now = timezone.now()
    if url is not UNSET:
        current.url = _clean_url(url)
    if events is not UNSET:
        current.events = _clean_events(events, envelopes.V1_EVENT_TYPES)
    if status is not UNSET:
        if status not in SubscriptionStatus.values:
            raise InvalidRequest(details=[FieldError("status", "invalid_enum", "active or disabled")])
        if status == SubscriptionStatus.ACTIVE and current.status != status:
            current.disabled_reason, current.disabled_at, current.failing_since = "", None, None
        elif status == SubscriptionStatus.DISABLED and current.status != status:
            current.disabled_reason = "Disabled through the API."
            current.disabled_at = now
        current.status = status
    current.updated_at = now
    current.save()
    return current


@transaction.atomic
def subscription_delete(*, subscription: Subscription) -> None:
    """Deletes the subscription with its deliveries: nothing more is sent to it."""
    Subscription.objects.filter(pk=subscription.pk).delete()


# --- legacy webhooks ------------------------------------------------------------------------

@transaction.atomic
def legacy_webhook_create(*, tenant: Tenant, url: str, events: list[str],
                          secret: str | None = None, livemode: bool = True,
                          ) -> tuple[LegacyWebhook, str]:
    """Configures a legacy webhook (dashboard, Settings, Webhooks); returns it with its secret."""
    return _receiver_create(LegacyWebhook, tenant=tenant, livemode=livemode, url=url,
                            events=events, allowed=envelopes.LEGACY_EVENT_TYPES, secret=secret)


@transaction.atomic
def legacy_webhook_update(*, webhook: LegacyWebhook, url: str = UNSET, events: list[str] = UNSET,
                          active: bool = UNSET, secret: str = UNSET) -> LegacyWebhook:
    """Changes a legacy webhook; a new ``secret`` signs every attempt made from now on."""
    current = LegacyWebhook.objects.select_for_update().get(pk=webhook.pk)
    if url is not UNSET:
        current.url = _clean_url(url)
    if events is not UNSET:
        current.events = _clean_events(events, envelopes.LEGACY_EVENT_TYPES)
    if active is not UNSET:
        current.active = bool(active)
    if secret is not UNSET:
        current.secret_encrypted = crypto.encrypt(_clean_secret(secret))
    current.updated_at = timezone.now()
    current.save()
    return current


@transaction.atomic
def legacy_webhook_delete(*, webhook: LegacyWebhook) -> None:
    LegacyWebhook.objects.filter(pk=webhook.pk).delete()


# --- test events ----------------------------------------------------------------------------

@transaction.atomic
def subscription_send_test(*, subscription: Subscription) -> Delivery:
    """Sends a signed ``webhook.test`` event to this subscription alone (the dashboard's "Send
    test event"); returns its delivery, whose attempt says how the receiver answered."""
    current = Subscription.objects.select_for_update().get(pk=subscription.pk)
    if current.status != SubscriptionStatus.ACTIVE:
        raise Conflict("The subscription is disabled: enable it before sending a test event.")
    return _send_test(current, Surface.V1)


@transaction.atomic
def legacy_webhook_send_test(*, webhook: LegacyWebhook) -> Delivery:
    """``subscription_send_test`` for a legacy webhook (its envelope and signature)."""
    current = LegacyWebhook.objects.select_for_update().get(pk=webhook.pk)
    if not current.active:
        raise Conflict("The legacy webhook is not active: make it active before sending a test "
                       "event.")
    return _send_test(current, Surface.LEGACY)


def _send_test(receiver: Subscription | LegacyWebhook, surface: str) -> Delivery:
    """The test event and its one delivery, enqueued after the commit. From there it is an
    ordinary delivery (claimed, signed, attempted, recorded) whose one attempt is manual, as a
    retry by hand is: a person is waiting for its answer, so a failure ends it ``failed`` rather
    than retrying a test for two days; they send another once the receiver is fixed."""
    event = emit(EventType.WEBHOOK_TEST, tenant_id=receiver.tenant_id, livemode=receiver.livemode,
                 description=f"Test event sent to {receiver.url}",
                 facts=test_facts(receiver_id=receiver.pk, surface=surface, url=receiver.url))
    delivery = _delivery_row(tenant_id=receiver.tenant_id, livemode=receiver.livemode,
                             event_id=event.pk, surface=surface, receiver_id=receiver.pk,
                             now=timezone.now())
    delivery.next_trigger = Trigger.MANUAL
    delivery.save(force_insert=True)
    transaction.on_commit(partial(enqueue, [delivery.pk]))
    return delivery


# --- fan-out --------------------------------------------------------------------------------

def on_event_committed(event: Event) -> None:
    """After-commit subscriber of every event type either surface delivers."""
    deliveries_create_for_event(event=event)


def _delivers(event: Event, surface: str) -> bool:
    """Whether ``surface`` has something to send about the event (v1 sends no ``lead.updated``
    whose changes it cannot see)."""
    return payload(event, surface) is not None


def deliveries_create_for_event(*, event: Event) -> list[uuid.UUID]:
    """One pending delivery per matching active receiver of the event's tenant and mode, each
    enqueued at once after this commits. Running it twice creates nothing more."""
    owner = {"tenant_id": event.tenant_id, "livemode": event.livemode}
    now = timezone.now()
    receivers = [(surface, receiver_id) for surface, receiver_id, types in _active_receivers(event)
                 if event.type in types]
    surfaces = {surface for surface, _ in receivers if _delivers(event, surface)}
    rows = [_delivery_row(**owner, event_id=event.pk, surface=surface, receiver_id=receiver_id,
                          now=now)
            for surface, receiver_id in receivers if surface in surfaces]
    if not rows:
        return []
    ids = [row.pk for row in rows]
    with transaction.atomic():
        Delivery.objects.bulk_create(rows, ignore_conflicts=True)
        transaction.on_commit(partial(enqueue, ids))
    return ids


# Every committed event asks this, most often of a tenant without receivers, so it is one
# statement for both kinds, written out: compiling the two ORM queries took several times as
# long as running them (docs/performance.md, "Chat").
_V1_RECEIVERS = (f"SELECT '{Surface.V1.value}', id, events FROM {Subscription._meta.db_table} "
                 "WHERE tenant_id = %s AND livemode = %s AND status = %s")
_LEGACY_RECEIVERS = (f"SELECT '{Surface.LEGACY.value}', id, events FROM {LegacyWebhook._meta.db_table} "
                     "WHERE tenant_id = %s AND livemode = %s AND active = %s")


def _active_receivers(event: Event) -> list[tuple[str, uuid.UUID, list[str]]]:
    """(surface, receiver id, event types) of the active receivers in the event's tenant and
    mode on the surfaces that carry its type."""
    tenant = Subscription._meta.get_field("tenant").get_db_prep_value(event.tenant_id, connection)
    parts, params = [], []
    if event.type in envelopes.V1_EVENT_TYPES:
        parts.append(_V1_RECEIVERS)
        params += [tenant, event.livemode, SubscriptionStatus.ACTIVE.value]
    if event.type in envelopes.LEGACY_EVENT_TYPES:
        parts.append(_LEGACY_RECEIVERS)
        params += [tenant, event.livemode, True]
    if not parts:
        return []
    # Django's connections give JSON columns as text, on SQLite and on PostgreSQL alike.
    return [(Surface(surface), uuid.UUID(str(pk)), json.loads(events))
            for surface, pk, events in fetch_all(" UNION ALL ".join(parts), params)]


def deliveries_catch_up(*, now: datetime | None = None) -> int:
    """Run by beat every minute: delivery rows for recent events whose fan-out never ran (the
    process stopped between the event's commit and its on-commit hook). Returns how many.

    Events of the last ``CATCH_UP_WINDOW`` and older than ``CATCH_UP_GRACE`` (younger ones are
    still the hook's) are matched against the active receivers that existed, as they are now,
    when the event happened (``updated_at`` no later than the event): a subscription created or
    changed afterwards does not receive earlier events.
    """
    now = now or timezone.now()
    newest = now - CATCH_UP_GRACE
    rows: list[Delivery] = []
    for (tenant_id, livemode), receivers in _receivers_by_owner(newest).items():
        rows += _missing_deliveries(tenant_id, livemode, receivers, now=now, newest=newest)
    if not rows:
        return 0
    with transaction.atomic():
        created = Delivery.objects.bulk_create(rows, ignore_conflicts=True)
        transaction.on_commit(partial(enqueue, [row.pk for row in created]))
    logger.warning("Webhook fan-out caught up %s deliveries whose events' hooks never ran",
                   len(rows))
    return len(rows)


_Receiver = tuple[str, uuid.UUID, list[str], datetime]  # surface, id, event types, since


def _receivers_by_owner(newest: datetime) -> dict[tuple[uuid.UUID, bool], list[_Receiver]]:
    """The active receivers unchanged since ``newest``, by tenant and mode."""
    groups: dict[tuple[uuid.UUID, bool], list[_Receiver]] = {}
    for surface, receivers in (
            (Surface.V1, Subscription.objects.filter(status=SubscriptionStatus.ACTIVE)),
            (Surface.LEGACY, LegacyWebhook.objects.filter(active=True))):
        for pk, tenant_id, livemode, types, since in (
                receivers.filter(updated_at__lte=newest)
                .values_list("id", "tenant_id", "livemode", "events", "updated_at")):
            groups.setdefault((tenant_id, livemode), []).append((surface, pk, types, since))
    return groups


def _missing_deliveries(tenant_id: uuid.UUID, livemode: bool, receivers: list[_Receiver], *,
                        now: datetime, newest: datetime) -> list[Delivery]:
    """The deliveries the receivers of one tenant and mode should have had and have not."""
    types = {t for _, _, subscribed, _ in receivers for t in subscribed}
    oldest = max(now - CATCH_UP_WINDOW, min(since for *_, since in receivers))
    recent = list(Event.objects.filter(tenant_id=tenant_id, livemode=livemode, type__in=types,
                                       occurred_at__gte=oldest, occurred_at__lte=newest))
    existing = _delivered_already(recent)
    return [_delivery_row(tenant_id=tenant_id, livemode=livemode, event_id=event.pk,
                          surface=receiver[0], receiver_id=receiver[1], now=now)
            for event in recent for receiver in receivers
            if (event.pk, receiver[1]) not in existing and _owed(event, receiver)]


def _delivered_already(recent: list[Event]) -> set[tuple[uuid.UUID, uuid.UUID]]:
    """(event id, receiver id) of the deliveries that exist for these events."""
    if not recent:
        return set()
    rows = Delivery.objects.filter(event_id__in=[event.pk for event in recent]).values_list(
        "event_id", "subscription_id", "legacy_webhook_id")
    return {(event_id, subscription_id or legacy_id)
            for event_id, subscription_id, legacy_id in rows}


def _owed(event: Event, receiver: _Receiver) -> bool:
    """Whether the receiver, as it is, was there for the event and subscribes to it."""
    surface, _, subscribed, since = receiver
    return event.type in subscribed and since <= event.occurred_at and _delivers(event, surface)


def _delivery_row(*, tenant_id: uuid.UUID, livemode: bool, event_id: uuid.UUID, surface: str,
                  receiver_id: uuid.UUID, now: datetime) -> Delivery:
    receiver = ({"subscription_id": receiver_id} if surface == Surface.V1
                else {"legacy_webhook_id": receiver_id})
    return Delivery(tenant_id=tenant_id, livemode=livemode, surface=surface, event_id=event_id,
                    next_attempt_at=now, enqueued_at=now, created_at=now, updated_at=now,
                    **receiver)


def enqueue(delivery_ids: Iterable[uuid.UUID]) -> None:
    """Puts the deliveries on the broker (``core.broker.publish``): one ``webhooks.deliver_many``
    message per ``BATCH_SIZE`` deliveries to one receiver, so that a backlog is claimed, sent
    over one kept connection and recorded in batches. A broker that cannot be reached loses
    nothing and holds nobody: the rows stay due, marked as carried by no task, and the sweeper's
    next pass after the broker is back enqueues them."""
    from .tasks import deliver_many

    ids = [uuid.UUID(str(delivery_id)) for delivery_id in delivery_ids]
    if not broker.publish(deliver_many, _batches(ids)):
        Delivery.objects.filter(pk__in=ids, status__in=CLAIMABLE).update(enqueued_at=None)


def _batches(ids: list[uuid.UUID]) -> list[list[str]]:
    """The ids in messages of at most ``BATCH_SIZE``, each for one receiver, in the given order.

    One message per receiver, not a mix: a batch is sent one delivery after the other, so a
    receiver that is slow to answer delays its own deliveries only, never another's.
    """
    if len(ids) <= 1:
        return [[str(pk)] for pk in ids]
    receiver_of = {pk: subscription or legacy for pk, subscription, legacy in
                   Delivery.objects.filter(pk__in=ids).values_list(
                       "pk", "subscription_id", "legacy_webhook_id")}
    groups: dict[Any, list[str]] = {}
    for pk in ids:
        groups.setdefault(receiver_of.get(pk), []).append(str(pk))
    return [group[i:i + BATCH_SIZE] for group in groups.values()
            for i in range(0, len(group), BATCH_SIZE)]


# --- attempts -------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Claim:
    delivery: Delivery
    token: uuid.UUID
    number: int
    trigger: str
    # Whether a failure of this attempt goes on with the schedule: a scheduled attempt does, and
    # so does a manual one that brought a waiting delivery's next attempt forward ("Retry now");
    # a manual try of a settled delivery does not.
    scheduled: bool


def _claimed(token: uuid.UUID, now: datetime) -> dict[str, Any]:
    lease = now + timedelta(seconds=timeout_seconds()) + LEASE_MARGIN
    return {"status": DeliveryStatus.DELIVERING, "claim_token": token, "lease_expires_at": lease,
            "last_attempt_at": now, "updated_at": now}


def _as_claim(delivery: Delivery, token: uuid.UUID, before: str) -> _Claim:
    return _Claim(delivery=delivery, token=token, number=delivery.attempt_count,
                  trigger=delivery.next_trigger,
                  scheduled=(delivery.next_trigger == Trigger.SCHEDULED
                             or before == DeliveryStatus.WAITING_RETRY))


def _claim_many(delivery_ids: Sequence[uuid.UUID], now: datetime) -> list[_Claim]:
    """Marks the due deliveries among ``delivery_ids`` ``delivering`` for this worker alone, in
    the given order; those not due, already taken, or gone are left out. Each comes back with its
    event and receiver."""
    if not connection.features.has_select_for_update_skip_locked:
        return [claim for claim in (_claim_unlocked(pk, now) for pk in delivery_ids) if claim]
    token = uuid.uuid4()
    claimed = _claimed(token, now)
    with transaction.atomic():
        # A row another worker holds is taken: skip it, do not wait. Only the deliveries are
        # locked (their receivers are on the nullable side of a join).
        rows = list(Delivery.objects.select_related("event", "subscription", "legacy_webhook")
                    .filter(pk__in=delivery_ids, status__in=CLAIMABLE, next_attempt_at__lte=now)
                    .order_by().select_for_update(skip_locked=True, of=("self",)))
        if rows:
            Delivery.objects.filter(pk__in=[row.pk for row in rows]).update(
                **claimed, attempt_count=F("attempt_count") + 1)
    claims = {row.pk: _taken(row, token, claimed) for row in rows}
    return [claims[pk] for pk in delivery_ids if pk in claims]


def _taken(row: Delivery, token: uuid.UUID, claimed: dict[str, Any]) -> _Claim:
    """The claim of ``row`` as read before its claim's UPDATE, brought up to date."""
    before = row.status
    for field, value in claimed.items():
        setattr(row, field, value)
    row.attempt_count += 1
    return _as_claim(row, token, before)


def _claim_unlocked(delivery_id: uuid.UUID, now: datetime) -> _Claim | None:
    """One delivery's claim where there are no row locks (SQLite): the status condition of the
    UPDATE is the claim, and one writer wins. The status it had is part of the condition, so
    the winner knows it."""
    token = uuid.uuid4()
    conditions = {"pk": delivery_id, "status__in": CLAIMABLE, "next_attempt_at__lte": now}
    with transaction.atomic():
        before = Delivery.objects.filter(**conditions).values_list("status", flat=True).first()
        due = Delivery.objects.filter(**conditions, status=before)
        if before is None or due.update(**_claimed(token, now),
                                        attempt_count=F("attempt_count") + 1) != 1:
            return None
        delivery = (Delivery.objects.select_related("event", "subscription", "legacy_webhook")
                    .get(pk=delivery_id))
    return _as_claim(delivery, token, before)


def delivery_attempt(*, delivery_id: uuid.UUID, now: datetime | None = None
                     ) -> DeliveryAttempt | None:
    """Sends a due delivery once and records the attempt; None when there was nothing to send
    (not due, taken by another worker, gone, or its receiver disabled).

    ``now`` is the clock of the schedule (tests move it); the request's own timestamp and timing
    are real.
    """
    attempts = deliveries_attempt(delivery_ids=[delivery_id], now=now)
    return attempts[0] if attempts else None


def deliveries_attempt(*, delivery_ids: Sequence[uuid.UUID], now: datetime | None = None
                       ) -> list[DeliveryAttempt]:
    """Sends each due delivery of ``delivery_ids`` once, in order, and records the attempts:
    one claim for all of them, their requests one after the other (over a kept connection to
    their receiver, ``transport.connections``), and their attempts written together. Returns the
    attempts recorded; deliveries not due, taken by another worker, gone or whose receiver is
    disabled send nothing.

    ``now``, when given, is the clock of the schedule for every attempt (tests move it);
    otherwise each attempt is timed when it is made. The requests' own timestamps and timings
    are real.
    """
    clock = (lambda: now) if now is not None else timezone.now
    claims = _claim_many(list(delivery_ids), clock())
    batch = _Batch(clock)
    for index, claim in enumerate(claims):
        batch.keep_leases(claims[index:])
        batch.send(claim)
    batch.flush()
    return batch.attempts


class _Batch:
    """The attempts of one claim of deliveries: their secrets read once per receiver, their
    results recorded together, and their leases renewed while a slow receiver keeps the later
    ones waiting (each lease covers one request: a worker that dies is found out as soon as for a
    single delivery)."""

    def __init__(self, clock):
        self.clock = clock
        self.timeout = timeout_seconds()
        self.leased_until = time.monotonic() + self.timeout + LEASE_MARGIN.total_seconds()
        self.secrets: dict[uuid.UUID, str] = {}
        self.results: list[tuple[_Claim, uuid.UUID, transport.Outcome, datetime]] = []
        self.attempts: list[DeliveryAttempt] = []
        self.dropped: set[uuid.UUID] = set()

    def keep_leases(self, waiting: list[_Claim]) -> None:
        """Before the next request: when the lease left could not cover it, the results so far
        are recorded and the waiting deliveries' leases renewed (those taken back meanwhile by
        the sweeper are dropped from the batch)."""
        if time.monotonic() + self.timeout + LEASE_MARGIN.total_seconds() / 2 < self.leased_until:
            return
        self.flush()
        self.dropped |= {claim.delivery.pk for claim in waiting} - _renew_leases(waiting,
                                                                                 self.clock())
        self.leased_until = time.monotonic() + self.timeout + LEASE_MARGIN.total_seconds()

    def send(self, claim: _Claim) -> None:
        delivery = claim.delivery
        if delivery.pk in self.dropped:
            return
        at = self.clock()
        receiver = delivery.subscription or delivery.legacy_webhook
        if receiver is None or not _receiver_active(delivery):
            _give_up(delivery, token=claim.token, now=at,
                     reason="Not sent: the receiver is disabled.")
            return
        attempt_pk = uuid.uuid4()
        if receiver.pk not in self.secrets:
            self.secrets[receiver.pk] = receiver.secret
        outcome = _send(delivery, receiver, secret=self.secrets[receiver.pk],
                        attempt_pk=attempt_pk, timeout=self.timeout)
        self.results.append((claim, attempt_pk, outcome, at))

    def flush(self) -> None:
        results, self.results = self.results, []
        self.attempts += _record_many(results)


def _send(delivery: Delivery, receiver: Subscription | LegacyWebhook, *, secret: str,
          attempt_pk: uuid.UUID, timeout: float) -> transport.Outcome:
    """The request of one attempt (signed with the receiver's secret) and how it went."""
    if not secret:
        return transport.Outcome(None, 0, error="Not sent: the signing secret cannot be read "
                                                "(FIELD_ENCRYPTION_KEY changed?).")
    if delivery.surface == Surface.V1:
        body, headers = envelopes.v1_request(delivery.event, secret=secret,
                                             attempt=envelopes.attempt_id(attempt_pk),
                                             timestamp=int(time.time()))
    else:
        body, headers = envelopes.legacy_request(delivery.event, secret=secret,
                                                 attempt=envelopes.attempt_id(attempt_pk))
    return transport.post(receiver.url, body, headers, timeout=timeout)


def _renew_leases(claims: list[_Claim], now: datetime) -> set[uuid.UUID]:
    """Extends the leases of the claims still held; returns their deliveries' ids."""
    lease = now + timedelta(seconds=timeout_seconds()) + LEASE_MARGIN
    with transaction.atomic():
        held = _still_held(claims)
        Delivery.objects.filter(pk__in=held).update(lease_expires_at=lease)
    return held


def _still_held(claims: Iterable[_Claim]) -> set[uuid.UUID]:
    """Which of the claims are still this worker's, locked until the transaction ends (the
    sweeper takes back a claim whose lease ran out, and the receiver's deletion takes its
    deliveries)."""
    tokens = {claim.delivery.pk: claim.token for claim in claims}
    rows = (Delivery.objects.select_for_update()
            .filter(pk__in=list(tokens), status=DeliveryStatus.DELIVERING)
            .order_by().values_list("pk", "claim_token"))
    return {pk for pk, token in rows if tokens[pk] == token}


def _receiver_active(delivery: Delivery) -> bool:
    if delivery.subscription is not None:
        return delivery.subscription.status == SubscriptionStatus.ACTIVE
    return delivery.legacy_webhook.active


def _give_up(delivery: Delivery, *, token: uuid.UUID, now: datetime, reason: str) -> None:
    Delivery.objects.filter(pk=delivery.pk, claim_token=token).update(
        status=DeliveryStatus.FAILED, attempt_count=F("attempt_count") - 1,
        next_attempt_at=None, lease_expires_at=None, claim_token=None, enqueued_at=None,
        last_error=reason, updated_at=now)


# Every field an attempt's settlement may change (``_settlement``).
_SETTLED_FIELDS = ("status", "last_status_code", "last_error", "lease_expires_at", "claim_token",
                   "enqueued_at", "next_trigger", "updated_at", "delivered_at", "next_attempt_at",
                   "last_attempt_at")


def _write_settlements(deliveries: list[Delivery]) -> None:
    """The settled fields of these (locked) deliveries: one UPDATE by primary key each, sent
    with ``executemany``, which psycopg pipelines into one round trip. The ORM's
    ``bulk_update`` builds a CASE per field and row, and compiling it cost ten times what the
    deliveries' requests did (docs/performance.md, "Webhooks")."""
    quote = connection.ops.quote_name
    fields = [Delivery._meta.get_field(name) for name in _SETTLED_FIELDS]
    pk = Delivery._meta.pk
    sql = (f"UPDATE {quote(Delivery._meta.db_table)} SET "
           + ", ".join(f"{quote(field.column)} = %s" for field in fields)
           + f" WHERE {quote(pk.column)} = %s")
    rows = [[field.get_db_prep_save(getattr(delivery, field.attname), connection)
             for field in fields] + [pk.get_db_prep_save(delivery.pk, connection)]
            for delivery in deliveries]
    with connection.cursor() as cursor:
        cursor.executemany(sql, rows)


@transaction.atomic
def _record_many(results: list[tuple[_Claim, uuid.UUID, transport.Outcome, datetime]]
                 ) -> list[DeliveryAttempt]:
    """Settles the deliveries of these results and writes their attempts, in one transaction:
    one UPDATE for the deliveries and one INSERT for the attempts. Only the holder of a claim
    settles it: a result whose claim was taken back meanwhile (its lease overran) or whose
    delivery is gone is dropped."""
    if not results:
        return []
    held = _still_held(claim for claim, *_ in results)
    settled, attempts, after = [], [], []
    for claim, attempt_pk, outcome, at in results:
        delivery = claim.delivery
        if delivery.pk not in held:
            logger.warning("Webhook delivery %s: result of attempt %s dropped, the claim is gone",
                           delivery.pk, claim.number)
            continue
        changes = _settlement(delivery, number=claim.number,
                              scheduled=claim.scheduled and not outcome.permanent,
                              success=outcome.success, status_code=outcome.status_code,
                              error=outcome.error, now=at)
        for field, value in {**changes, "last_attempt_at": at}.items():
            setattr(delivery, field, value)
        settled.append(delivery)
        attempts.append(DeliveryAttempt(
            id=attempt_pk, delivery=delivery, number=claim.number, trigger=claim.trigger,
            attempted_at=at, status_code=outcome.status_code, duration_ms=outcome.duration_ms,
            success=outcome.success, error=outcome.error[:500], response_excerpt=outcome.excerpt,
            remote_address=outcome.remote_address))
        after.append((delivery, changes, outcome))
    if settled:
        _write_settlements(settled)
        DeliveryAttempt.objects.bulk_create(attempts)
    for delivery, changes, outcome in after:
        _after_settling(delivery, changes, success=outcome.success, error=outcome.error,
                        now=changes["updated_at"])
    return attempts


def _settlement(delivery: Delivery, *, number: int, scheduled: bool, success: bool,
                status_code: int | None, error: str, now: datetime) -> dict[str, Any]:
    """The delivery's fields after attempt ``number``: delivered, waiting for the next step of
    its schedule (``scheduled``: the attempt belongs to the schedule), or failed."""
    changes: dict[str, Any] = {
        "last_status_code": status_code, "last_error": error[:500], "lease_expires_at": None,
        "claim_token": None, "enqueued_at": None, "next_trigger": Trigger.SCHEDULED,
        "updated_at": now,
    }
    if success:
        return {**changes, "status": DeliveryStatus.DELIVERED, "delivered_at": now,
                "next_attempt_at": None}
    # A manual try of a settled delivery is one more try, never the start of a schedule.
    later = SCHEDULES[delivery.surface].next_attempt_at(number, now) if scheduled else None
    if later is not None:
        return {**changes, "status": DeliveryStatus.WAITING_RETRY, "next_attempt_at": later}
    return {**changes, "status": DeliveryStatus.FAILED, "next_attempt_at": None}


def _after_settling(delivery: Delivery, changes: dict[str, Any], *, success: bool, error: str,
                    now: datetime) -> None:
    metrics.work_attempt("webhook_delivery", changes.get("status"), succeeded=DeliveryStatus.DELIVERED,
                         failed=DeliveryStatus.FAILED)
    if changes.get("status") == DeliveryStatus.FAILED and delivery.surface == Surface.LEGACY:
        logger.warning("Legacy webhook delivery %s dropped after %s attempts: %s",
                       delivery.pk, delivery.attempt_count, error)
    if delivery.subscription_id is None:
        return
    if success and delivery.subscription.failing_since is None:
        # No streak as of the claim: nothing to clear. A failure of another delivery recorded
        # while this attempt was in flight keeps its streak start until the next success: the
        # streak is then early by at most one attempt's duration.
        return
    _subscription_health(delivery.subscription_id, success=success, error=error, now=now)


def _subscription_health(subscription_id: uuid.UUID, *, success: bool, error: str,
                         now: datetime) -> None:
    """Keeps the failure streak; five days of nothing but failures disable the subscription."""
    subs = Subscription.objects.filter(pk=subscription_id)
    if success:
        subs.filter(failing_since__isnull=False).update(failing_since=None)
        return
    subs.filter(failing_since__isnull=True).update(failing_since=now)
    streak_start = subs.values_list("failing_since", flat=True).first()
    if streak_start is not None and now - streak_start >= DISABLE_AFTER:
        reason = (f"Disabled automatically: every delivery attempt failed for 5 days in a row "
                  f"(since {streak_start:%Y-%m-%d %H:%M} UTC; last error: {error})")[:500]
        subs.filter(status=SubscriptionStatus.ACTIVE).update(
            status=SubscriptionStatus.DISABLED, disabled_reason=reason, disabled_at=now,
            updated_at=now)


# --- the sweeper ----------------------------------------------------------------------------

@dataclass(frozen=True)
class SweepResult:
    enqueued: int
    recovered: int


def deliveries_sweep(*, now: datetime | None = None, batch: int = SWEEP_BATCH) -> SweepResult:
    """Run by beat every few seconds: takes back deliveries whose worker died mid-attempt, and
    enqueues the due ones that no task is known to be carrying. Safe to run twice at once."""
    now = now or timezone.now()
    recovered = _recover_stranded(now, batch)
    skip_locked = connection.features.has_select_for_update_skip_locked
    with transaction.atomic():
        due = (Delivery.objects.filter(status__in=CLAIMABLE, next_attempt_at__lte=now)
               .exclude(enqueued_at__gt=now - REQUEUE_AFTER)
               .order_by("next_attempt_at"))
        if skip_locked:
            due = due.select_for_update(skip_locked=True)
        ids = list(due.values_list("pk", flat=True)[:batch])
        if ids:
            Delivery.objects.filter(pk__in=ids).update(enqueued_at=now)
    # The rows were committed long ago; only enqueued_at changed, so no need to wait for a commit.
    enqueue(ids)
    return SweepResult(enqueued=len(ids), recovered=recovered)


def _recover_stranded(now: datetime, batch: int) -> int:
    """A ``delivering`` delivery past its lease lost its worker: its attempt counts as failed
    (the request may or may not have left) and the schedule goes on."""
    skip_locked = connection.features.has_select_for_update_skip_locked
    count = 0
    with transaction.atomic():
        stranded = Delivery.objects.filter(status=DeliveryStatus.DELIVERING,
                                           lease_expires_at__lt=now).order_by("lease_expires_at")
        if skip_locked:
            stranded = stranded.select_for_update(skip_locked=True)
        for delivery in list(stranded[:batch]):
            # Re-checked in the UPDATE, so a worker finishing right now wins cleanly.
            took = Delivery.objects.filter(pk=delivery.pk, claim_token=delivery.claim_token,
                                           status=DeliveryStatus.DELIVERING).update(claim_token=None)
            if took != 1:
                continue
            error = "No result: the worker stopped before the attempt finished (lease expired)."
            DeliveryAttempt.objects.create(
                delivery=delivery, number=delivery.attempt_count, trigger=delivery.next_trigger,
                attempted_at=delivery.last_attempt_at or now, error=error)
            # Which status a manual attempt was claimed from is not kept: a stranded one ends
            # the delivery failed (retriable by hand), like a manual try of a settled delivery.
            changes = _settlement(delivery, number=delivery.attempt_count,
                                  scheduled=delivery.next_trigger == Trigger.SCHEDULED,
                                  success=False, status_code=None,
                                  error=error, now=now)
            Delivery.objects.filter(pk=delivery.pk).update(**changes)
            _after_settling(delivery, changes, success=False, error=error, now=now)
            count += 1
    return count


# --- manual retry ---------------------------------------------------------------------------

RETRIABLE = (DeliveryStatus.FAILED, DeliveryStatus.DELIVERED)


@transaction.atomic
def delivery_retry(*, delivery: Delivery) -> Delivery:
    """Sends a delivery now, by hand (the dashboard's Retry and Retry now, the API's retry).

    - A settled v1 delivery is sent once more: a failed one after its receiver is fixed, a
      delivered one as a replay. If that try fails, the delivery is failed again (no new
      schedule).
    - A delivery waiting for its next attempt (either surface) has that attempt brought forward:
      it is made now, and if it fails the schedule goes on from it, as if it had fallen due.

    Either way the attempt is recorded as manual and made by a worker that claims the delivery
    as for any attempt, so it is sent once.
    """
    current = (Delivery.objects.select_for_update(of=("self",))
               .select_related("subscription", "legacy_webhook").get(pk=delivery.pk))
    now = timezone.now()
    _check_retriable(current, now=now)
    waiting = current.status == DeliveryStatus.WAITING_RETRY
    changes = {"status": DeliveryStatus.WAITING_RETRY if waiting else DeliveryStatus.PENDING,
               "next_trigger": Trigger.MANUAL, "next_attempt_at": now, "enqueued_at": now,
               "updated_at": now}
    # Without row locks (SQLite) a worker may have claimed the delivery since it was read: the
    # UPDATE's condition is what was read, and a delivery taken meanwhile is left alone.
    kept = Delivery.objects.filter(pk=current.pk, status=current.status,
                                   next_attempt_at=current.next_attempt_at).update(**changes)
    if kept != 1:
        raise Conflict("The delivery is being attempted right now: reload to see the result.")
    for field, value in changes.items():
        setattr(current, field, value)
    transaction.on_commit(partial(enqueue, [current.pk]))
    return current


def _check_retriable(delivery: Delivery, *, now: datetime) -> None:
    """Raises Conflict unless ``delivery_retry`` may send the delivery now."""
    if delivery.status == DeliveryStatus.WAITING_RETRY:
        if delivery.next_attempt_at is not None and delivery.next_attempt_at <= now:
            raise Conflict("The delivery's next attempt is due: it is on its way now.")
    elif delivery.surface != Surface.V1:
        raise Conflict("Legacy deliveries are not retried by hand once settled (manual retry "
                       "is a v1 feature).")
    elif delivery.status not in RETRIABLE:
        raise Conflict(f"The delivery is {delivery.status.replace('_', ' ')}: it is on its way. "
                       "Only failed, delivered or waiting deliveries can be retried by hand.")
    if not _receiver_active(delivery):
        raise Conflict("The subscription is disabled: re-enable it (PATCH status=active) first."
                       if delivery.surface == Surface.V1
                       else "The legacy webhook is not active: make it active first.")
