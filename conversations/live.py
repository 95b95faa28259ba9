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
from django.core.cache import cache

from agent.interface import phrase
from config import shutdown
from core.breaker import Breaker
from core.models import Event, EventType
from core.timestamps import format_timestamp, parse_timestamp
from tenants.models import User

from . import mail
from .attachments import attachment_payload
from .models import Attachment, Conversation, ConversationStatus, Message, Note

logger = logging.getLogger("salesagent.live")

KEEPALIVE_SECONDS = 15.0  # a comment frame this often keeps proxies from closing idle streams
# After a ``reconnect`` event, how long a client waits before it connects again (the widget adds
# a random part, so that a process's streams do not all come back at the same instant).
RECONNECT_MS = 250
# A push waits this long at most for the channel layer (Redis in production).
PUSH_TIMEOUT_SECONDS = 1.0
_layer = Breaker("the channel layer", cooldown=5.0, kind="channel_layer")
ENDED = frozenset({"closed", "expired"})
PUSHED_EVENTS = (
    EventType.MESSAGE_RECEIVED, EventType.MESSAGE_SENT, EventType.CONVERSATION_HANDOFF,
    EventType.CONVERSATION_ASSIGNED, EventType.CONVERSATION_HANDED_BACK,
    EventType.CONVERSATION_COMPLETED,
)


def group_name(conversation_id: uuid.UUID) -> str:
    return f"conversation.{conversation_id.hex}"


def _message(*, id: Any, role: str, content: str, author: str | None, created_at: str | None,
             attachments: list[Attachment]) -> dict[str, Any]:
    """A message as the live streams show it (legacy surface: UUIDs), with its files."""
    return {"id": str(id), "role": role, "content": content,
            "author": {"name": author} if author else None, "createdAt": created_at,
            "attachments": [attachment_payload(a) for a in attachments]}


def _status(status: str, agent: User | None, *, joined: bool, language: str, hours: str
            ) -> dict[str, Any]:
    return {"status": status,
            "agent": {"name": agent.display_name, "joined": joined} if agent is not None else None,
            "notice": handoff_notice(status, agent, joined=joined, language=language, hours=hours)}


def handoff_notice(status: str, agent: User | None, *, joined: bool, language: str, hours: str
                   ) -> str | None:
    """What the visitor is told while a person has the conversation: who will reply and roughly
    when (the tenant's business hours), until that person takes it over or first replies, then
    that they joined. Derived from the stored state alone, so a reload shows it again."""
    if status != ConversationStatus.HANDED_OFF:
        return None
    name = (agent.first_name or agent.display_name) if agent is not None else None
    if name and joined:
        return phrase(language, "notice_joined", name=name)
    if hours:
        when = phrase(language, "notice_within_hours", hours=hours)
    else:  # "shortly" only when someone available has it; a waiting handoff promises no time
        when = phrase(language, "notice_shortly") if name else ""
    if name:
        return phrase(language, "notice_will_reply", name=name, when=when)
    return phrase(language, "notice_someone_will_reply", when=when)


def message_payload(message: Message, attachments: list[Attachment]) -> dict[str, Any]:
    author = message.author
    return _message(id=message.pk, role=message.role, content=message.content,
                    author=author.display_name if author is not None else None,
                    created_at=format_timestamp(message.created_at), attachments=attachments)


def spoken_language(language: str, metadata: dict[str, Any] | None) -> str:
    """The language of the service's notices: the conversation's, else the one the widget shows
    its words in (docs/widget.md, "Languages"), else English."""
    return language or (metadata or {}).get("widgetLanguage") or "en"


def status_payload(conversation: Conversation) -> dict[str, Any]:
    """The conversation's status as the live streams show it (``tenant`` and ``assigned_to``
    loaded with it)."""
    agent = conversation.assigned_to if conversation.assigned_to_id else None
    return _status(conversation.status, agent, joined=conversation.joined_at is not None,
                   language=spoken_language(conversation.language, conversation.metadata),
                   hours=conversation.tenant.business_hours)


