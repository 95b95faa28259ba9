from django.apps import AppConfig


class ConversationsConfig(AppConfig):
    name = "conversations"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from agent.interface import use_chat
        from core import events
        from core.models import EventType

        from . import live
        from .events import register
        from .services.emails import EMAIL_EVENTS, emails_for_event
        from .services.evaluation import ServiceChat
        from .services.routing import offer_on_status

        register()
        events.subscribe(live.push, types=live.PUSHED_EVENTS, after_commit=True)
        # A person's own stream (docs/dashboard.md, "Availability and routing"): handoffs given
        # to them, their status; and whoever comes online is offered the waiting handoffs.
        events.subscribe(live.push_assignment, types=live.ASSIGNMENT_EVENTS, after_commit=True)
        # A note's mentions: a toast on each named teammate's pages (their email is a row of
        # ``emails_for_event``).
        events.subscribe(live.push_mentions, types=[EventType.NOTE_CREATED], after_commit=True)
        events.subscribe(live.push_presence, types=[EventType.USER_STATUS_CHANGED],
                         after_commit=True)
        events.subscribe(offer_on_status, types=[EventType.USER_STATUS_CHANGED],
                         after_commit=True)
        # The emails an event calls for are rows written with it (docs/meetings.md, "Email").
        events.subscribe(emails_for_event, types=EMAIL_EVENTS)
        # The agent's evaluation runs its cases through this app's chat turn (agent/eval/chat.py).
        use_chat(ServiceChat())
