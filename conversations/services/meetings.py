"""What happens to a booked meeting afterwards: rescheduled to another free slot of the
tenant's availability, or cancelled, by the tenant's staff (the dashboard) or by the visitor
(the signed links of their emails, ``conversations.links``). Each move emits its event; the
emails and, later, the calendar writes are the subscribers' work (docs/meetings.md)."""

from __future__ import annotations

from datetime import datetime

from django.db import IntegrityError, transaction
from django.utils import timezone

from core.errors import Conflict, FieldError, Unprocessable
from core.models import EventType
from core.timestamps import stored_timestamp
from leads.services import lead_update
from leads.vocabulary import LeadStatus

from .. import scheduling
from ..events import emit_meeting_event
from ..models import Meeting, MeetingStatus

CANCELLED_BY = ("visitor", "staff")


class MeetingNotChangeable(Conflict):
    default_message = "This meeting can no longer be changed."


def _locked(meeting: Meeting, now: datetime) -> Meeting:
    """The meeting, locked, if it is still scheduled and has not started."""
    current = (Meeting.objects.select_for_update(of=("self",)).select_related("tenant", "lead")
               .get(pk=meeting.pk))
    if current.status != MeetingStatus.SCHEDULED:
        raise MeetingNotChangeable(f"This meeting is already {current.status}.")
    if current.starts_at <= now:
        raise MeetingNotChangeable("This meeting has already started.")
    return current


@transaction.atomic
def meeting_cancel(*, meeting: Meeting, by: str, now: datetime | None = None) -> Meeting:
    """Cancels a scheduled meeting that has not started; ``by`` is "visitor" or "staff"."""
    if by not in CANCELLED_BY:
        raise ValueError(f"cancelled by {by!r}")
    now = now or timezone.now()
    current = _locked(meeting, now)
    current.status = MeetingStatus.CANCELLED
    current.sequence += 1
    current.cancelled_by = by
    current.cancelled_at = current.updated_at = now
    current.save()
    emit_meeting_event(current, EventType.MEETING_CANCELLED,
                       f"Meeting of {current.starts_at:%Y-%m-%d %H:%M} UTC cancelled by the {by}")
    _lead_back(current, by=by)
    return current


def _lead_back(meeting: Meeting, *, by: str) -> None:
    """A lead whose meeting is cancelled is no longer "Meeting booked": it goes back to the
    status it had when the meeting was booked (``qualifying`` when that is unknown, or was
    ``booked`` by another meeting), with ``lead.updated`` saying why. Unless another meeting of
    the lead is still scheduled, or its status moved on since (converted, lost, set by hand)."""
    lead = meeting.lead
    if lead.status != LeadStatus.BOOKED:
        return
    others = (Meeting.objects.filter(tenant_id=meeting.tenant_id, livemode=meeting.livemode,
                                     lead_id=lead.pk, status=MeetingStatus.SCHEDULED)
              .exclude(pk=meeting.pk))
    if others.exists():
        return
    before = meeting.lead_status_before
    status = before if before and before != LeadStatus.BOOKED else LeadStatus.QUALIFYING
    lead_update(lead=lead, changes={"status": status}, touch_activity=False,
                qualification_reason=f"Meeting cancelled by the {by}")


@transaction.atomic
def meeting_reschedule(*, meeting: Meeting, starts_at: datetime, now: datetime | None = None
                       ) -> Meeting:
    """Moves a scheduled meeting to ``starts_at``, a free slot of the tenant's availability:
    same meeting (same iCalendar UID), one more SEQUENCE. 422 for a time that is no slot, 409
    for a slot taken meanwhile."""
    now = now or timezone.now()
    current = _locked(meeting, now)
    tenant = current.tenant
    if not scheduling.is_bookable(tenant, starts_at, now=now):
        raise Unprocessable("That time is not one of the offered slots.", details=[
            FieldError("slot", "out_of_range", "Choose one of the offered times.")])
    if starts_at == current.starts_at:
        raise Unprocessable("The meeting is already at that time.", details=[
            FieldError("slot", "invalid_enum", "Choose another time.")])
    slot = scheduling.make_slot(tenant, starts_at)
    previous = {"starts_at": stored_timestamp(current.starts_at),
                "ends_at": stored_timestamp(current.ends_at)}
    current.starts_at, current.ends_at = slot.start, slot.end
    current.sequence += 1
    current.updated_at = now
    try:
        with transaction.atomic():
            current.save()
    except IntegrityError:
        raise Conflict("That time was booked a moment ago: choose another.") from None
    emit_meeting_event(current, EventType.MEETING_RESCHEDULED,
                       f"Meeting moved to {slot.label}", previous=previous)
    return current
