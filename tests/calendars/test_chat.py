"""Offered slots follow the reps' real free/busy, and a booked meeting is written into the host
rep's calendar, with a real Radicale behind ``/api/v1/chat``."""

from __future__ import annotations

import socket
import time
from datetime import timedelta

import icalendar
import pytest
from django.utils import timezone

from calendars import services
from calendars.models import CalendarConnection, MeetingCalendarWrite, WriteStatus
from conversations import scheduling
from conversations.models import Meeting
from conversations.services.meetings import meeting_cancel, meeting_reschedule
from tests.chat_helpers import chat, take
from tests.conftest import forget_free_busy
from tests.dashboard.client import signed_in
from tests.fakes.radicale import USERS


def _offered(api, kit, *, visitor="visitor-1"):
    sid = chat(api, kit, "Hi, I'm Sam, sam@umbrella.io", visitor=visitor).json()["sessionId"]
    r = chat(api, kit, "Can we book a demo?", session=sid, visitor=visitor)
    assert r.status_code == 200, r.content
    return sid, [a for a in r.json()["suggestedActions"] if a["type"] == "reply"]


def _start(action) -> str:
    return action["metadata"]["slot"]  # "2026-11-25T09:00Z"


def _table_slots(kit) -> list[str]:
    """What the availability table alone offers now."""
    source = scheduling._calendars
    scheduling.use_calendars(None)
    try:
        return [s.token for s in scheduling.free_slots(kit.tenant, True, now=timezone.now())]
    finally:
        scheduling.use_calendars(source)


def test_a_busy_time_in_the_reps_calendar_is_not_offered(api, kit, connected, radicale):
    _sid, slots = _offered(api, kit)
    assert len(slots) == 3
    first = scheduling.parse_token(_start(slots[0]))
    radicale.add_busy(first - timedelta(minutes=10), first + timedelta(minutes=40))
    forget_free_busy()  # past the free/busy cache's minute

    _sid, again = _offered(api, kit, visitor="visitor-2")
    starts = [_start(a) for a in again]
    assert len(starts) == 3 and _start(slots[0]) not in starts
    # The same day still offers its next free time, after the busy hour.
    assert scheduling.parse_token(starts[0]) >= first + timedelta(minutes=60)


def test_booking_writes_the_meeting_into_the_reps_calendar(api, kit, rep, connected, radicale,
                                                           enqueued):
    sid, slots = _offered(api, kit)
    r = take(api, kit, slots[0], session=sid)
    assert r.json()["intent"] == "booking"
    meeting = Meeting.objects.get()
    write = MeetingCalendarWrite.objects.get()
    assert write.meeting == meeting and write.host == rep and write.status == WriteStatus.PENDING

    written = services.calendar_write_attempt(meeting_id=meeting.pk)
    assert written.status == WriteStatus.WRITTEN and written.etag and written.attempts == 1

    found = radicale.calendar().get_event_by_uid(str(meeting.pk))
    event = icalendar.Calendar.from_ical(found.data).walk("VEVENT")[0]
    assert str(event["UID"]) == str(meeting.pk)
    assert event.decoded("DTSTART") == meeting.starts_at
    assert event.decoded("DTEND") == meeting.ends_at
    assert str(event["ATTENDEE"]) == "mailto:sam@umbrella.io"
    assert event["ATTENDEE"].params["SCHEDULE-AGENT"] == "CLIENT"
    assert str(event["ORGANIZER"]) == "mailto:ray@acme.test"
    assert "Discovery call with Sam" in str(event["SUMMARY"])
    assert "sam@umbrella.io" in str(event["DESCRIPTION"])
    assert int(event["SEQUENCE"]) == 0

    # Running the task again changes nothing: it is not due.
    assert services.calendar_write_attempt(meeting_id=meeting.pk) is None


def test_the_after_commit_subscriber_enqueues_the_write(api, kit, connected, radicale,
                                                        django_capture_on_commit_callbacks,
                                                        eager_celery):
    sid, slots = _offered(api, kit)
    with django_capture_on_commit_callbacks(execute=True):
        take(api, kit, slots[0], session=sid)
    meeting = Meeting.objects.get()
    assert MeetingCalendarWrite.objects.get().status == WriteStatus.WRITTEN
    assert radicale.calendar().get_event_by_uid(str(meeting.pk))