def _person(user_id: str | None) -> User | None:
    return User.objects.filter(pk=user_id).first() if user_id else None


def _name_of(user_id: str | None) -> str | None:
    user = _person(user_id)
    return user.display_name if user is not None else None


def _status_of(event: Event) -> dict[str, Any]:
    """The status an event records, in the conversation's language and with the tenant's
    business hours as they are now."""
    conversation = event.facts["conversation"]
    language, metadata, hours = (Conversation.objects.filter(pk=event.conversation_id)
                                 .values_list("language", "metadata", "tenant__business_hours")
                                 .first() or ("", {}, ""))
    language = spoken_language(language, metadata)
    return _status(conversation["status"], _person(conversation["assigned_to_id"]),
                   joined=conversation.get("joined_at") is not None, language=language,
                   hours=hours)


def push(event: Event) -> None:
    """After-commit subscriber of ``PUSHED_EVENTS``: tells the conversation's open streams."""
    conversation = event.facts["conversation"]
    if event.type not in (EventType.MESSAGE_RECEIVED, EventType.MESSAGE_SENT):
        _send(event.conversation_id, "status", _status_of(event))
        return
    message = event.facts["message"]
    if message["author_id"] and conversation.get("joined_at") == message["created_at"]:
        # The person joins with this first reply: the visitor is told before reading it.
        _send(event.conversation_id, "status", _status_of(event))
    # A person's reply reaches the visitor, a visitor's message the person who has the
    # conversation; the agent's own replies travel in the chat responses.
    if (message["author_id"] if event.type == EventType.MESSAGE_SENT
            else conversation["status"] == ConversationStatus.HANDED_OFF):
        _send(event.conversation_id, "message", _message(
            id=message["id"], role=message["role"], content=message["content"],
            author=_name_of(message["author_id"]),
            created_at=format_timestamp(parse_timestamp(message["created_at"])),
            attachments=list(Attachment.objects.filter(message_id=message["id"])
                             .order_by("created_at", "id"))))


def _send(conversation_id: uuid.UUID, event: str, data: dict[str, Any]) -> None:
    """Publishes to the conversation's streams."""
    _publish(group_name(conversation_id), event, data)


def _publish(group: str, event: str, data: dict[str, Any]) -> None:
    """Publishes to a group's streams. The write is committed and a stream that misses this
    catches up on reconnect, so a layer that cannot be reached costs the write at most
    ``PUSH_TIMEOUT_SECONDS``, and after a failure nothing for a few seconds (``core.breaker``)."""
    layer = get_channel_layer()
    if layer is None or not _layer.allows():
        return
    try:
        async_to_sync(_group_send)(layer, group,
                                   {"type": "conversation.event", "event": event, "data": data})
    except Exception as exc:
        _layer.failed(exc)
        logger.warning("could not publish %s to %s (%s: %s)", event, group,
                       type(exc).__name__, exc)
    else:
        _layer.succeeded()


# --- a person's own stream: every open dashboard page of theirs -------------------------------

ASSIGNMENT_EVENTS = (EventType.CONVERSATION_HANDOFF, EventType.CONVERSATION_ASSIGNED)


def user_group(user_id: uuid.UUID) -> str:
    return f"user.{user_id.hex}"


def push_assignment(event: Event) -> None:
    """After-commit subscriber of ``ASSIGNMENT_EVENTS``: a conversation given to a person who
    did not take it themselves appears at once on each of their open dashboard pages."""
    conversation = event.facts["conversation"]
    assignee = conversation["assigned_to_id"]
    if (not assignee or conversation.get("joined_at")
            or conversation["status"] != ConversationStatus.HANDED_OFF):
        return
    row = (Conversation.objects.filter(pk=event.conversation_id)
           .values_list("handoff", "contact", "subject").first())
    if row is not None:
        _publish(user_group(uuid.UUID(assignee)), "handoff", _handoff_toast(event, *row))


