"""The legacy surface: everything under ``/api/`` outside ``/api/v1/``."""

from django.urls import path, re_path
from drf_spectacular.views import SpectacularJSONAPIView

from analytics.api.legacy import LegacyAnalyticsViewSet
from config.api.views import LegacyNotFoundView
from config.health import HealthView
from conversations.api.legacy import LegacyConversationViewSet, PublicChatView
from knowledge.api.legacy import LegacyDocumentViewSet
from leads.api.legacy import LegacyAdminLeadViewSet, LegacyLeadViewSet
from tenants.api.legacy import AdminAuthView
from widget.api.legacy import ChatStreamView, WidgetConfigView

routes = [
    path("api/health", HealthView.as_view(), name="legacy-health"),
    path("api/admin/auth", AdminAuthView.as_view(), name="legacy-admin-auth"),
    path("api/admin/leads", LegacyAdminLeadViewSet.as_view({"post": "create"}),
         name="legacy-admin-leads"),
    path("api/leads", LegacyLeadViewSet.as_view({"get": "list"}), name="legacy-leads"),
    path("api/leads/<str:id>",
         LegacyLeadViewSet.as_view({"get": "retrieve", "patch": "partial_update"}),
         name="legacy-lead"),
    path("api/chat", PublicChatView.as_view(), name="legacy-chat"),
    path("api/chat/stream", ChatStreamView.as_view(), name="legacy-chat-stream"),
    path("api/widget", WidgetConfigView.as_view(), name="legacy-widget"),
    path("api/conversations/<str:id>", LegacyConversationViewSet.as_view({"get": "retrieve"}),
         name="legacy-conversation"),
    path("api/leads/<str:id>/conversations",
         LegacyConversationViewSet.as_view({"get": "by_lead"}), name="legacy-lead-conversations"),
    path("api/analytics/overview", LegacyAnalyticsViewSet.as_view({"get": "overview"}),
         name="legacy-analytics-overview"),
    path("api/analytics/funnel", LegacyAnalyticsViewSet.as_view({"get": "funnel"}),
         name="legacy-analytics-funnel"),
    path("api/analytics/activity", LegacyAnalyticsViewSet.as_view({"get": "activity"}),
         name="legacy-analytics-activity"),
    path("api/admin/knowledge-base",
         LegacyDocumentViewSet.as_view({"get": "list", "post": "create"}),
         name="legacy-knowledge-base"),
    path("api/admin/knowledge-base/<str:id>",
         LegacyDocumentViewSet.as_view({"get": "retrieve", "delete": "destroy"}),
         name="legacy-knowledge-base-document"),
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
