"""Erasure, export and retention of a person's data (docs/privacy.md).

An erasure is a row (``Erasure``) and two steps. The records step removes the person from every
table in one transaction (``privacy.erasure``) and forgets the value that named them. The
calendar step removes the meetings' events from the hosts' calendars, over the network, after
the commit; a calendar that cannot be reached is retried with backoff by the sweeper, and the
erasure completes when the last event is gone (or fails, saying why, after ``MAX_ATTEMPTS``).

``POST /api/v1/privacy/erasures`` and the dashboard accept an erasure and leave both steps to a
Celery task; ``DELETE`` of a lead or of a conversation runs the records step in the request, so
that the 204 means the data is gone.
"""

from __future__ import annotations

import logging
import uuid
from collections import Counter
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from calendars.errors import CalendarUnavailable
from calendars.services import calendar_event_remove
from conversations.models import Conversation, ConversationStatus, Message
from core import broker, crypto
from core.errors import FieldError, NotFound, Unprocessable
from core.events import emit
from core.models import Event, EventType
from leads.models import Lead
from leads.vocabulary import LeadStatus
from tenants.models import Tenant

from . import export
from .erasure import emails_of, erase_records, meetings_of
from .events import erasure_facts
from .models import ERASED_KINDS, Erasure, ErasureStatus, SubjectKind
from .person import Person, find

logger = logging.getLogger("salesagent.privacy")

MAX_ATTEMPTS = 8
# A pending erasure whose task never ran (a broker that lost it) is run by the sweeper after this.
STALE_AFTER = timedelta(minutes=2)
# At most this many records of each kind per tenant per retention run; the next run goes on.
RETENTION_BATCH = 200
RETENTION_EVENT_BATCH = 5000


# --- requests -------------------------------------------------------------------------------

def erasure_request(*, tenant: Tenant, livemode: bool, kind: str, value: str,
                    requested_by: str) -> Erasure:
    """Accepts the erasure of the person named by ``value`` (a lead's UUID, an email address, a
    phone number or a visitor id, as ``kind`` says); the Celery task ``privacy.erase`` does it.
    A lead id that names no lead of the caller is ``NotFound``; an address, phone or visitor
    that the service does not know completes with nothing removed."""
    subject_id = None
    if kind == SubjectKind.LEAD:
        if not Lead.objects.filter(tenant=tenant, livemode=livemode, pk=value).exists():
            raise NotFound("No lead with this id.")
        subject_id = uuid.UUID(str(value))
    with transaction.atomic():
        erasure = Erasure.objects.create(
            tenant=tenant, livemode=livemode, subject_kind=kind, subject_id=subject_id,
            subject_encrypted="" if subject_id else crypto.encrypt(value),
            requested_by=requested_by[:200])
        transaction.on_commit(lambda: _enqueue(erasure.pk))
    return erasure


def lead_erase(*, lead: Lead, requested_by: str, search_history: bool = False) -> Erasure:
    """``DELETE /leads/{id}`` and the dashboard's "Erase this person": the person behind the
    lead, erased before the answer. The dashboard, a request to erase a person, also searches
    the history (``erase_records``)."""
    return _erase_now(tenant=lead.tenant, livemode=lead.livemode, kind=SubjectKind.LEAD,
                      subject_id=lead.pk, requested_by=requested_by,
                      search_history=search_history,
                      person=lambda: find(tenant=lead.tenant, livemode=lead.livemode,
                                          kind=SubjectKind.LEAD, value=str(lead.pk)))


def conversation_erase(*, conversation: Conversation, requested_by: str) -> Erasure:
    """``DELETE /conversations/{id}``: the conversation, its messages and what it gathered, and
    their trace everywhere; its lead stays."""
    return _erase_now(tenant=conversation.tenant, livemode=conversation.livemode,
                      kind=SubjectKind.CONVERSATION, subject_id=conversation.pk,
                      requested_by=requested_by, search_history=False,
                      person=lambda: Person(conversation.tenant, conversation.livemode,
                                            conversations=[conversation]))


def _erase_now(*, tenant: Tenant, livemode: bool, kind: str, subject_id: uuid.UUID,
               requested_by: str, search_history: bool, person) -> Erasure:
    with transaction.atomic():
        erasure = Erasure.objects.create(tenant=tenant, livemode=livemode, subject_kind=kind,
                                         subject_id=subject_id, requested_by=requested_by[:200])
        _records(erasure, person(), search_history=search_history)
        if erasure.calendar_pending:
            transaction.on_commit(lambda: _enqueue(erasure.pk))
    return erasure


def _enqueue(erasure_id: uuid.UUID) -> None:
    from .tasks import erase

    # A broker that cannot be reached holds nothing: the sweeper runs the erasure later.
    broker.publish(erase, [str(erasure_id)])


# --- the steps ------------------------------------------------------------------------------