def _handoff_toast(event: Event, handoff: dict | None, contact: dict | None, subject: str
                   ) -> dict[str, Any]:
    """What a person's pages show of a handoff given to them: who, why, and where it is."""
    contact = contact or {}
    return {
        "conversation": str(event.conversation_id),
        "url": f"/dashboard/conversations/{event.conversation_id}/",
        "livemode": event.livemode,
        "who": contact.get("name") or contact.get("email") or subject or "A visitor",
        "reason": (handoff or {}).get("reason") or "",
    }


def push_mentions(event: Event) -> None:
    """After-commit subscriber of ``note.created``: each teammate the note mentions sees a toast
    on their open pages, with the note's beginning and a link to it."""
    facts = event.facts["note"]
    if not facts.get("mentions"):
        return
    note = (Note.objects.select_related("author", "lead", "conversation__lead")
            .filter(pk=facts["id"]).first())
    if note is None:
        return
    toast = {"note": str(note.pk), "livemode": event.livemode,
             "author": note.author.display_name if note.author else "A teammate",
             "about": mail.note_subject(note), "excerpt": note.content[:140],
             "url": mail.note_path(note)}
    for user_id in facts["mentions"]:
        _publish(user_group(uuid.UUID(user_id)), "mention", toast)


def push_presence(event: Event) -> None:
    """After-commit subscriber of ``user.status_changed``: the person's open pages show it."""
    _publish(user_group(uuid.UUID(event.facts["user_id"])), "presence",
             {"status": event.facts["status"]})


# --- typing: both ways between a person and the visitor, never stored ---------------------------

# A side's typing is passed on at most this often (the pages send it about as often); each page
# shows it for TYPING_SHOWN_SECONDS after the last one (static/dashboard/transcript.js, widget.js).
TYPING_EVERY_SECONDS = 2


def typing(conversation_id: uuid.UUID, *, role: str, name: str | None = None) -> bool:
    """Tells the conversation's open streams that its visitor (``role`` "user") or the person
    who has it (``role`` "assistant", with their ``name``) is typing. Nothing is written: one
    cache key per side keeps it to one push each ``TYPING_EVERY_SECONDS`` whatever the pages
    send (shared by every process through the cache). Returns whether it was passed on."""
    if not cache.add(f"typing:{conversation_id.hex}:{role}", 1, timeout=TYPING_EVERY_SECONDS):
        return False
    _send(conversation_id, "typing",
          {"role": role, "author": {"name": name} if name else None})
    return True


async def _group_send(layer, group: str, message: dict[str, Any]) -> None:
    await asyncio.wait_for(layer.group_send(group, message), PUSH_TIMEOUT_SECONDS)


async def listen(conversation_id: uuid.UUID, *, snapshot=None
                 ) -> AsyncIterator[tuple[str, dict[str, Any]] | None]:
    """The conversation's live events (``listen_group`` of its group)."""
    async for item in listen_group(group_name(conversation_id), snapshot=snapshot):
        yield item


async def listen_group(group: str, *, snapshot=None, keepalive: float = KEEPALIVE_SECONDS
                       ) -> AsyncIterator[tuple[str, dict[str, Any]] | None]:
    """A group's live events as ``(event, data)``, and ``None`` every ``keepalive`` seconds
    without one (time for a keep-alive). ``snapshot`` (an async callable) is read after
    subscribing, so that nothing written between the two is missed; its result is the first
    event, ``session``. Ends after a status event that ends a conversation, or with a
    ``reconnect`` event when the process is asked to stop (config/shutdown.py): the client
    connects again, to a process that serves, and its ``session`` event catches it up."""
    layer = get_channel_layer()
    channel = await layer.new_channel()
    await layer.group_add(group, channel)
    pending: asyncio.Future | None = None
    stopping = shutdown.drain_future()
    try:
        if snapshot is not None:
            first = await snapshot()
            yield "session", first
            if first.get("status") in ENDED:
                return
        while True:
            if stopping.done():
                yield "reconnect", {"retryMs": RECONNECT_MS}
                return
            if pending is None:
                pending = asyncio.ensure_future(layer.receive(channel))
            done, _ = await asyncio.wait({pending, stopping}, timeout=keepalive,
                                         return_when=asyncio.FIRST_COMPLETED)
            if pending not in done:
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
