from django.apps import AppConfig


class DashboardConfig(AppConfig):
    """The sales staff's pages under ``/dashboard/``: no models of its own; it reads through the
    other apps' selectors and writes through their services."""

    name = "dashboard"
