from django.apps import AppConfig


class CalendarsConfig(AppConfig):
    """Sales reps' own calendars over CalDAV: their free/busy narrows the offered slots, and the
    meetings booked with them are written into them (docs/calendars.md)."""

    name = "calendars"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from conversations import scheduling
        from core import events
        from core.models import EventType

        from . import availability, subscribers

        scheduling.use_calendars(availability.SOURCE)
        lifecycle = [EventType.MEETING_RESCHEDULED, EventType.MEETING_CANCELLED]
        events.subscribe(subscribers.plan_write, types=[EventType.MEETING_BOOKED])
        events.subscribe(subscribers.replan_write, types=lifecycle)
        events.subscribe(subscribers.enqueue_write, types=[EventType.MEETING_BOOKED, *lifecycle],
                         after_commit=True)
