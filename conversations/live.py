"""Live events of a conversation, carried by the Channels layer to every open stream of it.

A human rep's reply, a visitor's message while a person has the conversation, and changes of
status are sent to one group per conversation after the writing transaction commits. Streams
(the widget's ``GET /api/chat/stream``, the dashboard's transcript) listen to that group. With
the in-memory layer of the embedded default this works within one process; production uses the
Redis layer (``REDIS_URL``), so the rep's request and the visitor's stream may be served by
different processes or machines.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import AsyncIterator
from functools import partial
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import transaction

from config.api.fields import format_timestamp

from .models import Conversation, Message

logger = logging.getLogger("salesagent.live")

KEEPALIVE_SECONDS = 15.0  # a comment frame this often keeps proxies from closing idle streams
ENDED = frozenset({"closed", "expired"})


def group_name(conversation_id: uuid.UUID) -> str:
    return f"conversation.{conversation_id.hex}"


def message_payload(message: Message) -> dict[str, Any]:
    """A message as the live streams show it (legacy surface: UUIDs)."""
    author = message.author
    return {
        "id": str(message.pk),
        "role": message.role,
        "content": message.content,
        "author": {"name": author.display_name} if author is not None else None,
        "createdAt": format_timestamp(message.created_at),
    }


def status_payload(conversation: Conversation) -> dict[str, Any]:
    agent = conversation.assigned_to if conversation.assigned_to_id else None
    return {"status": conversation.status,
            "agent": {"name": agent.display_name} if agent is not None else None}


def publish(conversation_id: uuid.UUID, event: str, data: dict[str, Any]) -> None:
    """Sends ``event`` to the conversation's open streams once the transaction commits."""
    transaction.on_commit(partial(_send, conversation_id, event, data))


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
