"""The meeting lifecycle's services and events without a mail server: reschedule and cancel,
their rules and events (facts and the v1 payloads), the emails they write as rows, and what the
agent promises."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from conversations import scheduling
from conversations.models import EmailKind, Meeting, OutboundEmail
from conversations.services import MeetingNotChangeable, meeting_cancel, meeting_reschedule
from core.errors import Conflict, Unprocessable
from core.events import payload
from leads.models import Lead
from leads.services import lead_update
from tests.chat_helpers import chat, events, take
from tests.dashboard.client import Client

from .meeting_helpers import book, links_in, path_of


@pytest.fixture
def booked(api, kit, rep):
    meeting, _ = book(api, kit)
    return meeting


def test_a_booking_has_a_host_a_sequence_and_writes_its_emails(booked, rep, kit, email_queue):
    assert booked.host == rep and booked.sequence == 0
    kinds = sorted(OutboundEmail.objects.values_list("kind", flat=True))
    assert kinds == [EmailKind.HOST_MEETING, EmailKind.MEETING_INVITATION]
    assert set(OutboundEmail.objects.values_list("status", flat=True)) == {"queued"}
    assert email_queue == []  # enqueued only once the booking commits
    data = payload(events(kit, "meeting.booked")[0], "v1")
    assert data["meeting"]["id"] == f"mtg_{booked.pk.hex}"
    assert data["meeting"]["hostId"] == f"user_{rep.pk.hex}"
    assert data["lead"]["email"] == "sam@umbrella.io" and data["lead"]["status"] == "qualified"


def test_reschedule_moves_the_same_meeting_and_emits(booked, kit):
    before = booked.starts_at
    target = next(s for s in scheduling.free_slots(kit.tenant, True, now=timezone.now())
                  if s.start != before)
    meeting = meeting_reschedule(meeting=booked, starts_at=target.start)
    assert (meeting.pk, meeting.starts_at, meeting.sequence) == (booked.pk, target.start, 1)
    event = events(kit, "meeting.rescheduled")[0]
    assert event.lead_id == booked.lead_id and event.conversation_id == booked.conversation_id
    data = payload(event, "v1")
    assert data["meeting"]["sequence"] == 1
    assert data["previous"]["startsAt"].startswith(before.strftime("%Y-%m-%dT%H:%M"))
    assert payload(event, "legacy") is None
    assert OutboundEmail.objects.filter(kind=EmailKind.MEETING_UPDATE).count() == 1


def test_reschedule_refuses_what_is_not_a_free_slot(api, kit, rep, booked):
    other, _ = book(api, kit, visitor="v2", email="ann@hooli.com", choice=1)
    with pytest.raises(Unprocessable):
        meeting_reschedule(meeting=booked, starts_at=booked.starts_at + timedelta(minutes=7))
    with pytest.raises(Unprocessable):
        meeting_reschedule(meeting=booked, starts_at=booked.starts_at)
    with pytest.raises(Conflict):
        meeting_reschedule(meeting=booked, starts_at=other.starts_at)
    booked.refresh_from_db()
    assert booked.sequence == 0 and not events(kit, "meeting.rescheduled")


def test_cancel_frees_the_slot_and_cannot_happen_twice(booked, kit):
    meeting = meeting_cancel(meeting=booked, by="staff")
    assert (meeting.status, meeting.sequence, meeting.cancelled_by) == ("cancelled", 1, "staff")
    data = payload(events(kit, "meeting.cancelled")[0], "v1")
    assert data["cancelledBy"] == "staff" and data["meeting"]["status"] == "cancelled"
    assert data["meeting"]["cancelledAt"]
    assert OutboundEmail.objects.get(kind=EmailKind.MEETING_CANCELLATION).ics_method == "CANCEL"
    with pytest.raises(MeetingNotChangeable):
        meeting_cancel(meeting=booked, by="visitor")
    # The freed slot is offered again.
    offered = scheduling.free_slots(kit.tenant, True, now=timezone.now(), count=1)
    assert offered[0].start <= booked.starts_at


def test_a_started_meeting_cannot_be_changed(booked):
    with pytest.raises(MeetingNotChangeable):
        meeting_cancel(meeting=booked, by="visitor", now=booked.starts_at + timedelta(minutes=1))
    assert Meeting.objects.get(pk=booked.pk).status == "scheduled"


def test_no_email_configured_no_promise_and_no_email(api, kit, rep, settings):
    settings.EMAIL_ENABLED = False
    meeting, reply = book(api, kit)
    assert reply["content"].startswith("You're booked for") and "email" not in reply["content"]
    assert not OutboundEmail.objects.exists()


def test_test_mode_meetings_stay_in_test_mode(api, kit, rep):
    meeting, _ = book(api, kit, mode="test")
    assert meeting.livemode is False
    assert set(OutboundEmail.objects.values_list("livemode", flat=True)) == {False}


# --- the lead after a cancellation (docs/meetings.md, "The lead after a cancellation") --------


def _status(meeting) -> str:
    return Lead.objects.get(pk=meeting.lead_id).status


def test_the_visitors_cancel_link_moves_the_lead_back_to_its_status_before_the_booking(
        api, kit, rep):
    sid = chat(api, kit, "I'm Sam Lee, CTO at Umbrella, sam@umbrella.io").json()["sessionId"]
    lead = Lead.objects.get()
    r = api.patch(f"/api/v1/leads/lead_{lead.pk.hex}", json={"status": "qualified"},
                  headers=kit.auth("write"))
    assert r.status_code == 200, r.text
    offered = chat(api, kit, "Can we book a demo?", session=sid).json()["suggestedActions"]
    take(api, kit, next(a for a in offered if a["type"] == "reply"), session=sid)
    meeting = Meeting.objects.get()
    assert (meeting.lead_status_before, _status(meeting)) == ("qualified", "booked")

    invitation = OutboundEmail.objects.get(kind=EmailKind.MEETING_INVITATION)
    cancel = path_of(links_in(invitation.text_body)["cancel"])
    qualified = len(events(kit, "lead.qualified"))  # the PATCH's
    visitor = Client(enforce_csrf_checks=True)
    page = visitor.get(cancel)
    done = visitor.post(cancel, {"csrfmiddlewaretoken": page.context["csrf_token"]})
    assert done.status_code == 200 and b"Your meeting is cancelled" in done.content
    assert _status(meeting) == "qualified"
    moved = events(kit, "lead.updated")[-1]
    assert moved.facts["previous"]["status"] == "booked"
    assert moved.facts["lead"]["status"] == "qualified"
    assert "cancelled by the visitor" in moved.facts["reason"]
    # Booked and qualified read alike on v1: no lead.qualified is announced again.
    assert len(events(kit, "lead.qualified")) == qualified


def test_another_scheduled_meeting_keeps_the_lead_booked(api, kit, rep):
    first, _ = book(api, kit)
    second, _ = book(api, kit, visitor="v2", choice=1)
    assert second.lead_id == first.lead_id and second.lead_status_before == "booked"
    meeting_cancel(meeting=first, by="staff")
    assert _status(first) == "booked"
    # The last one cancelled: back to qualifying (what it was before is no status to go back to).
    meeting_cancel(meeting=second, by="visitor")
    assert _status(first) == "qualifying"


def test_a_status_set_since_the_booking_stays(api, kit, rep):
    meeting, _ = book(api, kit)
    lead_update(lead=meeting.lead, changes={"status": "converted"})
    meeting_cancel(meeting=meeting, by="staff")
    assert _status(meeting) == "converted"


def test_a_working_day_that_ends_at_midnight_offers_its_evening(api, kit, rep):
    """The Settings form offers 24:00 as the end of the day; the slots stop at that midnight
    (they ran on into the next days, and a chat turn spun until it failed)."""
    kit.tenant.meeting_start_hour, kit.tenant.meeting_end_hour = 20, 24
    kit.tenant.meeting_days = [0, 1, 2, 3, 4, 5, 6]
    kit.tenant.save()
    slots = scheduling.free_slots(kit.tenant, True, now=timezone.now(), count=100)
    assert slots
    assert all(20 <= s.start.hour <= 23 for s in slots)  # the tenant's zone is UTC
    r = chat(api, kit, "I'm Sam, sam@example.com, can we book a demo?")
    assert r.status_code == 200 and any(a["type"] == "reply" for a in r.json()["suggestedActions"])
