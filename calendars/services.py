"""Every write of the calendars app: connecting a rep's calendar, and the calendar write of each
meeting booked with a rep (planned with the booking, sent by a task, retried with backoff in the
shape of the webhook deliveries: docs/calendars.md, "When a calendar is down")."""

from __future__ import annotations

import contextlib
import logging
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone

from conversations.models import Meeting, MeetingStatus
from core import broker, crypto, ics, metrics
from core.errors import FieldError, InvalidRequest, NotFound
from core.work import V1_SCHEDULE
from tenants.models import Tenant

from . import dav, selectors
from .errors import CalendarUnavailable
from .models import CalendarConnection, MeetingCalendarWrite, WriteStatus

logger = logging.getLogger("salesagent.calendars")

SCHEDULE = V1_SCHEDULE  # the v1 webhook schedule: seven attempts over about 39 hours
# A claim outlives an attempt's requests by this much before another worker may take the row.
LEASE = timedelta(seconds=60)
# A due write whose task has not run this long after it was enqueued is enqueued again.
REQUEUE_AFTER = timedelta(seconds=60)
SWEEP_BATCH = 200
FIELD_LIMITS = {"url": 2048, "username": 255, "password": 500}


# --- connecting -----------------------------------------------------------------------------

def _clean(*, url: str, username: str, password: str, keep_password: bool) -> dict[str, str]:
    values = {"url": (url or "").strip(), "username": (username or "").strip(),
              "password": password or ""}
    required = ("url", "username") if keep_password else ("url", "username", "password")
    problems = [FieldError(name, "too_long", f"At most {limit} characters.")
                for name, limit in FIELD_LIMITS.items() if len(values[name]) > limit]
    problems += [FieldError(name, "required", "This field is required.")
                 for name in required if not values[name]]
    if problems:
        raise InvalidRequest("The calendar connection is incomplete.", details=problems)
    return values


def calendar_connect(*, tenant: Tenant, user: Any, url: str, username: str,
                     password: str = "") -> CalendarConnection:
    """Connects (or connects again) ``user``'s calendar, verified at once: a refusal
    (CalendarRefused: authentication, URL, not a calendar) changes nothing. A blank password
    keeps the stored one. The user's failed meeting writes are tried again."""
    if user is None or user.tenant_id != tenant.pk:
        raise NotFound("No such user in this tenant.")
    existing = CalendarConnection.objects.filter(user=user).first()
    values = _clean(url=url, username=username, password=password,
                    keep_password=existing is not None)
    secret = values["password"] or existing.password
    found = dav.verify(dav.Account(url=values["url"], username=values["username"], password=secret))
    now = timezone.now()
    with transaction.atomic():
        connection, _ = CalendarConnection.objects.update_or_create(user=user, defaults={
            "tenant": tenant, "url": values["url"], "username": values["username"],
            "password_encrypted": crypto.encrypt(secret), "calendar_url": found.calendar_url,
            "freebusy_query": found.freebusy_query, "verified_at": now, "last_error": "",
            "updated_at": now})
        retried = _retry_failed(tenant=tenant, host=user, now=now)
        transaction.on_commit(lambda: enqueue(retried))
    # Ids only: an address, and a calendar's URL that often holds one, are personal data.
    logger.info("Calendar of user %s connected", user.pk)
    return connection


def calendar_disconnect(*, tenant: Tenant, user: Any) -> bool:
    """Forgets ``user``'s calendar (and its password). Whether there was one."""
    if user is None:
        return False
    deleted, _ = CalendarConnection.objects.filter(tenant=tenant, user=user).delete()
    return bool(deleted)


def _retry_failed(*, tenant: Tenant, host: Any, now: datetime) -> list[Any]:
    rows = MeetingCalendarWrite.objects.filter(tenant=tenant, host=host, status=WriteStatus.FAILED)
    ids = list(rows.values_list("meeting_id", flat=True))
    rows.update(status=WriteStatus.PENDING, attempts=0, next_attempt_at=now, updated_at=now)
    return ids


# --- planning a meeting's write -------------------------------------------------------------

def calendar_write_plan(*, meeting_id: Any) -> MeetingCalendarWrite | None:
    """In the booking's transaction: plans the write into the calendar of the meeting's host
    (picked by the booking, ``capture._host``). Nothing for a test-mode meeting (the reps' real
    calendars hold live meetings only) or a host without a calendar."""
    meeting = Meeting.objects.filter(pk=meeting_id).select_related("tenant", "host").first()
    if meeting is None or not meeting.livemode or meeting.host is None:
        return None
    connection = selectors.connection_of(tenant=meeting.tenant, user=meeting.host)
    if connection is None or connection.verified_at is None:
        return None
    now = timezone.now()
    row, _ = MeetingCalendarWrite.objects.get_or_create(meeting=meeting, defaults={
        "tenant": meeting.tenant, "host": meeting.host, "sequence": meeting.sequence,
        "next_attempt_at": now, "created_at": now, "updated_at": now})
    return row


