from django.apps import AppConfig


class WebhooksConfig(AppConfig):
    name = "webhooks"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from analytics.events import on_commit_hooks

        from .services import on_event_committed

        # Every committed event fans out to the matching subscriptions of both surfaces.
        if on_event_committed not in on_commit_hooks:
            on_commit_hooks.append(on_event_committed)
