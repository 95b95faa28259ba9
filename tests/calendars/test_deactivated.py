"""A deactivated rep's calendar stops being used (docs/dashboard.md, "Team"): a busy time in it
no longer hides a slot, no meeting is booked with them, and a write still waiting for their
calendar is not made. With a real Radicale behind ``/api/v1/chat``."""

from __future__ import annotations

from datetime import timedelta

from calendars import selectors, services
from calendars.models import MeetingCalendarWrite, WriteStatus
from conversations import scheduling
from conversations.models import Meeting
from tenants.services import user_create
from tests.chat_helpers import take
from tests.conftest import forget_free_busy
from tests.dashboard.client import signed_in
from tests.factories import PASSWORD

from .test_chat import _offered, _start


def _deactivate(kit, rep) -> None:
    manager = user_create(tenant=kit.tenant, email="mia@acme.test", first_name="Mia",
                          role="manager", password=PASSWORD)
    r = signed_in(manager).post(f"/dashboard/team/members/{rep.pk}/deactivate/")
    assert r.status_code == 302
    forget_free_busy()  # past the free/busy cache's minute


def test_a_deactivated_reps_busy_time_no_longer_hides_a_slot(api, kit, rep, connected, radicale):
    _sid, slots = _offered(api, kit)
    first = scheduling.parse_token(_start(slots[0]))
    radicale.add_busy(first - timedelta(minutes=10), first + timedelta(minutes=40))
    forget_free_busy()
    _sid, busy = _offered(api, kit, visitor="visitor-2")
    assert _start(slots[0]) not in [_start(a) for a in busy]

    _deactivate(kit, rep)
    assert selectors.connected(kit.tenant) == [] and not selectors.tenant_has_calendars(kit.tenant.pk)
    _sid, again = _offered(api, kit, visitor="visitor-3")
    assert _start(slots[0]) == _start(again[0])  # the table alone decides again


def test_no_meeting_is_booked_with_nor_written_for_a_deactivated_rep(api, kit, rep, connected,
                                                                     radicale, enqueued):
    sid, slots = _offered(api, kit)
    take(api, kit, slots[0], session=sid)
    write = MeetingCalendarWrite.objects.get()
    assert write.host == rep and write.status == WriteStatus.PENDING

    _deactivate(kit, rep)
    done = services.calendar_write_attempt(meeting_id=write.meeting_id)
    assert done.status == WriteStatus.FAILED and "deactivated" in done.last_error
    assert [e for e in radicale.calendar().events() if str(write.meeting_id) in e.data] == []

    sid, slots = _offered(api, kit, visitor="visitor-2")
    take(api, kit, slots[0], session=sid, visitor="visitor-2")
    booked = Meeting.objects.exclude(pk=write.meeting_id).get()
    assert booked.host_id != rep.pk
