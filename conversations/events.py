"""The conversation events: what each records, and how each surface shows it (docs/events.md).

Services record facts in stored vocabulary: the conversation and the message as they were at
that moment (``conversation_facts``, ``message_facts``). The payloads below render them with
the presenters of the v1 and legacy APIs when a webhook leaves or the activity feed is read.
"""

from __future__ import annotations

import uuid
from types import SimpleNamespace
from typing import Any

from core import events
from core.models import Event, EventType
from core.timestamps import format_timestamp, parse_timestamp, stored_timestamp
from leads.events import lead_row
from leads.presenters import event_lead_summary
from leads.vocabulary import legacy_status

from . import presenters
from .models import Conversation, Meeting, Message

# --- facts ----------------------------------------------------------------------------------

def conversation_facts(conversation: Conversation) -> dict[str, Any]:
    return {
        "id": str(conversation.pk),
        "visitor_id": conversation.visitor_id,
        "channel": conversation.channel,
        "status": conversation.status,
        "lead_id": _str(conversation.lead_id),
        "assigned_to_id": _str(conversation.assigned_to_id),
        "joined_at": stored_timestamp(conversation.joined_at) if conversation.joined_at else None,
        "message_count": conversation.message_count,
        "subject": conversation.subject,
        "summary": conversation.summary,
        "has_handoff": conversation.handoff is not None,
        "started_at": stored_timestamp(conversation.started_at),
        "last_message_at": stored_timestamp(conversation.last_message_at),
    }


def message_facts(message: Message) -> dict[str, Any]:
    return {
        "id": str(message.pk),
        "sequence": message.sequence,
        "role": message.role,
        "content": message.content,
        "intent": message.intent,
        "confidence": message.confidence,
        "author_id": _str(message.author_id),
        "created_at": stored_timestamp(message.created_at),
    }


def meeting_facts(meeting: Meeting) -> dict[str, Any]:
    return {
        "id": str(meeting.pk),
        "lead_id": _str(meeting.lead_id),
        "starts_at": stored_timestamp(meeting.starts_at),
        "ends_at": stored_timestamp(meeting.ends_at),
        "time_zone": meeting.time_zone,
        "conversation_id": _str(meeting.conversation_id),
        "host_id": _str(meeting.host_id),
        "status": meeting.status,
        "sequence": meeting.sequence,
        "cancelled_by": meeting.cancelled_by,
        "cancelled_at": stored_timestamp(meeting.cancelled_at) if meeting.cancelled_at else None,
        "created_at": stored_timestamp(meeting.created_at),
    }


def _str(value: Any) -> str | None:
    return None if value is None else str(value)


def _uuid(value: str | None) -> uuid.UUID | None:
    return None if value is None else uuid.UUID(value)


def as_conversation(facts: dict[str, Any]) -> SimpleNamespace:
    """Conversation facts with the attributes the presenters read from a ``Conversation``."""
    return SimpleNamespace(**{
        **facts, "pk": uuid.UUID(facts["id"]), "lead_id": _uuid(facts["lead_id"]),
        "assigned_to_id": _uuid(facts["assigned_to_id"]),
        "started_at": parse_timestamp(facts["started_at"]),
        "last_message_at": parse_timestamp(facts["last_message_at"])})


def as_message(facts: dict[str, Any]) -> SimpleNamespace:
    """Message facts with the attributes the presenters read from a ``Message``."""
    return SimpleNamespace(**{**facts, "pk": uuid.UUID(facts["id"]),
                              "created_at": parse_timestamp(facts["created_at"])})


# --- v1 -------------------------------------------------------------------------------------

def _v1_message(event: Event) -> dict[str, Any]:
    message = event.facts["message"]
    data = {"conversationId": presenters.conv_id(event.conversation_id),
            "message": presenters.v1_message(as_message(message))}
    if message["author_id"]:
        data["author"] = presenters.user_id(uuid.UUID(message["author_id"]))
    return data


def _v1_conversation(event: Event) -> dict[str, Any]:
    data = {"conversation": presenters.v1_conversation_brief(
        as_conversation(event.facts["conversation"]))}
    if event.type == EventType.CONVERSATION_COMPLETED:
        data["reason"] = event.facts["reason"]
    return data


