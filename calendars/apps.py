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
        events.subscribe(subscribers.plan_write, types=[EventType.MEETING_BOOKED])
        # The meeting lifecycle's events, once core.events knows them (they arrive with the
        # meetings work of issue 16): until then these names are simply not subscribed.
        later = [t for t in subscribers.LIFECYCLE_TYPES if t in EventType.values]
        events.subscribe(subscribers.replan_write, types=later)
        events.subscribe(subscribers.enqueue_write,
                         types=[EventType.MEETING_BOOKED, *later], after_commit=True)
