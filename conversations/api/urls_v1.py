"""The chat and conversations' v1 routes, under ``/api/v1/``."""

from django.urls import path

from .v1 import ChatViewSet, ConversationViewSet

urlpatterns = [
    path("chat", ChatViewSet.as_view({"post": "create"}), name="v1-chat"),
    path("chat/sessions/<str:sessionId>", ChatViewSet.as_view({"get": "retrieve"}),
         name="v1-chat-session"),
    path("conversations", ConversationViewSet.as_view({"get": "list"}), name="v1-conversations"),
    # Before conversations/<id>: "search" is not a conversation id.
    path("conversations/search", ConversationViewSet.as_view({"get": "search"}),
         name="v1-conversations-search"),
    path("conversations/<str:id>",
         ConversationViewSet.as_view({"get": "retrieve", "delete": "destroy"}),
         name="v1-conversation"),
    path("conversations/<str:id>/attachments",
         ConversationViewSet.as_view({"get": "attachments"}), name="v1-conversation-attachments"),
    path("conversations/<str:id>/attachments/<str:attachmentId>",
         ConversationViewSet.as_view({"get": "attachment_content"}),
         name="v1-conversation-attachment"),
    path("conversations/<str:id>/close", ConversationViewSet.as_view({"post": "close"}),
         name="v1-conversation-close"),
]
