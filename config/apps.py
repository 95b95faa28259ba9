from django.apps import AppConfig


class ConfigConfig(AppConfig):
    """The project package, installed as an app only for its management commands (``serve``)."""

    name = "config"
    verbose_name = "Project"