def test_a_cancelled_meeting_is_removed_from_the_calendar(api, kit, connected, radicale, enqueued):
    sid, slots = _offered(api, kit)
    take(api, kit, slots[0], session=sid)
    meeting = Meeting.objects.get()
    services.calendar_write_attempt(meeting_id=meeting.pk)
    meeting_cancel(meeting=meeting, by="staff")  # meeting.cancelled plans the write again
    removed = services.calendar_write_attempt(meeting_id=meeting.pk)
    assert removed.status == WriteStatus.REMOVED and removed.sequence == 1
    assert radicale.calendar().search(event=True) == []


def test_a_rescheduled_meeting_moves_in_the_calendar(api, kit, connected, radicale, enqueued):
    sid, slots = _offered(api, kit)
    take(api, kit, slots[0], session=sid)
    meeting = Meeting.objects.get()
    services.calendar_write_attempt(meeting_id=meeting.pk)
    later = scheduling.parse_token(_start(slots[1]))
    meeting_reschedule(meeting=meeting, starts_at=later)  # meeting.rescheduled plans it again
    moved = services.calendar_write_attempt(meeting_id=meeting.pk)
    assert moved.status == WriteStatus.WRITTEN and moved.sequence == 1
    found = radicale.calendar().get_event_by_uid(str(meeting.pk))
    event = icalendar.Calendar.from_ical(found.data).walk("VEVENT")[0]
    assert event.decoded("DTSTART") == later and int(event["SEQUENCE"]) == 1
    assert len(radicale.calendar().search(event=True)) == 1


def test_a_calendar_that_is_down_retries_until_it_is_back(api, kit, rep, connected, radicale,
                                                          enqueued):
    radicale.stop()
    sid, slots = _offered(api, kit)
    assert [_start(a) for a in slots] == _table_slots(kit)  # the table decides meanwhile
    r = take(api, kit, slots[0], session=sid)
    assert r.status_code == 200 and r.json()["intent"] == "booking"
    meeting = Meeting.objects.get()  # booked whatever the calendar does
    assert meeting.status == "scheduled"

    first = services.calendar_write_attempt(meeting_id=meeting.pk)
    assert first.status == WriteStatus.PENDING and first.attempts == 1
    assert "refused" in first.last_error.lower()
    assert first.next_attempt_at > timezone.now() + timedelta(seconds=50)
    assert services.calendar_write_attempt(meeting_id=meeting.pk) is None  # not due yet

    page = signed_in(rep).get(f"/dashboard/leads/{meeting.lead_id}/")
    assert "Pending" in page.content.decode() and "attempt 1 failed" in page.content.decode()

    radicale.start()  # same port, same storage
    later = timezone.now() + timedelta(minutes=2)
    retried = services.calendar_write_attempt(meeting_id=meeting.pk, now=later)
    assert retried.status == WriteStatus.WRITTEN and retried.attempts == 2
    assert retried.last_error == ""
    assert radicale.calendar().get_event_by_uid(str(meeting.pk))


def test_writes_fail_after_the_whole_schedule_and_show_on_the_reps_page(api, kit, rep, connected,
                                                                        radicale, enqueued):
    sid, slots = _offered(api, kit)
    take(api, kit, slots[0], session=sid)
    meeting = Meeting.objects.get()
    radicale.stop()
    now = timezone.now()
    for number in range(1, services.SCHEDULE.max_attempts + 1):
        write = services.calendar_write_attempt(meeting_id=meeting.pk, now=now)
        assert write.attempts == number
        now += timedelta(days=2)
    assert write.status == WriteStatus.FAILED and write.next_attempt_at is None
    page = signed_in(rep).get("/dashboard/calendar/").content.decode()
    assert "Meetings not yet in your calendar" in page and "Failed" in page

    radicale.start()
    r = signed_in(rep).post(f"/dashboard/calendar/writes/{meeting.pk}/retry/")
    assert r.status_code == 302
    assert MeetingCalendarWrite.objects.get().status == WriteStatus.PENDING
    assert services.calendar_write_attempt(meeting_id=meeting.pk).status == WriteStatus.WRITTEN


