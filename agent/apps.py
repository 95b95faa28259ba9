from django.apps import AppConfig


class AgentConfig(AppConfig):
    """The sales agent (understanding, replies, guard, providers, scoring, the evaluation). It
    has no models: ``conversations`` stores the turns it decides."""

    name = "agent"
    default_auto_field = "django.db.models.BigAutoField"
