"""Every write of the service's emails (docs/meetings.md, "Email"): the rows an event calls
for, the attempt that sends one, and the sweeper that retries. After webhooks' deliveries:
the row exists before anything is sent, a worker claims it so that no two send it, the
outcome is recorded, failures wait out a backoff and the sweeper enqueues them again.

``emails_for_event`` is an in-transaction subscriber: the rows are written, rendered, with the
meeting or handoff that calls for them, and enqueued once that commits; a rolled-back booking
leaves no email behind.
"""

from __future__ import annotations

import logging
import smtplib
import uuid
from collections.abc import Iterable
from datetime import datetime, timedelta
from functools import partial

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from core import broker, metrics
from core.models import Event, EventType
from core.timestamps import parse_timestamp
from core.work import EMAIL_SCHEDULE
from tenants.models import User, UserStatus

from .. import mail, scheduling
from ..models import Conversation, EmailKind, EmailStatus, Meeting, Note, OutboundEmail

logger = logging.getLogger("salesagent.email")

SCHEDULE = EMAIL_SCHEDULE  # five attempts over about 2.5 hours
# What a transport failure looks like: the server refused, the connection failed or timed out.
TRANSIENT = (smtplib.SMTPException, OSError)
REQUEUE_AFTER = timedelta(seconds=60)
LEASE_MARGIN = timedelta(seconds=60)
SWEEP_BATCH = 200

EMAIL_EVENTS = (EventType.MEETING_BOOKED, EventType.MEETING_RESCHEDULED,
                EventType.MEETING_CANCELLED, EventType.CONVERSATION_HANDOFF,
                EventType.CONVERSATION_ASSIGNED, EventType.NOTE_CREATED)
_HANDOFF_EVENTS = (EventType.CONVERSATION_HANDOFF, EventType.CONVERSATION_ASSIGNED)
_VISITOR_KIND = {
    EventType.MEETING_BOOKED: EmailKind.MEETING_INVITATION,
    EventType.MEETING_RESCHEDULED: EmailKind.MEETING_UPDATE,
    EventType.MEETING_CANCELLED: EmailKind.MEETING_CANCELLATION,
}


def email_enabled() -> bool:
    """Whether the service sends email at all (``EMAIL_URL=off://`` says it does not)."""
    return bool(settings.EMAIL_ENABLED)


# Transports that deliver nothing to a mailbox: the embedded default's ``.eml`` folder
# (``var/mail/``), ``console://``, ``off://``, Django's own file backend.
KEEPING_BACKENDS = frozenset({
    "core.mail.EmlFileBackend",
    "django.core.mail.backends.console.EmailBackend",
    "django.core.mail.backends.dummy.EmailBackend",
    "django.core.mail.backends.filebased.EmailBackend",
})


def email_delivered() -> bool:
    """Whether an email sent reaches its recipient's mailbox: the transport is SMTP or a
    provider's backend, not a folder, the console or nothing."""
    return email_enabled() and settings.EMAIL_BACKEND not in KEEPING_BACKENDS


def confirmation_queued(meeting_id: uuid.UUID) -> bool:
    """What the agent may promise at a booking: the booking's event queued the visitor's
    invitation (``emails_for_event``, in this transaction) and the transport delivers it."""
    return email_delivered() and OutboundEmail.objects.filter(
        meeting_id=meeting_id, kind=EmailKind.MEETING_INVITATION).exists()


# --- the subscriber -------------------------------------------------------------------------

def emails_for_event(event: Event) -> None:
    """In-transaction subscriber of the meeting events, ``conversation.handoff``,
    ``conversation.assigned`` and ``note.created``."""
    if not email_enabled():
        return
    if event.type in _HANDOFF_EVENTS:
        rendered = _handoff(event)
    elif event.type == EventType.NOTE_CREATED:
        rendered = _mentions(event)
    else:
        rendered = _meeting(event)
    emails_queue(event, rendered)


def emails_queue(event: Event, rendered: list[mail.Rendered]) -> None:
    """Writes the rows of the emails ``event`` calls for (once each) and enqueues them after
    the commit. Inside the event's transaction."""
    rows = [_row(event, r) for r in rendered]
    if not rows:
        return
    created = []
    for row in rows:
        try:
            with transaction.atomic():
                row.save(force_insert=True)
            created.append(row.pk)
        except IntegrityError:  # this event's email to this address exists already
            continue
    if created:
        transaction.on_commit(partial(enqueue, created))


def _meeting(event: Event) -> list[mail.Rendered]:
    meeting = (Meeting.objects.select_related("tenant", "lead", "host", "conversation")
               .filter(pk=event.facts["meeting"]["id"]).first())
    if meeting is None or meeting.lead is None:
        return []
    rendered = []
    if meeting.lead.email:
        previous = event.facts.get("previous")
        label = (scheduling.make_slot(meeting.tenant, parse_timestamp(previous["starts_at"]),
                                      scheduling.meeting_view(meeting)).label
                 if previous else None)
        rendered.append(mail.visitor_email(meeting, _VISITOR_KIND[event.type],
                                           previous_label=label))
    if event.type == EventType.MEETING_BOOKED and _wants(meeting.host, "email_on_meeting"):
        rendered.append(mail.host_email(meeting, event.facts.get("score_reasons") or []))
    return rendered


def _wants(person: User | None, preference: str) -> bool:
    """Whether ``person`` can and wants to get the email their ``preference`` turns on."""
    return (person is not None and person.is_active and bool(person.email)
            and getattr(person, preference))


