from django.apps import AppConfig


class IntegrationsConfig(AppConfig):
    """The tenants' CRMs: a connection per CRM and mode, and every lead, conversation and meeting
    synced out to it as it changes, as retried rows (docs/integrations.md)."""

    name = "integrations"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from core import events

        from . import subscribers

        for handler, types in subscribers.SUBSCRIPTIONS:
            events.subscribe(handler, types=types, after_commit=True)
