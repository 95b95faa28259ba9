"""The calendars' event subscribers (registered in ``CalendarsConfig.ready``).

- ``meeting.booked``, in the booking's transaction: the write into the host's calendar is
  planned (a pending row), so it commits or rolls back with the meeting;
- ``meeting.rescheduled`` / ``meeting.cancelled``, in their transaction too: the write is due
  again, with the meeting's new SEQUENCE;
- all of them, after commit: the write task is enqueued. A lost enqueue is not a lost write:
  the beat sweeper enqueues due rows (``calendar_writes_sweep``).
"""

from __future__ import annotations

from core.models import Event

from . import services


def _meeting_id(event: Event) -> str | None:
    return (event.facts.get("meeting") or {}).get("id")


def plan_write(event: Event) -> None:
    meeting_id = _meeting_id(event)
    if meeting_id:
        services.calendar_write_plan(meeting_id=meeting_id)


def replan_write(event: Event) -> None:
    meeting_id = _meeting_id(event)
    if meeting_id:
        services.calendar_write_replan(meeting_id=meeting_id)


def enqueue_write(event: Event) -> None:
    meeting_id = _meeting_id(event)
    if meeting_id:
        services.enqueue([meeting_id], only_pending=True)
