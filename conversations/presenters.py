"""How conversations, messages and meetings look on each surface, and in event data.

Plain functions over model instances: the list endpoints call them per row without a
serializer's overhead, and the events carry exactly what the v1 surface shows.
"""

from __future__ import annotations

import uuid
from typing import Any

from core.ids import encode
from core.timestamps import format_timestamp, parse_timestamp

from .models import LEGACY_STATUS, Attachment, Conversation, Message


def conv_id(pk: uuid.UUID | None) -> str | None:
    return encode("conv", pk)


def sess_id(pk: uuid.UUID | None) -> str | None:
    return encode("sess", pk)


def msg_id(pk: uuid.UUID | None) -> str | None:
    return encode("msg", pk)


def lead_id(pk: uuid.UUID | None) -> str | None:
    return encode("lead", pk)


def user_id(pk: uuid.UUID | None) -> str | None:
    return encode("user", pk)


def v1_meeting(facts: dict[str, Any]) -> dict[str, Any]:
    """A meeting in v1 event data, from its facts (``events.meeting_facts``). Facts recorded
    before meetings had a host and a sequence read as none and 0."""

    def _uuid(key: str) -> uuid.UUID | None:
        value = facts.get(key)
        return uuid.UUID(value) if value else None

    cancelled_at = facts.get("cancelled_at")
    return {
        "id": encode("mtg", uuid.UUID(facts["id"])),
        "leadId": lead_id(_uuid("lead_id")),
        "conversationId": conv_id(_uuid("conversation_id")),
        "hostId": user_id(_uuid("host_id")),
        "status": facts["status"],
        "startsAt": format_timestamp(parse_timestamp(facts["starts_at"])),
        "endsAt": format_timestamp(parse_timestamp(facts["ends_at"])),
        "timezone": facts["time_zone"],
        "sequence": facts.get("sequence", 0),
        "cancelledAt": format_timestamp(parse_timestamp(cancelled_at)) if cancelled_at else None,
        "createdAt": format_timestamp(parse_timestamp(facts["created_at"])),
    }


def v1_search_result(found: Any) -> dict[str, Any]:
    """A message found by ``GET /api/v1/conversations/search`` (``selectors.Found``)."""
    return {
        "id": msg_id(found.id),
        "role": found.role,
        "content": found.content,
        "author": user_id(found.author_id),
        "createdAt": format_timestamp(found.created_at),
        "conversation": {"id": conv_id(found.conversation_id), "leadId": lead_id(found.lead_id),
                         "status": found.status, "channel": found.channel,
                         "tags": [name for name, _ in found.tags]},
    }


def v1_attachment(attachment: Attachment) -> dict[str, Any]:
    """A file of a conversation (``GET /api/v1/conversations/{id}/attachments``)."""
    conversation = conv_id(attachment.conversation_id)
    file_id = encode("att", attachment.pk)
    return {
        "id": file_id,
        "messageId": msg_id(attachment.message_id),
        "sentBy": "visitor" if attachment.role == "user" else "staff",
        "name": attachment.name,
        "contentType": attachment.content_type,
        "size": attachment.size,
        "sha256": attachment.sha256,
        "url": f"/api/v1/conversations/{conversation}/attachments/{file_id}",
        "createdAt": format_timestamp(attachment.created_at),
    }


def v1_message(message: Message) -> dict[str, Any]:
    data: dict[str, Any] = {
        "id": msg_id(message.pk),
        "role": message.role,
        "content": message.content,
    }
    if message.role == "assistant":
        data["intent"] = message.intent or None
        data["confidence"] = message.confidence
        if getattr(message, "proactive", False):
            data["proactive"] = True  # the tenant's proactive message (docs/widget.md)
    data["createdAt"] = format_timestamp(message.created_at)
    return data


def session_message(message: Message) -> dict[str, Any]:
    """A message of the chat session object: ``intent`` where there is one."""
    data: dict[str, Any] = {"id": msg_id(message.pk), "role": message.role,
                            "content": message.content}
    if message.intent:
        data["intent"] = message.intent
    data["createdAt"] = format_timestamp(message.created_at)
    return data


def v1_conversation_brief(conversation: Conversation) -> dict[str, Any]:
    """The conversation in event data."""
    return {
        "id": conv_id(conversation.pk),
        "leadId": lead_id(conversation.lead_id),
        "visitorId": conversation.visitor_id,
        "channel": conversation.channel,
        "status": conversation.status,
        "messageCount": conversation.message_count,
        "subject": conversation.subject or None,
        "summary": conversation.summary or None,
        "startedAt": format_timestamp(conversation.started_at),
        "lastMessageAt": format_timestamp(conversation.last_message_at),
    }


def v1_conversation(conversation: Conversation) -> dict[str, Any]:
    """The v1 list item: every field but ``metadata`` and ``messages``."""
    return {
        "id": conv_id(conversation.pk),
        "leadId": lead_id(conversation.lead_id),
        "visitorId": conversation.visitor_id,
        "channel": conversation.channel,
        "status": conversation.status,
        "subject": conversation.subject or None,
        "messageCount": conversation.message_count,
        "summary": conversation.summary or None,
        "intents": list(conversation.intents),
        "leadScore": conversation.lead_score,
        "assignedTo": user_id(conversation.assigned_to_id),
        "startedAt": format_timestamp(conversation.started_at),
        "lastMessageAt": format_timestamp(conversation.last_message_at),
        "createdAt": format_timestamp(conversation.created_at),
    }


METADATA_KEYS = ("userAgent", "referrer", "landingPage")


def v1_metadata(conversation: Conversation) -> dict[str, Any]:
    """``userAgent``, ``referrer`` and ``landingPage`` always (null when unknown), then any
    other key the chat request's ``metadata`` carried."""
    meta = dict(conversation.metadata or {})
    return {**{k: meta.pop(k, None) for k in METADATA_KEYS}, **meta}


def legacy_conversation(conversation: Conversation, messages: list[Message]) -> dict[str, Any]:
    return {
        "id": str(conversation.pk),
        "leadId": str(conversation.lead_id) if conversation.lead_id else None,
        "channel": conversation.channel,
        "status": LEGACY_STATUS[conversation.status],
        "summary": conversation.summary,
        "messages": [
            {"role": m.role, "content": m.content, "createdAt": format_timestamp(m.created_at)}
            for m in messages
        ],
    }
