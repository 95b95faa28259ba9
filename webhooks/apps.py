from django.apps import AppConfig


class WebhooksConfig(AppConfig):
    name = "webhooks"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from core import events

        from .envelopes import LEGACY_EVENT_TYPES, V1_EVENT_TYPES
        from .events import register
        from .services import on_event_committed

        register()
        # Every committed event fans out to the matching receivers of both surfaces.
        events.subscribe(on_event_committed, types={*V1_EVENT_TYPES, *LEGACY_EVENT_TYPES},
                         after_commit=True)
