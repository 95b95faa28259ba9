"""Appending a message to a conversation: the one place that numbers messages."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ..models import Conversation, Message


def append_message(conversation: Conversation, *, role: str, content: str, now: datetime,
                   **fields: Any) -> Message:
    """Stores the next message of ``conversation`` (held by the caller, who saves its new
    ``message_count`` and ``last_message_at``)."""
    message = Message.objects.create(
        conversation=conversation, tenant_id=conversation.tenant_id, livemode=conversation.livemode,
        sequence=conversation.message_count, role=role, content=content, created_at=now, **fields,
    )
    conversation.message_count += 1
    conversation.last_message_at = now
    return message
