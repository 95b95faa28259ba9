"""Runs the evaluation's cases through the service's real chat turn, each with a throwaway
tenant that leaves nothing behind.

Each case runs inside one transaction that is always rolled back (a savepoint when the caller
already holds a transaction, as a test does). Why a rolled-back transaction rather than a
tenant created and then deleted:

- nothing is ever committed, so a run that is killed half-way leaves nothing either, and no
  other process (a worker, the dashboard, a webhook receiver) ever sees the tenant;
- what the turn does after commit (events dispatched to webhooks and live streams, tasks
  enqueued) never happens: ``on_commit`` callbacks of a rolled-back transaction are dropped;
- there is no cascade of deletions to keep in step with every table a turn writes.

It holds because the whole turn runs on this thread's connection: the chat turn
(``chat.Chat``, which ``conversations`` registers) calls ``turn_open`` on this thread, and
``run_turn`` under ``async_to_sync``, whose ``sync_to_async`` steps (``turn_apply``,
``turn_close``) are thread-sensitive and so come back to this thread. The
provider's own work (HTTP to a model server) touches no database. Were a step ever moved to
another connection, it could not see the uncommitted tenant and the run would stop with an
error rather than measure a broken turn (the tests check that nothing is left behind).
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction

from knowledge.services import document_create, document_index
from tenants.services import tenant_create, tenant_set_agent, tenant_set_facts, user_create

from ..providers import provider_for
from .cases import CONTACT_FIELDS, Case
from .chat import ChatEnd, the_chat


@dataclass(frozen=True)
class Agent:
    """The provider the throwaway tenants use."""

    provider: str = "builtin"
    model: str = ""
    base_url: str = ""
    api_key: str = ""


@dataclass
class TurnResult:
    message: str  # the visitor's
    reply: str
    seconds: float
    stopped: str | None  # Message.turn["stopped"]: what the guard stopped the reply for
    offered: bool  # the reply offered meeting slots or the booking link
    actions: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class CaseResult:
    case: Case
    turns: list[TurnResult]
    captured: dict[str, str]  # the lead's contact details (the conversation's, without a lead)
    handed_off: bool

    @property
    def offered_booking(self) -> bool:
        return any(turn.offered for turn in self.turns)


def run_case(case: Case, *, agent: Agent, tenant_name: str) -> CaseResult:
    """``case`` through the chat turn of a tenant that exists only for it."""
    with transaction.atomic():
        try:
            return _run(case, agent=agent, tenant_name=tenant_name)
        finally:
            transaction.set_rollback(True)


def _run(case: Case, *, agent: Agent, tenant_name: str) -> CaseResult:
    chat = the_chat()
    tenant = _tenant(case, agent=agent, name=tenant_name)
    visitor = f"eval-{uuid.uuid4().hex[:12]}"
    session = None
    turns = []
    for message in case.turns:
        started = time.perf_counter()
        reply = chat.say(tenant=tenant, visitor=visitor, message=message, session=session,
                         provider=provider_for(tenant))
        seconds = time.perf_counter() - started
        session = reply.session
        turns.append(TurnResult(
            message=message, reply=reply.content, seconds=seconds,
            stopped=reply.turn.get("stopped"), actions=reply.actions,
            offered=_offers_booking(reply.actions, tenant.booking_url)))
    end = chat.end(session=session)
    return CaseResult(case=case, turns=turns, captured=_captured(end),
                      handed_off=end.handed_off)


def _tenant(case: Case, *, agent: Agent, name: str):
    tenant, _ = tenant_create(name=name)
    tenant_set_agent(tenant=tenant, provider=agent.provider, model=agent.model or None,
                     api_key=agent.api_key or None, base_url=agent.base_url or None,
                     booking_url=case.setup.booking_url or None)
    facts = case.setup.facts
    if facts:
        tenant_set_facts(tenant=tenant, product_summary=facts.get("product", ""),
                         pricing_url=facts.get("pricing_url", ""),
                         business_hours=facts.get("hours", ""))
    # Someone to hand off to: without staff a handoff is decided but assigned to no one.
    user_create(tenant=tenant, email=f"rep-{tenant.pk.hex[:12]}@eval.invalid", first_name="Eval")
    for passage in case.setup.knowledge:
        document = document_create(tenant=tenant, livemode=True, title=passage.title, type="text",
                                   data=passage.text.encode(), url=passage.url)
        # Indexed here, as a worker would: the task enqueued after commit never runs.
        document_index(document_id=document.pk)
    return tenant


def _offers_booking(actions: list[dict[str, Any]], booking_url: str) -> bool:
    # A slot's suggested action carries the slot in its metadata (services/turn.py).
    return any((a.get("type") == "reply" and bool((a.get("metadata") or {}).get("slot")))
               or (booking_url and a.get("type") == "link" and a.get("url") == booking_url)
               for a in actions)


def _captured(end: ChatEnd) -> dict[str, str]:
    """The conversation's details that are set, its lead's over them."""
    captured = {k: v for k, v in end.contact.as_dict().items() if k in CONTACT_FIELDS}
    if end.lead is not None:
        captured.update({k: v for k, v in end.lead.as_dict().items() if k in CONTACT_FIELDS})
    return captured
