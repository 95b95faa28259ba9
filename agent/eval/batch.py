"""A tenant's own questions through its real chat turn, each as a new visitor that leaves
nothing behind (docs/agent.md, "Testing your agent").

As the evaluation's cases (``runner.py``, which says why), each question runs inside one
transaction that is always rolled back: the conversation, the visitor's message and the reply,
a lead the message would have captured, a handoff, the events and the analytics rollups they
move, the emails they call for are written and then undone; what a turn does after its commit
(webhook deliveries, live pushes, tasks, calendar writes) is never started, since the
``on_commit`` callbacks of a rolled-back transaction are dropped. Unlike the evaluation, the
tenant is the real one, with its settings, its staff and its ready documents as they are
committed: the question meets the agent the visitors meet.

What a question produced is judged against what it should have:

- **the fact**: any of the ``|``-separated alternatives is in the reply (case and runs of
  spaces aside): its text, or a button or link it offers (the booking link is one);
- **the decision**: among the decisions the turn took. Those are the decisions taken by meaning
  (``Message.turn["decisions"]``), the intent's (``INTENT_DECISIONS``), and what the turn did:
  a handoff is ``person``, slots or the booking link offered (or a meeting booked) are
  ``meeting``, contact details kept are ``contact``. ``none`` expects none of ``person``,
  ``meeting`` and ``contact``: the agent just answers.
"""

from __future__ import annotations

import logging
import time
import uuid
from dataclasses import asdict, dataclass, field
from typing import Any

from django.db import transaction

from core.errors import ServiceError

from ..providers import provider_for
from .chat import ChatReply, the_chat
from .runner import offers_booking

logger = logging.getLogger("salesagent.agent")

# What a test set may expect (docs/agent.md, "Testing your agent").
DECISIONS = ("person", "meeting", "pricing", "contact", "objection", "not_interested",
             "support", "goodbye", "greeting", "product_question", "none")
# The decisions that change what happens to the visitor: ``none`` expects none of them.
ACTIONS = frozenset({"person", "meeting", "contact"})
INTENT_DECISIONS = {
    "human_request": "person", "demo_request": "meeting", "booking": "meeting",
    "purchase_intent": "meeting", "contact_info": "contact", "pricing": "pricing",
    "product_question": "product_question", "support": "support", "objection": "objection",
    "goodbye": "goodbye", "greeting": "greeting",
}
EXCERPT_CHARS = 300  # of each passage a result keeps


@dataclass
class Result:
    """One question's run, as ``AgentTestSet.last_run["results"]`` keeps it."""

    question: str
    expect_fact: str = ""
    expect_decision: str = ""
    answer: str = ""
    intent: str = ""
    decisions: list[str] = field(default_factory=list)
    passages: list[dict[str, str]] = field(default_factory=list)  # title, excerpt, url
    actions: list[dict[str, str]] = field(default_factory=list)  # label, url: buttons, links
    fact_found: bool | None = None  # None: no fact expected
    decision_found: bool | None = None  # None: no decision expected
    passed: bool | None = None  # None: nothing expected
    error: str = ""  # the turn could not answer: why
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def ask(*, tenant: Any, livemode: bool, question: dict[str, str]) -> Result:
    """``question`` through the tenant's chat turn as a new visitor's first message, inside a
    transaction that is rolled back (a savepoint when the caller holds one)."""
    result = Result(question=question["question"], expect_fact=question.get("expect_fact", ""),
                    expect_decision=question.get("expect_decision", ""))
    started = time.perf_counter()
    try:
        with transaction.atomic():
            try:
                _ask(tenant, livemode, result)
            finally:
                transaction.set_rollback(True)
    except ServiceError as exc:  # the provider failed or is not configured
        result.error = exc.message
    except Exception:
        logger.exception("a test question of tenant %s failed", tenant.pk)
        result.error = "The agent could not answer (an internal error; it is in the logs)."
    result.seconds = round(time.perf_counter() - started, 3)
    return judge(result)


def _ask(tenant: Any, livemode: bool, result: Result) -> None:
    chat = the_chat()
    reply = chat.say(tenant=tenant, livemode=livemode, visitor=f"test-{uuid.uuid4().hex[:16]}",
                     message=result.question, session=None, provider=provider_for(tenant))
    end = chat.end(session=reply.session)
    captured = bool(end.contact.as_dict() or (end.lead and end.lead.as_dict()))
    result.answer = reply.content
    result.intent = reply.intent
    result.decisions = decisions_of(reply, offered=offers_booking(reply.actions,
                                                                   tenant.booking_url),
                                    captured=captured)
    result.passages = [{"title": p.title, "excerpt": _excerpt(p.excerpt or p.text),
                        **({"url": p.url} if p.url else {})} for p in reply.cited]
    result.actions = [{"label": str(a.get("label") or ""),
                       **({"url": str(a["url"])} if a.get("url") else {})}
                      for a in reply.actions]


def decisions_of(reply: ChatReply, *, offered: bool, captured: bool) -> list[str]:
    """The decisions the turn took (the module's docstring), in ``DECISIONS``' order."""
    taken = set(reply.turn.get("decisions") or {})
    intent = INTENT_DECISIONS.get(reply.intent)
    if intent and not (intent == "objection" and "not_interested" in taken):
        taken.add(intent)
    if reply.handed_off:
        taken.add("person")
    if offered or reply.booked:
        taken.add("meeting")
    if captured:
        taken.add("contact")
    return [d for d in DECISIONS if d in taken]


def judge(result: Result) -> Result:
    """Sets whether the result has the expected fact and decision, and passed."""
    if result.expect_fact:
        said = _folded(" ".join([result.answer, *(a.get("url", "") + " " + a["label"]
                                                  for a in result.actions)]))
        result.fact_found = not result.error and any(
            _folded(alternative) in said for alternative in alternatives(result.expect_fact))
    if result.expect_decision:
        taken = set(result.decisions)
        result.decision_found = not result.error and (
            not taken & ACTIONS if result.expect_decision == "none"
            else result.expect_decision in taken)
    verdicts = [v for v in (result.fact_found, result.decision_found) if v is not None]
    result.passed = all(verdicts) if verdicts else None
    return result


def alternatives(expect_fact: str) -> list[str]:
    return [a.strip() for a in expect_fact.split("|") if a.strip()]


def _folded(text: str) -> str:
    return " ".join(text.casefold().split())


def _excerpt(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= EXCERPT_CHARS else text[:EXCERPT_CHARS - 1].rstrip() + "…"
