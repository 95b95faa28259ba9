"""The legacy surface: everything under ``/api/`` outside ``/api/v1/``."""

from django.urls import path, re_path
from drf_spectacular.views import SpectacularJSONAPIView

from config.api.views import LegacyNotFoundView
from config.health import HealthView
from conversations.api.legacy import LegacyConversationViewSet, PublicChatView
from tenants.api.legacy import AdminAuthView

routes = [
    path("api/health", HealthView.as_view(), name="legacy-health"),
    path("api/admin/auth", AdminAuthView.as_view(), name="legacy-admin-auth"),
    path("api/chat", PublicChatView.as_view(), name="legacy-chat"),
    path("api/conversations/<str:id>", LegacyConversationViewSet.as_view({"get": "retrieve"}),
         name="legacy-conversation"),
    path("api/leads/<str:id>/conversations",
         LegacyConversationViewSet.as_view({"get": "by_lead"}), name="legacy-lead-conversations"),
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
