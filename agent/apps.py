from django.apps import AppConfig


class AgentConfig(AppConfig):
    """The sales agent (understanding, replies, guard, providers, scoring, the evaluation, a
    tenant's test sets). Its one table is the test sets (``agent.models``): ``conversations``
    stores the turns it decides."""

    name = "agent"
    default_auto_field = "django.db.models.BigAutoField"
