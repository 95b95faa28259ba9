"""The conversation's lifecycle (docs/conversations.md, "States"): it starts with a visitor's
first message, may be handed to a person, and ends closed or expired."""

from __future__ import annotations

from datetime import datetime

from django.db import transaction
from django.utils import timezone

from agent.interface import Handoff
from core.models import EventType
from tenants.models import Tenant, User

from ..events import emit_conversation_event
from ..models import IDLE_EXPIRY, Conversation, ConversationStatus
from .attachments import conversation_files_remove_on_commit
from .routing import rep_for_handoff

HANDOFF_CONTEXT_MESSAGES = 5


def conversation_start(*, tenant: Tenant, livemode: bool, visitor_id: str, channel: str,
                       metadata: dict, language: str, now: datetime,
                       consent: dict | None = None) -> Conversation:
    """A new conversation for the visitor's first message; a returning visitor keeps their
    lead (the most recent conversation that had one). ``consent``: the visitor's acceptance
    of the tenant's notice, when it requires one (``turn._consent_record``)."""
    previous = (Conversation.objects.filter(tenant=tenant, livemode=livemode,
                                            visitor_id=visitor_id, lead__isnull=False)
                .order_by("-last_message_at").select_related("lead").first())
    conversation = Conversation.objects.create(
        tenant=tenant, livemode=livemode, visitor_id=visitor_id, channel=channel,
        lead=previous.lead if previous else None, metadata=metadata, language=language,
        consent=consent, started_at=now, last_message_at=now, created_at=now,
    )
    emit_conversation_event(conversation, EventType.CONVERSATION_STARTED,
                            f"Conversation started on {conversation.get_channel_display()}")
    return conversation


def conversation_end(conversation: Conversation, *, status: str, reason: str,
                     now: datetime) -> None:
    """Ends an open conversation (its caller holds the row): ``closed`` or ``expired``."""
    conversation.status = status
    conversation.ended_at = now
    conversation.save()
    emit_conversation_event(conversation, EventType.CONVERSATION_COMPLETED,
                            f"Conversation {status}: {reason.replace('_', ' ')}", reason=reason)


@transaction.atomic
def conversation_close(*, conversation: Conversation, reason: str = "closed") -> Conversation:
    """Closes an active or handed-off conversation; closing an ended one changes nothing."""
    current = (Conversation.objects.select_for_update(of=("self",)).select_related("lead", "tenant")
               .get(pk=conversation.pk))
    if current.is_open:
        conversation_end(current, status=ConversationStatus.CLOSED, reason=reason,
                         now=timezone.now())
    return current


def conversations_expire_idle(*, now: datetime | None = None, batch: int = 500) -> int:
    """Moves active conversations idle for 30 minutes to ``expired``; returns how many.

    Each conversation is claimed with its own short transaction (skip-locked where the database
    has it), so two sweepers never expire one twice and a chat turn is never blocked for long.
    """
    now = now or timezone.now()
    cutoff = now - IDLE_EXPIRY
    ids = list(Conversation.objects.filter(status=ConversationStatus.ACTIVE,
                                           last_message_at__lt=cutoff)
               .order_by("last_message_at").values_list("pk", flat=True)[:batch])
    return sum(_expire(pk, cutoff=cutoff, now=now) for pk in ids)


@transaction.atomic
def _expire(pk, *, cutoff: datetime, now: datetime) -> bool:
    current = (Conversation.objects.select_for_update(skip_locked=True, of=("self",))
               .filter(pk=pk, status=ConversationStatus.ACTIVE, last_message_at__lt=cutoff).first())
    if current is None:
        return False
    conversation_end(current, status=ConversationStatus.EXPIRED, reason="expired", now=now)
    return True


@transaction.atomic
def conversation_delete(*, conversation: Conversation) -> None:
    """Deletes the conversation, its messages and its files (the files once the transaction
    commits; its events stay in the log)."""
    current = Conversation.objects.select_for_update().filter(pk=conversation.pk).first()
    if current is None:
        return
    conversation_files_remove_on_commit([current.pk])
    # Emitted first: its subscribers take back what the conversation counted while it exists.
    emit_conversation_event(current, EventType.CONVERSATION_DELETED,
                            f"Conversation {current.pk} deleted")
    current.delete()


def hand_off(conversation: Conversation, handoff: Handoff, *, now: datetime,
             assignee: User | None = None, joined: bool = False) -> User | None:
    """Gives the conversation (held by the caller, saved by it) to a person: ``assignee``, or
    the available member of the tenant's staff whose turn it is (``routing``), or nobody: it
    then waits in the Unassigned queue. ``joined``: the assignee takes it themselves (a
    take-over), rather than being told to reply. Returns whom it went to."""
    first = conversation.handoff is None
    conversation.status = ConversationStatus.HANDED_OFF
    conversation.handed_off_at = now
    lead = conversation.lead if conversation.lead_id else None
    conversation.assigned_to = assignee or rep_for_handoff(
        tenant=conversation.tenant, now=now,
        preferred_id=lead.assigned_to_id if lead is not None else None)
    conversation.joined_at = now if joined and assignee is not None else None
    conversation.handoff_notice_at = None  # a new handoff: the visitor has not been told yet
    context = {
        "summary": conversation.summary or None,
        "intents": conversation.intents,
        "leadScore": conversation.lead_score,
        "lastMessages": [
            {"role": m.role, "content": m.content[:500]}
            for m in reversed(conversation.messages.order_by("-sequence")
                              [:HANDOFF_CONTEXT_MESSAGES])
        ],
        "visitor": conversation.contact,
    }
    conversation.handoff = {**handoff.as_dict(), "context": context}
    emit_conversation_event(
        conversation, EventType.CONVERSATION_HANDOFF,
        f"Conversation handed off to {handoff.suggested_team}: {handoff.reason}",
        handoff=conversation.handoff, first_handoff=first,
        # Chosen by the rotation (the agent's or the visitor's handoff), not by a person taking
        # it: the rep it went to is told by email when not online (docs/meetings.md).
        auto_assigned=assignee is None)
    return conversation.assigned_to
