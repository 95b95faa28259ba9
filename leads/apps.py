from django.apps import AppConfig


class LeadsConfig(AppConfig):
    name = "leads"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from core import events

        from . import counts
        from .events import register

        register()
        events.subscribe(counts.count_lead_event, types=counts.COUNTED_EVENTS)
