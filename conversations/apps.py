from django.apps import AppConfig


class ConversationsConfig(AppConfig):
    name = "conversations"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from core import events

        from . import live
        from .events import register
        from .services.emails import EMAIL_EVENTS, emails_for_event

        register()
        events.subscribe(live.push, types=live.PUSHED_EVENTS, after_commit=True)
        # The emails an event calls for are rows written with it (docs/meetings.md, "Email").
        events.subscribe(emails_for_event, types=EMAIL_EVENTS)
