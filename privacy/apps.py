from django.apps import AppConfig


class PrivacyConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "privacy"
    verbose_name = "Privacy"

    def ready(self) -> None:
        from core import privacy as hooks

        from . import events, services

        hooks.register(lead=services.lead_erase, conversation=services.conversation_erase)
        events.register()
