from django.apps import AppConfig


class CoreConfig(AppConfig):
    """The bottom layer every domain app stands on: the event log and ``emit``, ids, domain
    errors, field crypto, timestamps, written-out SQL. It imports no domain app."""

    name = "core"
    verbose_name = "Core"
    default_auto_field = "django.db.models.BigAutoField"
