"""The widget's legacy routes, under ``/api/`` (public: the widget on customers' pages)."""

from django.urls import path

from .legacy import (
    AttachmentView,
    ChatStreamView,
    ProactiveShownView,
    RatingView,
    TypingView,
    WidgetConfigView,
)

urlpatterns = [
    path("chat/attachments/<uuid:attachment_id>", AttachmentView.as_view(),
         name="legacy-chat-attachment"),
    path("chat/stream", ChatStreamView.as_view(), name="legacy-chat-stream"),
    path("chat/rating", RatingView.as_view(), name="legacy-chat-rating"),
    path("chat/typing", TypingView.as_view(), name="legacy-chat-typing"),
    path("widget", WidgetConfigView.as_view(), name="legacy-widget"),
    path("widget/proactive", ProactiveShownView.as_view(), name="legacy-widget-proactive"),
]
