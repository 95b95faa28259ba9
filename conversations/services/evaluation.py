"""The chat turn as the agent's evaluation drives it (``agent.interface.Chat``; docs/agent.md,
"Evaluation"): a visitor's message through the whole turn, and what the conversation came to.
``ConversationsConfig.ready`` registers it, so that the agent needs no import of this app."""

from __future__ import annotations

from uuid import UUID

from asgiref.sync import async_to_sync

from agent.interface import ChatEnd, ChatReply, Contact, Provider
from tenants.models import Tenant

from ..models import Conversation
from .drivers import run_turn
from .turn import TurnInput, turn_open


class ServiceChat:
    """Runs on the caller's thread and its database connection: ``turn_open`` here, and
    ``run_turn`` under ``async_to_sync``, whose thread-sensitive steps come back to it (the
    evaluation rolls each case back, agent/eval/runner.py)."""

    def say(self, *, tenant: Tenant, visitor: str, message: str, session: UUID | None,
            provider: Provider, livemode: bool = True) -> ChatReply:
        opened = turn_open(TurnInput(tenant=tenant, livemode=livemode, visitor_id=visitor,
                                     message=message, session_id=session))
        outcome = async_to_sync(run_turn)(opened, provider)
        reply, conversation = outcome.message, outcome.conversation
        if outcome.quiet:  # a person has the conversation: the agent said nothing
            return ChatReply(session=conversation.pk, content="", turn={}, actions=[],
                             intent=outcome.intent, handoff=None,
                             contact=_contact(conversation.contact), booked=False, cited=())
        return ChatReply(session=conversation.pk, content=reply.content,
                         turn=reply.turn or {}, actions=reply.suggested_actions,
                         intent=reply.intent, handoff=reply.handoff,
                         contact=_contact(conversation.contact),
                         booked=bool(outcome.plan and outcome.plan.booked_slot),
                         cited=outcome.cited)

    def end(self, *, session: UUID) -> ChatEnd:
        conversation = Conversation.objects.select_related("lead").get(pk=session)
        contact = _contact(conversation.contact)
        lead = conversation.lead
        lead_contact = None if lead is None else Contact(
            email=lead.email, name=lead.name, company=lead.company, title=lead.title,
            phone=lead.phone)
        return ChatEnd(contact=contact, lead=lead_contact, handed_off=conversation.handoff is not None)


def _contact(details: dict | None) -> Contact:
    return Contact(**{k: v for k, v in (details or {}).items() if k in Contact.__dataclass_fields__})