def _v1_handoff(event: Event) -> dict[str, Any]:
    conversation = event.facts["conversation"]
    brief = {
        "id": presenters.conv_id(uuid.UUID(conversation["id"])),
        "leadId": presenters.lead_id(_uuid(conversation["lead_id"])),
        "messageCount": conversation["message_count"],
        "status": conversation["status"],
    }
    # Only when someone was really assigned: a handoff waiting in the Unassigned queue has none.
    if conversation["assigned_to_id"]:
        brief["assignedTo"] = presenters.user_id(_uuid(conversation["assigned_to_id"]))
    return {"conversation": brief, "handoff": event.facts["handoff"]}


def _v1_high_value(event: Event) -> dict[str, Any]:
    facts = event.facts
    return {
        "leadId": presenters.lead_id(_uuid(facts["lead_id"])),
        "conversationId": presenters.conv_id(event.conversation_id),
        "intent": facts["intent"],
        "confidence": facts["confidence"],
        "signals": facts["signals"],
        "estimatedDealSize": facts["estimated_deal_size"],
    }


def _v1_meeting(event: Event) -> dict[str, Any]:
    """meeting.booked, meeting.rescheduled, meeting.cancelled: the meeting as it is after the
    move, and what each move adds (the lead; the previous time; who cancelled)."""
    facts = event.facts
    data: dict[str, Any] = {"meeting": presenters.v1_meeting(facts["meeting"])}
    if event.type == EventType.MEETING_BOOKED:
        summary = event_lead_summary(lead_row(facts["lead"]))
        summary.pop("previousStatus")
        data["lead"] = summary
    elif event.type == EventType.MEETING_RESCHEDULED:
        previous = facts["previous"]
        data["previous"] = {"startsAt": format_timestamp(parse_timestamp(previous["starts_at"])),
                            "endsAt": format_timestamp(parse_timestamp(previous["ends_at"]))}
    else:
        data["cancelledBy"] = facts["meeting"].get("cancelled_by") or None
    return data


# --- legacy ---------------------------------------------------------------------------------

def _legacy_meeting_booked(event: Event) -> dict[str, Any]:
    lead, meeting = event.facts["lead"], event.facts["meeting"]
    return {
        "lead": {
            "id": lead["id"], "name": lead["name"], "email": lead["email"],
            "company": lead["company"], "status": legacy_status(lead["status"]),
            "qualificationScore": lead["score"],
        },
        "meeting": {
            "id": meeting["id"],
            "startsAt": format_timestamp(parse_timestamp(meeting["starts_at"])),
            "endsAt": format_timestamp(parse_timestamp(meeting["ends_at"])),
            "timezone": meeting["time_zone"],
            "conversationId": meeting["conversation_id"],
        },
    }


def register() -> None:
    """Called by ``ConversationsConfig.ready()``."""
    for type, render in (
        (EventType.MESSAGE_RECEIVED, _v1_message),
        (EventType.MESSAGE_SENT, _v1_message),
        (EventType.CONVERSATION_STARTED, _v1_conversation),
        (EventType.CONVERSATION_COMPLETED, _v1_conversation),
        (EventType.CONVERSATION_HANDOFF, _v1_handoff),
        (EventType.INTENT_HIGH_VALUE, _v1_high_value),
        (EventType.MEETING_BOOKED, _v1_meeting),
        (EventType.MEETING_RESCHEDULED, _v1_meeting),
        (EventType.MEETING_CANCELLED, _v1_meeting),
    ):
        events.register_payload(type, surface="v1", render=render)
    events.register_payload(EventType.MEETING_BOOKED, surface="legacy",
                            render=_legacy_meeting_booked)


def emit_conversation_event(conversation: Conversation, type: str, description: str,
                            **facts: Any) -> Event:
    """Emits ``type`` for ``conversation``: its facts as it is now, plus ``facts``."""
    return events.emit(
        type, tenant_id=conversation.tenant_id, livemode=conversation.livemode,
        lead_id=conversation.lead_id, conversation_id=conversation.pk, description=description,
        facts={"conversation": conversation_facts(conversation), **facts})


def emit_meeting_event(meeting: Meeting, type: str, description: str, **facts: Any) -> Event:
    """Emits ``type`` for ``meeting`` (its facts as it is now, plus ``facts``): a reschedule or
    a cancel, which may come long after its conversation, or without one."""
    return events.emit(
        type, tenant_id=meeting.tenant_id, livemode=meeting.livemode, lead_id=meeting.lead_id,
        conversation_id=meeting.conversation_id, description=description,
        facts={"meeting": meeting_facts(meeting), **facts})
