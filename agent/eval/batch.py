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
- **the decision**: among the decisions the turn took, as the evaluation reads them from the
  turn's record (``decisions.turn_decisions``: what the turn did, its intent, and what it
  decided by meaning), a meeting booked counting as one offered. ``none`` expects none of the
  acts (``person``, ``meeting``, ``contact``): the agent just answers.
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
from .cases import CONTACT_FIELDS
from .chat import the_chat
from .decisions import ACTS, DECISIONS, turn_decisions
from .runner import _offers_booking

logger = logging.getLogger("salesagent.agent")

# What a test set's question may expect: a decision, or ``none`` of the acts.
EXPECTED = (*DECISIONS, "none")
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
    reply = the_chat().say(tenant=tenant, livemode=livemode,
                           visitor=f"test-{uuid.uuid4().hex[:16]}", message=result.question,
                           session=None, provider=provider_for(tenant))
    offered = _offers_booking(reply.actions, tenant.booking_url) or reply.booked
    captured = [k for k in reply.contact.as_dict() if k in CONTACT_FIELDS]
    taken = turn_decisions(intent=reply.intent, turn=reply.turn, handoff=reply.handoff,
                           offered_meeting=offered, captured=captured)
    result.answer = reply.content
    result.intent = reply.intent
    result.decisions = sorted(taken, key=lambda d: (d not in DECISIONS, _rank(d), d))
    result.passages = [{"title": p.title, "excerpt": _excerpt(p.excerpt or p.text),
                        **({"url": p.url} if p.url else {})} for p in reply.cited]
    result.actions = [{"label": str(a.get("label") or ""),
                       **({"url": str(a["url"])} if a.get("url") else {})}
                      for a in reply.actions]


def _rank(decision: str) -> int:
    return DECISIONS.index(decision) if decision in DECISIONS else 0


def judge(result: Result) -> Result:
    """Sets whether the result has the expected fact and decision, and passed."""
    if result.expect_fact:
        result.fact_found = not result.error and _has_fact(result)
    if result.expect_decision:
        result.decision_found = not result.error and _took_decision(result)
    verdicts = [v for v in (result.fact_found, result.decision_found) if v is not None]
    result.passed = all(verdicts) if verdicts else None
    return result


def _has_fact(result: Result) -> bool:
    """Any alternative of the fact in the reply: its text, its buttons' labels and links."""
    said = _folded(" ".join([result.answer, *(a.get("url", "") + " " + a["label"]
                                              for a in result.actions)]))
    return any(_folded(alternative) in said for alternative in alternatives(result.expect_fact))


def _took_decision(result: Result) -> bool:
    taken = set(result.decisions)
    if result.expect_decision == "none":
        return not taken & set(ACTS)
    return result.expect_decision in taken


def alternatives(expect_fact: str) -> list[str]:
    return [a.strip() for a in expect_fact.split("|") if a.strip()]


def _folded(text: str) -> str:
    return " ".join(text.casefold().split())


def _excerpt(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= EXCERPT_CHARS else text[:EXCERPT_CHARS - 1].rstrip() + "…"
