"""The chat turn the evaluation talks to.

The evaluation measures the agent inside the service's real chat turn (sessions, capture,
scoring, handoff, the guard), which ``conversations`` owns. The agent imports nothing of
``conversations`` (the apps form a DAG, docs/architecture.md), so the turn reaches the
evaluation the other way round: ``conversations`` registers its ``Chat`` here when it starts
(``ConversationsConfig.ready``), as apps register their event subscribers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol
from uuid import UUID

from ..providers import Provider
from ..types import Contact, Passage


@dataclass(frozen=True)
class ChatReply:
    """One turn's reply, as the evaluation (and a tenant's test set) reads it."""

    session: UUID  # the conversation, which the next message continues
    content: str
    # Message.turn: what the turn recorded (``stopped``: the guard's reason; ``decisions``, when
    # the agent records them: decision -> evidence)
    turn: dict[str, Any]
    actions: list[dict[str, Any]]  # the reply's suggested actions
    intent: str = ""  # Message.intent: what the analysis read in the visitor's message
    handoff: dict[str, Any] | None = None  # Message.handoff: set when this turn handed off
    contact: Contact = field(default_factory=Contact)  # the conversation's details after the turn
    booked: bool = False  # the turn booked a meeting
    cited: tuple[Passage, ...] = ()  # the knowledge passages the reply used (Message.sources)


@dataclass(frozen=True)
class ChatEnd:
    """What a conversation came to."""

    contact: Contact  # the details the conversation holds
    lead: Contact | None  # its lead's, when it has one
    handed_off: bool


class Chat(Protocol):
    def say(self, *, tenant: Any, visitor: str, message: str, session: UUID | None,
            provider: Provider, livemode: bool = True) -> ChatReply:
        """``message`` through one whole turn on this thread's database connection, in the
        tenant's live data or (``livemode=False``) its test data."""

    def end(self, *, session: UUID) -> ChatEnd: ...


_chat: Chat | None = None


def use_chat(chat: Chat) -> None:
    """The chat turn the evaluation runs its cases through."""
    global _chat
    _chat = chat


def the_chat() -> Chat:
    if _chat is None:
        raise RuntimeError("No chat turn to evaluate: the conversations app registers one when "
                           "Django starts (ConversationsConfig.ready).")
    return _chat