def erasure_run(*, erasure_id: Any, now: datetime | None = None) -> Erasure | None:
    """Runs what is left of a pending erasure. Idempotent: a finished one is left alone."""
    now = now or timezone.now()
    with transaction.atomic():
        erasure = Erasure.objects.select_for_update().filter(
            pk=erasure_id, status=ErasureStatus.PENDING).first()
        if erasure is None:
            return None
        if not erasure.records_erased:
            _records(erasure, _person_of(erasure), search_history=True)
    if erasure.status == ErasureStatus.PENDING:
        _calendars(erasure, now=now)
    return erasure


def _person_of(erasure: Erasure) -> Person:
    value = str(erasure.subject_id) if erasure.subject_id else crypto.decrypt(erasure.subject_encrypted)
    return find(tenant=erasure.tenant, livemode=erasure.livemode, kind=erasure.subject_kind,
                value=value)


def _records(erasure: Erasure, person: Person, *, search_history: bool) -> None:
    whole = erasure.subject_kind != SubjectKind.CONVERSATION
    needles = person.needles() if whole else _conversation_needles(person)
    counts, calendar = erase_records(person, needles=needles, whole_person=whole,
                                     search_history=search_history)
    erasure.counts = {**dict.fromkeys(ERASED_KINDS, 0), **counts}
    erasure.calendar_pending = calendar
    erasure.records_erased = True
    erasure.subject_encrypted = ""
    update = ["counts", "calendar_pending", "records_erased", "subject_encrypted"]
    if not calendar:
        erasure.status, erasure.completed_at = ErasureStatus.COMPLETED, timezone.now()
        update += ["status", "completed_at"]
        _announce(erasure)
    erasure.save(update_fields=update)


def _conversation_needles(person: Person) -> list[str]:
    """A conversation alone: what the visitor typed and the visitor id, not the lead's own
    address (the lead stays, and so do other records that rightly name it)."""
    typed = set(person.needles()) - set(person.emails) - set(person.phones)
    for conversation in person.conversations:
        typed -= {str(v) for v in conversation.contact.values()}
    return sorted(typed)


def _calendars(erasure: Erasure, *, now: datetime) -> None:
    """Removes the events still in hosts' calendars; what cannot be reached waits for the next
    attempt."""
    left, reason = [], ""
    for item in erasure.calendar_pending:
        try:
            calendar_event_remove(tenant=erasure.tenant, host_id=item["host"], href=item["href"])
        except CalendarUnavailable as exc:
            left.append(item)
            reason = str(exc)
    with transaction.atomic():
        current = Erasure.objects.select_for_update().get(pk=erasure.pk)
        removed = len(current.calendar_pending) - len(left)
        current.counts = {**current.counts,
                          "calendarEvents": current.counts.get("calendarEvents", 0) + removed}
        current.calendar_pending = left
        current.attempts += 1
        if not left:
            current.status, current.completed_at = ErasureStatus.COMPLETED, now
            _announce(current)
        elif current.attempts >= MAX_ATTEMPTS:
            current.status, current.completed_at = ErasureStatus.FAILED, now
            current.failure_reason = (f"{len(left)} calendar event(s) could not be removed: "
                                      f"{reason}")[:500]
        else:
            current.failure_reason = reason[:500]
            current.next_attempt_at = now + _wait(current.attempts)
        current.save()
    erasure.refresh_from_db()


def _wait(attempts: int) -> timedelta:
    """Before the calendar step's next attempt: 1, 2, 4 ... minutes, at most an hour."""
    return timedelta(minutes=min(60, 2 ** max(0, attempts - 1)))


def _announce(erasure: Erasure) -> None:
    counts = {k: v for k, v in erasure.counts.items() if v}
    emit(EventType.DATA_ERASED, tenant_id=erasure.tenant_id, livemode=erasure.livemode,
         description=f"Personal data erased ({erasure.get_subject_kind_display().lower()}): "
                     + (", ".join(f"{v} {k}" for k, v in counts.items()) or "nothing was stored"),
         facts=erasure_facts(erasure, erasure.counts))


def erasures_sweep(*, now: datetime | None = None) -> int:
    """Runs the pending erasures that are due (beat, every minute): those whose task a broker
    lost, and those whose calendar step waits for its next attempt."""
    now = now or timezone.now()
    due = Erasure.objects.filter(status=ErasureStatus.PENDING).filter(
        Q(next_attempt_at__lte=now) | Q(next_attempt_at=None, created_at__lte=now - STALE_AFTER))
    pks = list(due.order_by("created_at").values_list("pk", flat=True)[:100])
    for pk in pks:
        erasure_run(erasure_id=pk, now=now)
    return len(pks)


# --- the dashboard's confirmation ---------------------------------------------------------

def erasure_preview(*, lead: Lead) -> dict[str, int]:
    """What erasing the person behind ``lead`` removes, kind by kind (before anything goes)."""
    person = find(tenant=lead.tenant, livemode=lead.livemode, kind=SubjectKind.LEAD,
                  value=str(lead.pk))
    meeting_ids = list(meetings_of(person).values_list("pk", flat=True))
    return {
        "leads": len(person.leads),
        "conversations": len(person.conversations),
        "messages": Message.objects.filter(conversation__in=person.conversation_ids).count(),
        "meetings": len(meeting_ids),
        "emails": emails_of(person, meeting_ids=meeting_ids).count(),
    }


