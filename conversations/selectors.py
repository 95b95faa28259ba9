"""Reads of conversations: the filtered, ordered lists and a page of messages."""

from __future__ import annotations

import uuid
from datetime import datetime

from django.db.models import QuerySet

from .models import Conversation, Message

SORT_FIELDS = {"startedAt": "started_at", "lastMessageAt": "last_message_at",
               "messageCount": "message_count"}


def conversation_list(
    queryset: QuerySet[Conversation],
    *,
    leadId: uuid.UUID | None = None,  # noqa: N803 - named after the query parameter
    status: str | None = None,
    channel: str | None = None,
    startDate: datetime | None = None,  # noqa: N803
    endDate: datetime | None = None,  # noqa: N803
    sort_by: str = "lastMessageAt",
    sort_order: str = "desc",
) -> QuerySet[Conversation]:
    """Conversations filtered as the v1 list allows, in a stable order (id breaks ties)."""
    if leadId is not None:
        queryset = queryset.filter(lead_id=leadId)
    if status:
        queryset = queryset.filter(status=status)
    if channel:
        queryset = queryset.filter(channel=channel)
    if startDate is not None:
        queryset = queryset.filter(started_at__gte=startDate)
    if endDate is not None:
        queryset = queryset.filter(started_at__lte=endDate)
    column = SORT_FIELDS[sort_by]
    prefix = "-" if sort_order == "desc" else ""
    return queryset.order_by(f"{prefix}{column}", f"{prefix}id")


def conversation_messages(conversation: Conversation, *, offset: int, limit: int) -> list[Message]:
    """A window of the messages, oldest first: ``offset`` skipped from the beginning."""
    return list(conversation.messages.order_by("sequence")[offset:offset + limit])


def lead_conversations(queryset: QuerySet[Conversation], *, lead_id: uuid.UUID) -> QuerySet[Conversation]:
    """A lead's conversations, most recent first."""
    return queryset.filter(lead_id=lead_id).order_by("-last_message_at", "-id")


def lead_conversation_count(*, lead_id: uuid.UUID) -> int:
    """How many conversations the lead has had (its single read's ``conversationCount``)."""
    return Conversation.objects.filter(lead_id=lead_id).count()
