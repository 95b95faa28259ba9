"""The chat and conversations' legacy routes, under ``/api/``."""

from django.urls import path

from .legacy import LegacyConversationViewSet, PublicChatView

urlpatterns = [
    path("chat", PublicChatView.as_view(), name="legacy-chat"),
    path("conversations/<str:id>", LegacyConversationViewSet.as_view({"get": "retrieve"}),
         name="legacy-conversation"),
    path("leads/<str:id>/conversations",
         LegacyConversationViewSet.as_view({"get": "by_lead"}), name="legacy-lead-conversations"),
]
