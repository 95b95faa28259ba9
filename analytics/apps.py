from django.apps import AppConfig


class AnalyticsConfig(AppConfig):
    name = "analytics"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from core import events

        from .rollups import SUBSCRIBERS

        # In the writer's transaction: the rollups are exact and roll back with the write.
        for subscriber, types in SUBSCRIBERS:
            events.subscribe(subscriber, types=types)