def test_a_calendar_that_never_answers_does_not_hold_the_turn(api, kit, rep, caplog):
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    try:
        url = f"http://127.0.0.1:{listener.getsockname()[1]}/ray/work/"
        CalendarConnection.objects.create(tenant=kit.tenant, user=rep, url=url, username="ray",
                                          password_encrypted="", calendar_url=url,
                                          verified_at=timezone.now())
        sid = chat(api, kit, "Hi, I'm Sam, sam@umbrella.io").json()["sessionId"]
        started = time.monotonic()
        r = chat(api, kit, "Can we book a demo?", session=sid)
        elapsed = time.monotonic() - started
    finally:
        listener.close()
    assert r.status_code == 200 and elapsed < 2.5, elapsed
    offered = [_start(a) for a in r.json()["suggestedActions"] if a["type"] == "reply"]
    assert offered == _table_slots(kit)
    assert "availability table" in caplog.text
    assert f"Calendar of user {rep.pk} did not answer" in caplog.text
    assert rep.email not in caplog.text  # ids only (docs/privacy.md, "Logs")


def test_no_connected_calendar_keeps_the_table(api, kit):
    _sid, slots = _offered(api, kit)
    assert [_start(a) for a in slots] == _table_slots(kit)
    assert not MeetingCalendarWrite.objects.exists()


def test_round_robin_picks_a_free_rep(kit, rep, manager, radicale):
    from calendars.availability import pick_host, prepare

    radicale.make_calendar()
    services.calendar_connect(tenant=kit.tenant, user=rep, url=radicale.url, username="ray",
                              password=USERS["ray"])
    start = (timezone.now() + timedelta(days=2)).replace(minute=0, second=0, microsecond=0)
    end = start + timedelta(minutes=30)
    radicale.add_busy(start, end)
    prepare(kit.tenant, now=timezone.now())
    assert pick_host(kit.tenant, start, end) is None  # the one rep with a calendar is busy
    later = start + timedelta(hours=1)
    assert pick_host(kit.tenant, later, later + timedelta(minutes=30)) == rep
    assert scheduling.pick_host(kit.tenant, later, later + timedelta(minutes=30)) == rep


def test_test_mode_meetings_are_not_written(api, kit, connected, enqueued):
    sid = chat(api, kit, "Hi, I'm Sam, sam@umbrella.io", mode="test").json()["sessionId"]
    r = chat(api, kit, "Can we book a demo?", session=sid, mode="test")
    slot = next(a for a in r.json()["suggestedActions"] if a["type"] == "reply")
    take(api, kit, slot, session=sid, mode="test")
    assert Meeting.objects.filter(livemode=False).count() == 1
    assert not MeetingCalendarWrite.objects.exists()


@pytest.mark.parametrize("status", ["written", "pending"])
def test_the_lead_page_shows_where_the_meeting_stands(api, kit, rep, connected, enqueued, status):
    sid, slots = _offered(api, kit)
    take(api, kit, slots[0], session=sid)
    meeting = Meeting.objects.get()
    if status == "written":
        services.calendar_write_attempt(meeting_id=meeting.pk)
    page = signed_in(rep).get(f"/dashboard/leads/{meeting.lead_id}/").content.decode()
    assert f'class="pill {status}"' in page


def test_a_write_the_broker_could_not_take_is_the_next_sweeps(api, kit, connected, radicale,
                                                               broken_broker,
                                                               django_capture_on_commit_callbacks):
    """The broker refuses connections: the booking's calendar write stays pending, carried by no
    task, and the sweeper's next pass enqueues it, not a minute later (docs/security.md)."""
    from tests.fakes.tcp_proxy import REFUSED

    sid, slots = _offered(api, kit)
    broken_broker.outage(REFUSED)
    with django_capture_on_commit_callbacks(execute=True):
        assert take(api, kit, slots[0], session=sid).status_code == 200
    write = MeetingCalendarWrite.objects.get()
    assert write.status == WriteStatus.PENDING and write.enqueued_at is None
    assert services.calendar_writes_sweep(now=timezone.now() + timedelta(seconds=10)) == 1
