"""The legacy surface: everything under ``/api/`` outside ``/api/v1/``."""

from django.urls import path, re_path
from drf_spectacular.views import SpectacularJSONAPIView

from config.api.views import LegacyNotFoundView
from config.health import HealthView
from tenants.api.legacy import AdminAuthView

routes = [
    path("api/health", HealthView.as_view(), name="legacy-health"),
    path("api/admin/auth", AdminAuthView.as_view(), name="legacy-admin-auth"),
]

urlpatterns = [
    *routes,
    path(
        "api/schema",
        SpectacularJSONAPIView.as_view(
            patterns=routes,
            custom_settings={"TITLE": "Sales Agent Service API (legacy)"},
        ),
        name="legacy-schema",
    ),
    re_path(r"^api(?:/.*)?$", LegacyNotFoundView.as_view(), name="legacy-not-found"),
]
