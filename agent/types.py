"""Plain data exchanged between the chat service and the providers."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from uuid import UUID

from knowledge.retrieval import Passage

# The intent vocabulary (docs/agent.md). Every visitor message gets exactly one.
INTENTS = (
    "greeting",
    "product_question",
    "pricing",
    "demo_request",
    "purchase_intent",
    "booking",
    "support",
    "human_request",
    "contact_info",
    "objection",
    "goodbye",
    "other",
)

PRIORITIES = ("low", "normal", "high", "urgent")
TEAMS = ("sales", "support", "customer_success")


@dataclass(frozen=True)
class HistoryMessage:
    role: str  # "user" or "assistant"
    content: str


@dataclass(frozen=True)
class Slot:
    start: datetime  # aware, UTC
    end: datetime
    # As the visitor reads it, "Tue 24 Nov, 10:00 (Paris)", or as the staff do, in the tenant's
    # zone, "Tue 24 Nov, 10:00 CET" (conversations.scheduling.make_slot)
    label: str

    @property
    def token(self) -> str:
        """What a visitor's "book" message carries to choose this slot."""
        return self.start.strftime("%Y-%m-%dT%H:%MZ")


@dataclass(frozen=True)
class Contact:
    email: str | None = None
    name: str | None = None
    company: str | None = None
    title: str | None = None
    phone: str | None = None

    def merged(self, other: Contact) -> Contact:
        """Fields of ``other`` fill the gaps of this one; known values are kept."""
        return Contact(**{k: getattr(self, k) or getattr(other, k) for k in self.__dataclass_fields__})

    def as_dict(self) -> dict[str, str]:
        return {k: v for k, v in self.__dict__.items() if v}


@dataclass(frozen=True)
class Handoff:
    reason: str
    priority: str = "normal"
    suggested_team: str = "sales"

    def as_dict(self) -> dict[str, str]:
        return {"reason": self.reason, "priority": self.priority, "suggestedTeam": self.suggested_team}


@dataclass(frozen=True)
class LeadSnapshot:
    email: str | None
    name: str | None
    company: str | None
    status: str
    score: int


@dataclass(frozen=True)
class TenantFacts:
    """What the agent may state about the tenant besides its knowledge base (docs/agent.md,
    "Grounding")."""

    product: str = ""
    pricing_url: str = ""
    business_hours: str = ""
    booking_url: str = ""

    def as_dict(self) -> dict[str, str]:
        return {k: v for k, v in self.__dict__.items() if v}


@dataclass(frozen=True)
class ReplyLimits:
    """The tenant's limits of every reply (docs/agent.md, "Reply limits")."""

    max_tokens: int = 300
    max_chars: int = 1200
    turn_seconds: float = 20.0


@dataclass(frozen=True)
class TurnContext:
    """Everything a provider may use to answer one visitor message."""

    tenant_name: str
    message: str
    history: list[HistoryMessage]
    language: str  # ISO 639-1, requested or detected
    passages: list[Passage] = field(default_factory=list)
    lead: LeadSnapshot | None = None
    known_contact: Contact = field(default_factory=Contact)
    signals: frozenset[str] = frozenset()  # BANT and interest signals seen so far
    slots: list[Slot] = field(default_factory=list)  # free meeting slots to offer
    booking_url: str = ""
    meeting_booked: bool = False
    facts: TenantFacts = field(default_factory=TenantFacts)
    limits: ReplyLimits = field(default_factory=ReplyLimits)
    # The tenant's own example phrasings, (decision, text) each (docs/agent.md, "Adding
    # phrasings"): a message close to one in meaning takes its decision.
    tenant_examples: tuple[tuple[str, str], ...] = ()

    def grounding_sources(self) -> list[str]:
        """Everything the reply may take a figure from: the passages, the tenant's facts, the
        conversation, the slots and the contact details the visitor gave."""
        return [*(f"{p.title} {p.text or p.excerpt}" for p in self.passages), *self.facts.as_dict().values(),
                self.tenant_name, self.message, *(m.content for m in self.history),
                *(s.label for s in self.slots), *self.known_contact.as_dict().values()]


@dataclass(frozen=True)
class Analysis:
    """What a visitor message means: the part of a turn that changes state."""

    intent: str
    confidence: float
    contact: Contact = field(default_factory=Contact)
    signals: frozenset[str] = frozenset()
    handoff: Handoff | None = None
    wants_meeting: bool = False
    chosen_slot: str | None = None  # a Slot.token
    ends_conversation: bool = False
    language: str | None = None  # of the visitor's message, when the provider can tell
    subject: str | None = None  # the conversation's topic, when the provider writes one
    summary: str | None = None  # the conversation so far, when the provider writes one
    cited: tuple[int, ...] = ()  # indexes into TurnContext.passages that the reply may use
    # The decisions taken by meaning, each with its evidence (agent.understanding), for
    # Message.turn["decisions"].
    decisions: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ReplyPlan:
    """What the service decided after the analysis, which the reply must reflect."""

    lead_captured: bool = False
    needs_email: bool = False
    qualified: bool = False
    booked_slot: Slot | None = None
    meeting_id: UUID | None = None
    confirmation_email: bool = False  # the visitor will get one: the reply may promise it
    slot_unavailable: bool = False
    offer_slots: list[Slot] = field(default_factory=list)
    # The visitor asked for a time (``agent.when``) and none of the offered slots is then.
    wish_unmet: bool = False
    booking_url: str = ""
    handoff: Handoff | None = None
    # A handoff nobody was available for (docs/dashboard.md, "Availability and routing"): it
    # waits, and the reply says when someone will reply: the next opening, as the visitor reads
    # it ("Tue 24 Nov, 09:00 (Paris)"), or that the team is busy now (``handoff_busy``).
    handoff_waiting: bool = False
    handoff_opening: str = ""
    handoff_busy: bool = False
    next_question: str | None = None  # the BANT signal to ask about next


@dataclass
class Reply:
    content: str
    suggested_actions: list[dict[str, Any]] = field(default_factory=list)
    cited: list[Passage] = field(default_factory=list)
