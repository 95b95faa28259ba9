"""Helpers for the inbox tests (docs/dashboard.md, "Inbox"): conversations with the messages a
test needs, written through the conversation services, and a listener on a live group."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import transaction
from django.utils import timezone

from conversations.models import Conversation
from conversations.services.lifecycle import conversation_start
from conversations.services.messages import append_message
from tests.factories import TenantKit


def conversation_with(kit: TenantKit, *messages: tuple[str, str], mode: str = "live",
                      visitor: str = "v-inbox", channel: str = "web_chat", **fields
                      ) -> Conversation:
    """A conversation of ``kit``'s tenant with ``messages`` ((role, content), oldest first),
    started and numbered by the services; ``fields`` (status, lead, metadata, ...) set on it."""
    now = timezone.now()
    with transaction.atomic():
        conversation = conversation_start(
            tenant=kit.tenant, livemode=mode == "live", visitor_id=visitor, channel=channel,
            metadata=fields.pop("metadata", {}), language=fields.pop("language", "en"), now=now)
        for role, content in messages:
            append_message(conversation, role=role, content=content, now=timezone.now())
        for name, value in fields.items():
            setattr(conversation, name, value)
        conversation.save()
    return conversation


@contextmanager
def listening(group: str) -> Iterator:
    """Listens to a live group (``conversations.live``) from here on; the callable it gives
    returns the ``(event, data)`` received, waiting up to ``wait`` seconds for the first. Call it
    once: the in-memory layer's queue then belongs to that call's event loop."""
    layer = get_channel_layer()
    channel = async_to_sync(layer.new_channel)()
    async_to_sync(layer.group_add)(group, channel)

    async def take(wait: float) -> list[tuple[str, dict]]:
        received = []
        try:
            while True:
                message = await asyncio.wait_for(layer.receive(channel), wait if not received else 0.1)
                received.append((message["event"], message["data"]))
        except TimeoutError:
            return received

    try:
        yield lambda wait=0.5: async_to_sync(take)(wait)
    finally:
        async_to_sync(layer.group_discard)(group, channel)
