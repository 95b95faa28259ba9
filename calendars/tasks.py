"""Thin Celery tasks of the calendars: they take ids and call the services (idempotent: a write
is claimed before it is sent, and writing the same VEVENT twice leaves one event)."""

from uuid import UUID

from celery import shared_task

from .services import calendar_write_attempt, calendar_writes_sweep


@shared_task(name="calendars.write", ignore_result=True, acks_late=True,
             reject_on_worker_lost=True)
def write(meeting_id: str) -> bool:
    """One attempt at a meeting's due calendar write; nothing when it is not due or taken."""
    return calendar_write_attempt(meeting_id=UUID(meeting_id)) is not None


@shared_task(name="calendars.sweep", ignore_result=True)
def sweep() -> int:
    """Beat, every few seconds: enqueue the due calendar writes that no task is carrying."""
    return calendar_writes_sweep()