def _handoff(event: Event) -> list[mail.Rendered]:
    """The email to the person a handoff was given to (by routing, or by a manager's Assign),
    unless they took it themselves or are online (their open dashboard shows it at once)."""
    facts = event.facts
    assignee_id = facts["conversation"]["assigned_to_id"]
    # A person taking the conversation over needs no email about it.
    if assignee_id is None or facts["conversation"].get("joined_at"):
        return []
    if event.type == EventType.CONVERSATION_HANDOFF and not facts.get("auto_assigned"):
        return []
    user = (User.objects.select_related("tenant")
            .filter(pk=assignee_id, tenant_id=event.tenant_id, is_active=True).first())
    # Someone online sees it on their open dashboard at once; the email is for who is not.
    if not _wants(user, "email_on_handoff") or user.status == UserStatus.ONLINE:
        return []
    handoff = facts.get("handoff") or (Conversation.objects.filter(pk=event.conversation_id)
                                       .values_list("handoff", flat=True).first())
    if not handoff:
        return []
    return [mail.handoff_email(user, facts["conversation"], handoff, user.tenant)]


def _mentions(event: Event) -> list[mail.Rendered]:
    """To each teammate a note mentions who wants these emails and is not online (their open
    dashboard shows a toast at once, as for a handoff). The row keeps the note's lead and
    conversation, so that an erasure of the person deletes it with them."""
    facts = event.facts["note"]
    if not facts.get("mentions"):
        return []
    note = (Note.objects.select_related("tenant", "author", "lead", "conversation__lead")
            .filter(pk=facts["id"]).first())
    if note is None:
        return []
    people = (User.objects.filter(pk__in=facts["mentions"], tenant_id=event.tenant_id)
              .order_by("date_joined", "id"))
    return [mail.mention_email(user, note) for user in people
            if _wants(user, "email_on_mention") and user.status != UserStatus.ONLINE]


def _row(event: Event, rendered: mail.Rendered) -> OutboundEmail:
    now = timezone.now()
    meeting_id = event.facts.get("meeting", {}).get("id")
    return OutboundEmail(
        tenant_id=event.tenant_id, livemode=event.livemode, kind=rendered.kind, to=rendered.to,
        from_email=rendered.from_email, subject=rendered.subject[:300],
        text_body=rendered.text_body, html_body=rendered.html_body, ics=rendered.ics,
        ics_method=rendered.ics_method, lead_id=event.lead_id, meeting_id=meeting_id,
        conversation_id=event.conversation_id, event_id=event.pk,
        next_attempt_at=now, enqueued_at=now, created_at=now, updated_at=now)


def enqueue(email_ids: Iterable[uuid.UUID]) -> None:
    """One send task per id (``core.broker.publish``). A broker that cannot be reached loses
    nothing and holds nobody: the rows stay due, marked as carried by no task, and the sweeper's
    next pass after the broker is back enqueues them."""
    from ..tasks import send_email

    ids = [str(email_id) for email_id in email_ids]
    if not broker.publish(send_email, ids):
        OutboundEmail.objects.filter(pk__in=ids, status=OutboundEmail.PENDING).update(
            enqueued_at=None)


# --- one attempt ----------------------------------------------------------------------------

def _lease() -> timedelta:
    return timedelta(seconds=settings.EMAIL_TIMEOUT) + LEASE_MARGIN


def email_attempt(*, email_id: uuid.UUID, now: datetime | None = None) -> OutboundEmail | None:
    """Sends a due email once and records how it went; None when there was nothing to send.

    ``now`` is the clock of the schedule (tests move it). SMTP errors and connection failures
    wait for the next step of ``SCHEDULE``; after its last attempt the email is ``failed``.
    Any other error is not the transport's: the email fails at once, with the error recorded.
    """
    now = now or timezone.now()
    token = OutboundEmail.claim(email_id, now=now, lease=_lease())
    if token is None:
        return None
    email = OutboundEmail.objects.get(pk=email_id)
    error, transient = "", False
    try:
        mail.message(email).send()
    except TRANSIENT as exc:
        error, transient = f"{type(exc).__name__}: {exc}", True
        logger.warning("Email %s (attempt %s) not sent: %s", email.pk, email.attempts, error)
    except Exception as exc:
        error = f"{type(exc).__name__}: {exc}"
        logger.exception("Email %s failed", email.pk)
    return _record(email, token=token, error=error, transient=transient, now=now)


def _record(email: OutboundEmail, *, token: uuid.UUID, error: str, transient: bool,
            now: datetime) -> OutboundEmail | None:
    changes: dict = {"last_error": error[:500], "updated_at": now}
    if not error:
        changes.update(status=EmailStatus.SENT, sent_at=now, next_attempt_at=None)
    else:
        changes.update(OutboundEmail.failure(SCHEDULE, attempts=email.attempts, now=now,
                                             failed=EmailStatus.FAILED, retry=transient))
    # Only the holder of the claim settles it: a claim taken back after its lease is not.
    if not OutboundEmail.settle(email.pk, token, changes):
        logger.warning("Email %s: result of attempt %s dropped, the claim is gone", email.pk,
                       email.attempts)
        return None
    metrics.work_attempt("email", changes.get("status"), succeeded=EmailStatus.SENT,
                         failed=EmailStatus.FAILED)
    email.refresh_from_db()
    return email


# --- the sweeper ----------------------------------------------------------------------------

def emails_sweep(*, now: datetime | None = None, batch: int = SWEEP_BATCH) -> int:
    """Beat, every few seconds: enqueues the queued emails that are due and that no task is
    known to carry (a retry whose backoff ended, a message the broker lost, a claim whose
    worker died). Safe to run twice at once: the attempt's claim decides."""
    now = now or timezone.now()
    due = OutboundEmail.due(now=now, requeue_after=REQUEUE_AFTER)
    ids = list(due.values_list("pk", flat=True)[:batch])
    if ids:
        OutboundEmail.objects.filter(pk__in=ids).update(enqueued_at=now)
        enqueue(ids)
    return len(ids)