def calendar_write_replan(*, meeting_id: Any) -> MeetingCalendarWrite | None:
    """In the transaction that rescheduled or cancelled the meeting: the write is due again,
    with the meeting's SEQUENCE (the attempt PUTs the new times, or removes a cancelled meeting)."""
    now = timezone.now()
    sequence = Meeting.objects.filter(pk=meeting_id).values_list("sequence", flat=True).first()
    updated = MeetingCalendarWrite.objects.filter(meeting_id=meeting_id).update(
        status=WriteStatus.PENDING, sequence=sequence or 0, attempts=0, next_attempt_at=now,
        last_error="", updated_at=now)
    return MeetingCalendarWrite.objects.get(pk=meeting_id) if updated else None


def calendar_write_retry(*, write: MeetingCalendarWrite) -> MeetingCalendarWrite:
    """The dashboard's "try again now": a failed write starts a new schedule."""
    now = timezone.now()
    MeetingCalendarWrite.objects.filter(pk=write.pk, status=WriteStatus.FAILED).update(
        status=WriteStatus.PENDING, attempts=0, next_attempt_at=now, updated_at=now)
    transaction.on_commit(lambda: enqueue([write.pk]))
    write.refresh_from_db()
    return write


def enqueue(meeting_ids: Iterable[Any], *, only_pending: bool = False) -> None:
    """One write task per meeting (``core.broker.publish``). A broker that cannot be reached
    loses nothing and holds nobody: the rows stay due, marked as carried by no task, for the
    sweeper's next pass after the broker is back."""
    from .tasks import write

    ids = [str(i) for i in meeting_ids]
    if only_pending:
        ids = [str(i) for i in MeetingCalendarWrite.objects.filter(
            pk__in=ids, status=WriteStatus.PENDING).values_list("pk", flat=True)]
    if not ids:
        return
    MeetingCalendarWrite.objects.filter(pk__in=ids).update(enqueued_at=timezone.now())
    if not broker.publish(write, ids):
        MeetingCalendarWrite.objects.filter(pk__in=ids, status=WriteStatus.PENDING).update(
            enqueued_at=None)


# --- one attempt ----------------------------------------------------------------------------

@dataclass(frozen=True)
class _Claim:
    write: MeetingCalendarWrite
    token: uuid.UUID


def _claim(meeting_id: Any, now: datetime) -> _Claim | None:
    """The due write, taken for this worker alone (the UPDATE's condition is the claim)."""
    token = MeetingCalendarWrite.claim(
        meeting_id, now=now, lease=LEASE + timedelta(seconds=4 * dav.timeout_seconds()))
    if token is None:
        return None
    write = (MeetingCalendarWrite.objects
             .select_related("meeting", "meeting__lead", "meeting__conversation", "tenant", "host")
             .get(pk=meeting_id))
    return _Claim(write=write, token=token)


def calendar_write_attempt(*, meeting_id: Any, now: datetime | None = None
                           ) -> MeetingCalendarWrite | None:
    """Writes (or removes) a due meeting's VEVENT in its host's calendar once and records how
    it went; None when there was nothing to do (not due, or another worker has it).

    ``now`` is the schedule's clock (tests move it)."""
    now = now or timezone.now()
    claim = _claim(meeting_id, now)
    if claim is None:
        return None
    write = claim.write
    # A deactivated rep's calendar is no longer used (docs/dashboard.md, "Team").
    connection = CalendarConnection.objects.filter(
        tenant_id=write.tenant_id, user_id=write.host_id, verified_at__isnull=False,
        user__is_active=True).first()
    if connection is None:
        return _record(claim, now=now, error="The rep has no calendar connected (or their "
                                             "account is deactivated).", final=True)
    account = dav.Account(url=connection.calendar_url, username=connection.username,
                          password=connection.password)
    href = write.href or f"{connection.calendar_url.rstrip('/')}/{write.meeting_id}.ics"
    try:
        if write.meeting.status == MeetingStatus.CANCELLED:
            dav.delete_event(account, href)
            return _record(claim, now=now, status=WriteStatus.REMOVED, href=href)
        etag = dav.put_event(account, href, _event(write, now=now))
    except CalendarUnavailable as exc:
        return _record(claim, now=now, error=str(exc))
    return _record(claim, now=now, status=WriteStatus.WRITTEN, href=href, etag=etag)


