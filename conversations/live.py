"""Live events of a conversation, carried by the Channels layer to every open stream of it.

``push`` subscribes, after commit, to the events an open stream shows: a person's reply, a
visitor's message while a person has the conversation, and changes of status. Streams (the
widget's ``GET /api/chat/stream``, the dashboard's transcript) listen to one group per
conversation. With the in-memory layer of the embedded default this works within one process;
production uses the Redis layer (``REDIS_URL``), so the rep's request and the visitor's stream
may be served by different processes or machines.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import AsyncIterator
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

from core.models import Event, EventType
from core.timestamps import format_timestamp, parse_timestamp
from tenants.models import User

from .models import Conversation, ConversationStatus, Message

logger = logging.getLogger("salesagent.live")

KEEPALIVE_SECONDS = 15.0  # a comment frame this often keeps proxies from closing idle streams
ENDED = frozenset({"closed", "expired"})
PUSHED_EVENTS = (
    EventType.MESSAGE_RECEIVED, EventType.MESSAGE_SENT, EventType.CONVERSATION_HANDOFF,
    EventType.CONVERSATION_ASSIGNED, EventType.CONVERSATION_HANDED_BACK,
    EventType.CONVERSATION_COMPLETED,
)


def group_name(conversation_id: uuid.UUID) -> str:
    return f"conversation.{conversation_id.hex}"


def _message(*, id: Any, role: str, content: str, author: str | None, created_at: str | None
             ) -> dict[str, Any]:
    """A message as the live streams show it (legacy surface: UUIDs)."""
    return {"id": str(id), "role": role, "content": content,
            "author": {"name": author} if author else None, "createdAt": created_at}


def _status(status: str, agent: str | None) -> dict[str, Any]:
    return {"status": status, "agent": {"name": agent} if agent else None}


def message_payload(message: Message) -> dict[str, Any]:
    author = message.author
    return _message(id=message.pk, role=message.role, content=message.content,
                    author=author.display_name if author is not None else None,
                    created_at=format_timestamp(message.created_at))


def status_payload(conversation: Conversation) -> dict[str, Any]:
    agent = conversation.assigned_to if conversation.assigned_to_id else None
    return _status(conversation.status, agent.display_name if agent is not None else None)


def _name_of(user_id: str | None) -> str | None:
    user = User.objects.filter(pk=user_id).first() if user_id else None
    return user.display_name if user is not None else None


def push(event: Event) -> None:
    """After-commit subscriber of ``PUSHED_EVENTS``: tells the conversation's open streams."""
    conversation = event.facts["conversation"]
    if event.type not in (EventType.MESSAGE_RECEIVED, EventType.MESSAGE_SENT):
        _send(event.conversation_id, "status",
              _status(conversation["status"], _name_of(conversation["assigned_to_id"])))
        return
    message = event.facts["message"]
    # A person's reply reaches the visitor, a visitor's message the person who has the
    # conversation; the agent's own replies travel in the chat responses.
    if (message["author_id"] if event.type == EventType.MESSAGE_SENT
            else conversation["status"] == ConversationStatus.HANDED_OFF):
        _send(event.conversation_id, "message", _message(
            id=message["id"], role=message["role"], content=message["content"],
            author=_name_of(message["author_id"]),
            created_at=format_timestamp(parse_timestamp(message["created_at"]))))


def _send(conversation_id: uuid.UUID, event: str, data: dict[str, Any]) -> None:
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        async_to_sync(layer.group_send)(group_name(conversation_id),
                                        {"type": "conversation.event", "event": event, "data": data})
    except Exception:
        # The write is committed; a stream that misses this event catches up on reconnect.
        logger.exception("could not publish %s to conversation %s", event, conversation_id)


async def listen(conversation_id: uuid.UUID, *, snapshot=None
                 ) -> AsyncIterator[tuple[str, dict[str, Any]] | None]:
    """The conversation's live events as ``(event, data)``, and ``None`` when it is time for a
    keep-alive. ``snapshot`` (an async callable) is read after subscribing, so that nothing
    written between the two is missed; its result is the first event, ``session``. Ends after
    a status event that ends the conversation."""
    layer = get_channel_layer()
    channel = await layer.new_channel()
    group = group_name(conversation_id)
    await layer.group_add(group, channel)
    pending: asyncio.Future | None = None
    try:
        if snapshot is not None:
            first = await snapshot()
            yield "session", first
            if first.get("status") in ENDED:
                return
        while True:
            if pending is None:
                pending = asyncio.ensure_future(layer.receive(channel))
            done, _ = await asyncio.wait({pending}, timeout=KEEPALIVE_SECONDS)
            if not done:
                yield None
                continue
            message, pending = pending.result(), None
            yield message["event"], message["data"]
            if message["event"] == "status" and message["data"].get("status") in ENDED:
                return
    finally:
        if pending is not None:
            pending.cancel()
        await asyncio.shield(layer.group_discard(group, channel))
