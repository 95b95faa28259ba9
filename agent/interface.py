"""The agent as the rest of the service sees it: the one module ``conversations`` imports.

In a turn the agent never touches the database: ``conversations.services`` loads what a turn
needs into the plain data below, calls the agent, and writes what comes back. What crosses the boundary:

- **Data** (``agent.types``): ``TurnContext`` (the message, its history, the lead, the tenant's
  facts, the passages retrieved, the limits of a reply) in; ``Analysis`` (intent, contact,
  signals, handoff) and ``ReplyPlan`` (what the reply must say) between the two provider calls;
  ``Contact``, ``Handoff``, ``Slot`` and the others are their parts. ``INTENTS`` is the intent
  vocabulary.
- **Choosing the provider**: ``provider_for(tenant)`` gives the tenant's ``Provider`` (builtin
  or OpenAI), whose ``analyze(ctx)`` reads a message and whose ``reply(ctx, analysis, plan)``
  streams the answer. ``BuiltinProvider`` is also the fallback when a model's analysis is unusable
  (``AnalysisUnusable``); ``compose`` is the builtin's reply, the ending of a cut one.
- **Understanding** (``agent.rules``): ``classify`` (the rules' intent and confidence),
  ``read_message`` (everything the rules are sure of in a message), ``said_by_visitor`` (the
  contact details the visitor really typed).
- **Guarding a reply** (``agent.guard``): ``ReplyGuard`` holds every reply within its cap, on
  whole sentences, without loops, unsupported figures or the ``private_instructions``;
  ``fit`` shortens a text on a word.
- **Scoring** (``agent.scoring``): ``lead_score`` and ``qualifies``; ``BANT`` names its signals.
- **Summary** (``agent.summary``): ``conversation_subject`` and ``conversation_summary``, the
  builtin's when the provider gave none.
- **Wording** (``agent.phrases``): ``phrase(language, key)`` and ``BUILTIN_LANGUAGES``.
- **When** (``agent.when``): ``read_wish`` reads the days and parts of the day a visitor asks
  to meet at ("next week", "morgen Vormittag") as a ``Wish``, which shapes the offered slots.

- **The evaluation's chat** (``agent.eval.chat``): the evaluation (``manage.py eval_agent``)
  runs its cases through the real chat turn, which ``conversations`` owns: it registers a
  ``Chat`` (``say`` a message, giving a ``ChatReply``; ``end``, giving a ``ChatEnd``) with
  ``use_chat`` when it starts.
"""

from __future__ import annotations

from .eval.chat import Chat, ChatEnd, ChatReply, use_chat
from .guard import ReplyGuard, fit
from .phrases import SUPPORTED as BUILTIN_LANGUAGES
from .phrases import phrase
from .prompts import private as private_instructions
from .providers import Provider, provider_for
from .providers.base import AnalysisUnusable
from .providers.builtin import BuiltinProvider, compose
from .rules import classify, said_by_visitor
from .rules import read as read_message
from .scoring import BANT, qualifies
from .scoring import score as lead_score
from .summary import subject as conversation_subject
from .summary import summary as conversation_summary
from .types import (
    INTENTS,
    Analysis,
    Contact,
    Handoff,
    HistoryMessage,
    LeadSnapshot,
    Passage,
    ReplyLimits,
    ReplyPlan,
    Slot,
    TenantFacts,
    TurnContext,
)
from .when import Wish, read_wish


def warm_up() -> None:
    """Loads the models a turn uses (docs/agent.md, "How the agent understands"); each loads
    once per process, so a turn after this pays for none of them."""
    from core import embeddings, languages

    from . import understanding

    embeddings.warm_up()
    languages.warm_up()
    understanding.warm_up()


__all__ = [
    "BANT", "BUILTIN_LANGUAGES", "INTENTS", "Analysis", "AnalysisUnusable", "BuiltinProvider",
    "Chat", "ChatEnd", "ChatReply", "Contact", "Handoff", "HistoryMessage", "LeadSnapshot",
    "Passage", "Provider", "ReplyGuard", "ReplyLimits", "ReplyPlan", "Slot", "TenantFacts",
    "TurnContext", "Wish", "classify", "compose", "conversation_subject", "conversation_summary", "fit",
    "lead_score", "phrase", "private_instructions", "provider_for", "qualifies", "read_message",
    "read_wish", "said_by_visitor", "use_chat", "warm_up",
]