def _event(write: MeetingCalendarWrite, *, now: datetime) -> bytes:
    meeting, host = write.meeting, write.host
    lead = meeting.lead
    who = lead.name or lead.email
    summary = meeting.conversation.summary if meeting.conversation else ""
    details = [f"Lead: {lead.name} <{lead.email}>" if lead.name else f"Lead: {lead.email}",
               *([f"Company: {lead.company}"] if lead.company else []),
               f"Score: {lead.score}", f"Booked by the {write.tenant.name} sales agent."]
    event = ics.MeetingEvent(
        uid=str(meeting.pk), sequence=write.sequence, stamp=now,
        starts_at=meeting.starts_at, ends_at=meeting.ends_at,
        summary=f"Discovery call with {who}" + (f" ({lead.company})" if lead.company else ""),
        description="\n\n".join(filter(None, [summary, "\n".join(details)])),
        organizer=ics.Party(host.email, host.display_name) if host and host.email else None,
        # SCHEDULE-AGENT=CLIENT (RFC 6638, 7.1): a server doing implicit scheduling sends no
        # invitation of its own; the visitor's invitation is the service's email.
        attendee=ics.Party(lead.email, lead.name, {"ROLE": "REQ-PARTICIPANT", "PARTSTAT": "NEEDS-ACTION",
                                                  "RSVP": "FALSE", "SCHEDULE-AGENT": "CLIENT"}))
    return ics.calendar(event, transp="OPAQUE")


def _record(claim: _Claim, *, now: datetime, status: str | None = None, error: str = "",
            final: bool = False, href: str = "", etag: str = "") -> MeetingCalendarWrite | None:
    write = claim.write
    changes: dict[str, Any] = {"updated_at": now, "last_error": error[:500]}
    if status is not None:
        changes.update(status=status, href=href, etag=etag, next_attempt_at=None, written_at=now)
    else:
        changes.update(MeetingCalendarWrite.failure(SCHEDULE, attempts=write.attempts, now=now,
                                                    failed=WriteStatus.FAILED, retry=not final))
    if not MeetingCalendarWrite.settle(write.pk, claim.token, changes):
        logger.warning("Calendar write of meeting %s: result dropped, the claim is gone", write.pk)
        return None
    metrics.work_attempt("calendar_write", changes.get("status"), succeeded=status or WriteStatus.WRITTEN,
                         failed=WriteStatus.FAILED)
    if error:
        logger.warning("Calendar write of meeting %s failed (attempt %s): %s", write.pk,
                       write.attempts, error)
    write.refresh_from_db()
    return write


# --- the sweeper ----------------------------------------------------------------------------

def calendar_writes_sweep(*, now: datetime | None = None, batch: int = SWEEP_BATCH) -> int:
    """Run by beat: enqueues the due writes that no task is known to be carrying (a lost
    message, a worker that died mid-attempt once its lease expired). Safe to run twice."""
    now = now or timezone.now()
    due = MeetingCalendarWrite.due(now=now, requeue_after=REQUEUE_AFTER)
    ids = list(due.values_list("pk", flat=True)[:batch])
    with contextlib.suppress(Exception):
        enqueue(ids)
    return len(ids)


# --- erasure (docs/privacy.md) -------------------------------------------------------------

def calendar_events_of(*, meeting_ids: Iterable[Any]) -> list[dict[str, str]]:
    """Where the meetings' VEVENTs are, or may be, in their hosts' calendars: one
    ``{"host": <user id>, "href": <url>}`` per meeting with a host whose calendar is connected.
    Neither carries personal data (the href is named by the meeting's id), so an erasure may
    keep them until the events are gone."""
    found = []
    writes = MeetingCalendarWrite.objects.filter(meeting_id__in=list(meeting_ids),
                                                 host__isnull=False)
    for write in writes.select_related("meeting"):
        connection = CalendarConnection.objects.filter(
            tenant_id=write.tenant_id, user_id=write.host_id, verified_at__isnull=False).first()
        if connection is None:
            continue
        href = write.href or f"{connection.calendar_url.rstrip('/')}/{write.meeting_id}.ics"
        found.append({"host": str(write.host_id), "href": href})
    return found


def calendar_event_remove(*, tenant: Any, host_id: Any, href: str) -> None:
    """Removes one VEVENT from a host's calendar (already gone, or a calendar disconnected since,
    is nothing to do). Raises CalendarUnavailable."""
    connection = CalendarConnection.objects.filter(
        tenant=tenant, user_id=host_id, verified_at__isnull=False).first()
    if connection is None:
        return
    account = dav.Account(url=connection.calendar_url, username=connection.username,
                          password=connection.password)
    dav.delete_event(account, href)
