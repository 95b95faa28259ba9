"""The v1 surface: everything under ``/api/v1/``. An unknown path there is a v1 404."""

from django.urls import path, re_path
from drf_spectacular.views import SpectacularJSONAPIView, SpectacularSwaggerView

from analytics.api.v1 import AnalyticsViewSet
from config.api.views import V1NotFoundView
from conversations.api.v1 import ChatViewSet, ConversationViewSet
from knowledge.api.v1 import DocumentViewSet
from leads.api.v1 import LeadViewSet
from tenants.api.v1 import UserViewSet
from webhooks.api.v1 import WebhookDeliveryViewSet, WebhookViewSet

# The documented API; the OpenAPI schema is generated from exactly these.
routes = [
    path("api/v1/users", UserViewSet.as_view({"get": "list"}), name="v1-users"),
    path("api/v1/users/<str:id>", UserViewSet.as_view({"get": "retrieve"}), name="v1-user"),
    path("api/v1/leads", LeadViewSet.as_view({"get": "list", "post": "create"}),
         name="v1-leads"),
    # Before leads/<id>: "search" is not a lead id.
    path("api/v1/leads/search", LeadViewSet.as_view({"get": "search"}), name="v1-leads-search"),
    path("api/v1/leads/<str:id>",
         LeadViewSet.as_view({"get": "retrieve", "patch": "partial_update", "delete": "destroy"}),
         name="v1-lead"),
    path("api/v1/chat", ChatViewSet.as_view({"post": "create"}), name="v1-chat"),
    path("api/v1/chat/sessions/<str:sessionId>", ChatViewSet.as_view({"get": "retrieve"}),
         name="v1-chat-session"),
    path("api/v1/conversations", ConversationViewSet.as_view({"get": "list"}),
         name="v1-conversations"),
    path("api/v1/conversations/<str:id>",
         ConversationViewSet.as_view({"get": "retrieve", "delete": "destroy"}),
         name="v1-conversation"),
    path("api/v1/conversations/<str:id>/close", ConversationViewSet.as_view({"post": "close"}),
         name="v1-conversation-close"),
    path("api/v1/webhooks", WebhookViewSet.as_view({"get": "list", "post": "create"}),
         name="v1-webhooks"),
    path("api/v1/webhooks/deliveries/<str:id>/retry",
         WebhookDeliveryViewSet.as_view({"post": "retry"}), name="v1-webhook-delivery-retry"),
    path("api/v1/webhooks/<str:id>",
         WebhookViewSet.as_view({"get": "retrieve", "patch": "partial_update",
                                 "delete": "destroy"}), name="v1-webhook"),
    path("api/v1/webhooks/<str:id>/deliveries", WebhookViewSet.as_view({"get": "deliveries"}),
         name="v1-webhook-deliveries"),
    path("api/v1/analytics/overview", AnalyticsViewSet.as_view({"get": "overview"}),
         name="v1-analytics-overview"),
    path("api/v1/analytics/funnel", AnalyticsViewSet.as_view({"get": "funnel"}),
         name="v1-analytics-funnel"),
    path("api/v1/analytics/activity", AnalyticsViewSet.as_view({"get": "activity"}),
         name="v1-analytics-activity"),
    path("api/v1/knowledge-base", DocumentViewSet.as_view({"get": "list", "post": "create"}),
         name="v1-knowledge-base"),
    path("api/v1/knowledge-base/<str:id>",
         DocumentViewSet.as_view({"get": "retrieve", "delete": "destroy"}),
         name="v1-knowledge-base-document"),
]

urlpatterns = [
    *routes,
    path(
        "api/v1/schema",
        SpectacularJSONAPIView.as_view(
            patterns=routes,
            custom_settings={
                "TITLE": "Sales Agent Service API (v1)",
                "SERVERS": [{"url": "/", "description": "This server"}],
            },
        ),
        name="v1-schema",
    ),
    path("api/v1/docs", SpectacularSwaggerView.as_view(url_name="v1-schema"), name="v1-docs"),
    re_path(r"^api/v1(?:/.*)?$", V1NotFoundView.as_view(), name="v1-not-found"),
]