# --- export ---------------------------------------------------------------------------------

def person_export(*, tenant: Tenant, livemode: bool, kind: str, value: str) -> dict[str, Any]:
    """Everything stored about the person (``privacy.export``); ``NotFound`` when nothing is."""
    person = find(tenant=tenant, livemode=livemode, kind=kind, value=value)
    if not person:
        raise NotFound("The service keeps nothing about this person.")
    return export.document(person)


# --- retention ------------------------------------------------------------------------------

RETENTION_DAYS = (1, 3650)
RETENTION_FIELDS = ("retention_conversation_days", "retention_lead_days", "retention_event_days")


def retention_set(*, tenant: Tenant, **days: int | None) -> Tenant:
    """Sets any of the tenant's retention periods (``RETENTION_FIELDS``), in days, or None for
    no limit (the default); a period outside ``RETENTION_DAYS`` is ``Unprocessable`` naming its
    field. The next hourly run applies them."""
    low, high = RETENTION_DAYS
    problems = [FieldError(name, "out_of_range", f"Between {low} and {high} days, or none.")
                for name, value in days.items()
                if value is not None and not low <= value <= high]
    unknown = set(days) - set(RETENTION_FIELDS)
    if unknown:
        raise ValueError(f"Not retention settings: {sorted(unknown)}")
    if problems:
        raise Unprocessable("The retention settings were not saved.", details=problems)
    for name, value in days.items():
        setattr(tenant, name, value)
    tenant.save(update_fields=[*days, "updated_at"])
    return tenant


def retention_run(*, tenant: Tenant, now: datetime | None = None) -> dict[str, int]:
    """Erases what is older than the tenant's retention settings, in both modes (beat, hourly):
    conversations with their messages, leads that never converted, and events. One
    ``data.expired`` event per mode says what went."""
    now = now or timezone.now()
    total: Counter = Counter()
    for livemode in (True, False):
        counts: Counter = Counter()
        if days := tenant.retention_conversation_days:
            old = Conversation.objects.filter(
                tenant=tenant, livemode=livemode, last_message_at__lt=now - timedelta(days=days)
            ).exclude(status=ConversationStatus.ACTIVE)[:RETENTION_BATCH]
            for conversation in old:
                erasure = conversation_erase(conversation=conversation, requested_by="Retention")
                counts.update(_kept(erasure.counts, "conversations", "messages"))
        if days := tenant.retention_lead_days:
            old = Lead.objects.filter(
                tenant=tenant, livemode=livemode, last_active_at__lt=now - timedelta(days=days)
            ).exclude(status=LeadStatus.CONVERTED)[:RETENTION_BATCH]
            for lead in old:
                erasure = lead_erase(lead=lead, requested_by="Retention")
                counts.update(_kept(erasure.counts, "leads", "conversations", "messages"))
        if days := tenant.retention_event_days:
            counts["events"] += _expire_events(tenant, livemode, before=now - timedelta(days=days))
        if counts:
            _record_retention(tenant, livemode, counts, now=now)
        total.update(counts)
    return dict(total)


def _kept(counts: dict[str, int], *kinds: str) -> Counter:
    return Counter({kind: counts.get(kind, 0) for kind in kinds})


def _expire_events(tenant: Tenant, livemode: bool, *, before: datetime) -> int:
    old = Event.objects.filter(tenant=tenant, livemode=livemode, occurred_at__lt=before)
    pks = list(old.order_by("occurred_at").values_list("pk", flat=True)[:RETENTION_EVENT_BATCH])
    return Event.objects.filter(pk__in=pks).delete()[1].get("core.Event", 0)


def _record_retention(tenant: Tenant, livemode: bool, counts: Counter, *, now: datetime) -> None:
    with transaction.atomic():
        erasure = Erasure.objects.create(
            tenant=tenant, livemode=livemode, subject_kind=SubjectKind.RETENTION,
            requested_by="Retention", counts=dict(counts), records_erased=True,
            status=ErasureStatus.COMPLETED, completed_at=now)
        facts = erasure_facts(erasure, counts)
        facts["older_than_days"] = {
            "conversations": tenant.retention_conversation_days,
            "leads": tenant.retention_lead_days, "events": tenant.retention_event_days}
        emit(EventType.DATA_EXPIRED, tenant_id=tenant.pk, livemode=livemode,
             description="Retention: " + ", ".join(f"{v} {k}" for k, v in counts.items())
                         + " older than the tenant's retention erased",
             facts=facts)


def retention_sweep(*, now: datetime | None = None) -> int:
    """Runs retention for every tenant that set any (beat, hourly)."""
    tenants = Tenant.objects.exclude(retention_conversation_days=None,
                                     retention_lead_days=None, retention_event_days=None)
    return sum(sum(retention_run(tenant=tenant, now=now).values()) for tenant in tenants)
