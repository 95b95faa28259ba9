"""The legacy surface: everything under ``/api/`` outside ``/api/v1/``, one include per app."""

from django.urls import include, path, re_path

from config.api.views import LegacyNotFoundView, SchemaView
from config.health import HealthView

routes = [
    path("api/health", HealthView.as_view(), name="legacy-health"),
    *[path("api/", include(f"{app}.api.urls_legacy"))
      for app in ("apikeys", "leads", "conversations", "widget", "analytics", "knowledge")],
]

urlpatterns = [
    *routes,
    path(
        "api/schema",
        SchemaView.as_view(
            patterns=routes,
            custom_settings={"TITLE": "Sales Agent Service API (legacy)"},
        ),
        name="legacy-schema",
    ),
    re_path(r"^api(?:/.*)?$", LegacyNotFoundView.as_view(), name="legacy-not-found"),
]
