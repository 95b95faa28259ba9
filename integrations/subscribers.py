"""The integrations' event subscribers, all after commit (registered in
``IntegrationsConfig.ready``): each change of a lead, a conversation or a meeting arms its sync
to the tenant's connected CRMs and enqueues it. Nothing is sent for a write that rolled back."""

from __future__ import annotations

from core.models import Event, EventType

from . import services
from .models import SyncKind

LEAD_CHANGES = [EventType.LEAD_CREATED, EventType.LEAD_UPDATED, EventType.LEAD_QUALIFIED,
                EventType.LEAD_CONVERTED, EventType.LEAD_SCORE_CHANGED]
CONVERSATION_CHANGES = [EventType.CONVERSATION_LEAD_LINKED, EventType.MESSAGE_SENT,
                        EventType.CONVERSATION_HANDOFF, EventType.CONVERSATION_COMPLETED]
MEETING_CHANGES = [EventType.MEETING_BOOKED, EventType.MEETING_RESCHEDULED,
                   EventType.MEETING_CANCELLED]


# Changes that come with chat turns, several a turn (a message, the lead's score and fields as
# the agent learns them): gathered for a moment (services.GATHER). A lead's creation, its
# qualification or conversion, a handoff, a conversation's end and meetings go at once.
EVERY_TURN = frozenset({EventType.MESSAGE_SENT, EventType.LEAD_SCORE_CHANGED,
                        EventType.LEAD_UPDATED})


def _plan(event: Event, kind: str, object_id) -> None:
    if object_id is None:
        return
    # A change read back from a CRM is not sent back to that CRM (no echo); other CRMs get it.
    origin = str(event.facts.get("origin") or "")
    services.enqueue(services.crm_sync_plan(
        tenant_id=event.tenant_id, livemode=event.livemode, kind=kind, object_id=object_id,
        lead_id=event.lead_id, trigger=event.type, gather=event.type in EVERY_TURN,
        except_provider=origin.removeprefix("crm:") if origin.startswith("crm:") else None))


def lead_changed(event: Event) -> None:
    _plan(event, SyncKind.CONTACT, event.lead_id)


def conversation_changed(event: Event) -> None:
    # A conversation without a lead has no contact to hang a note on (yet).
    if event.lead_id is not None:
        _plan(event, SyncKind.NOTE, event.conversation_id)


def meeting_changed(event: Event) -> None:
    _plan(event, SyncKind.MEETING, (event.facts.get("meeting") or {}).get("id"))


SUBSCRIPTIONS = [(lead_changed, LEAD_CHANGES), (conversation_changed, CONVERSATION_CHANGES),
                 (meeting_changed, MEETING_CHANGES)]
