from django.apps import AppConfig


class ConversationsConfig(AppConfig):
    name = "conversations"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from core import events

        from . import live
        from .events import register

        register()
        events.subscribe(live.push, types=live.PUSHED_EVENTS, after_commit=True)
