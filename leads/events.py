"""The lead events: what each records, and how each surface shows it (docs/events.md).

Services record facts in stored vocabulary (``lead_facts``: the lead's columns as they were at
that moment, stored status included). The payloads below render those facts with the lead
presenters that the v1 and legacy APIs use, when a webhook leaves or the activity feed is read,
so each surface shows an event exactly as its API shows the lead.
"""

from __future__ import annotations

import uuid
from typing import Any

from core import events, ids
from core.models import Event, EventType
from core.timestamps import format_timestamp, parse_timestamp, stored_timestamp

from . import presenters
from .models import Lead
from .vocabulary import legacy_status, v1_status

# Model field -> v1 field: error details, and lead.updated's changedFields (in this order).
V1_FIELD = {
    "email": "email", "name": "name", "company": "company", "title": "title", "phone": "phone",
    "status": "status", "score": "score", "source": "source", "tags": "tags",
    "custom_fields": "customFields", "assigned_to_id": "assignedTo", "last_intent": "lastIntent",
}
_TEXT_FIELDS = frozenset({"name", "company", "title", "phone", "last_intent"})
_TIMESTAMPS = ("first_seen_at", "last_active_at", "created_at", "updated_at")


# --- facts ----------------------------------------------------------------------------------

def lead_facts(lead: Lead) -> dict[str, Any]:
    """The lead as stored, JSON-ready: UUIDs as strings, timestamps as ISO 8601 UTC to the
    microsecond."""
    facts: dict[str, Any] = {"id": str(lead.pk)}
    for column in presenters.COLUMNS[1:]:
        facts[column] = getattr(lead, column)
    facts["assigned_to_id"] = _str(lead.assigned_to_id)
    for column in _TIMESTAMPS:
        facts[column] = stored_timestamp(getattr(lead, column))
    return facts


def lead_row(facts: dict[str, Any]) -> dict[str, Any]:
    """Lead facts as the row mapping the presenters take."""
    row = dict(facts)
    row["id"] = uuid.UUID(facts["id"])
    row["assigned_to_id"] = _uuid(facts.get("assigned_to_id"))
    for key, column in presenters.TIMESTAMPS.items():
        row[key] = format_timestamp(parse_timestamp(facts[column]))
    return row


def _str(value: Any) -> str | None:
    return None if value is None else str(value)


def _uuid(value: str | None) -> uuid.UUID | None:
    return None if value is None else uuid.UUID(value)


# --- v1 -------------------------------------------------------------------------------------

def v1_value(field: str, row: dict[str, Any]) -> Any:
    """A field's value as the v1 surface shows it (status word, user id, null for blank)."""
    value = row[field]
    if field == "status":
        return v1_status(value)
    if field == "assigned_to_id":
        return presenters.v1_user_id(_uuid(value) if isinstance(value, str) else value)
    if field in _TEXT_FIELDS:
        return value or None
    return value


def _previous_v1_status(event: Event) -> str | None:
    previous = event.facts.get("previous_status")
    return None if previous is None else v1_status(previous)


def _v1_lead_created(event: Event) -> dict[str, Any]:
    return {"lead": presenters.event_lead_created(lead_row(event.facts["lead"])),
            "conversationId": ids.encode("conv", event.conversation_id)}


def _v1_lead_updated(event: Event) -> dict[str, Any] | None:
    """Only the changes v1 can see; None when there are none (a stored move that v1 shows
    alike, such as qualified to booked, or a write that changed no value). A corrected field
    (``lead_email_correct``) is among ``changedFields`` without a previous value: the event
    never kept the value it replaced."""
    after = event.facts["lead"]
    before = {**after, **event.facts["previous"]}
    corrected = event.facts.get("corrected") or []
    visible = [field for field in V1_FIELD
               if field in event.facts["previous"] and v1_value(field, before) != v1_value(field, after)]
    changed = [field for field in V1_FIELD if field in visible or field in corrected]
    if not changed:
        return None
    return {
        "lead": presenters.v1_lead(lead_row(after)),
        "changedFields": [V1_FIELD[field] for field in changed],
        "previousValues": {V1_FIELD[field]: v1_value(field, before) for field in visible},
    }


def _v1_status_change(event: Event) -> dict[str, Any]:
    summary = presenters.event_lead_summary(lead_row(event.facts["lead"]),
                                            previous_status=_previous_v1_status(event))
    if event.type == EventType.LEAD_QUALIFIED:
        return {"lead": summary, "qualificationReason": event.facts["reason"]}
    return {"lead": summary}


def _v1_conversion_completed(event: Event) -> dict[str, Any]:
    lead = event.facts["lead"]
    return {"leadId": presenters.v1_id(uuid.UUID(lead["id"])),
            "previousStatus": _previous_v1_status(event), "score": lead["score"]}


def _v1_score_changed(event: Event) -> dict[str, Any]:
    facts = event.facts
    return {"leadId": presenters.v1_id(uuid.UUID(facts["lead_id"])),
            "previousScore": facts["previous_score"], "score": facts["score"],
            "change": facts["score"] - facts["previous_score"]}


def _v1_lead_deleted(event: Event) -> dict[str, Any]:
    return {"lead": presenters.v1_lead(lead_row(event.facts["lead"]))}


# --- legacy ---------------------------------------------------------------------------------

def _legacy_lead(facts: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": facts["id"],
        "name": facts["name"] or None,
        "email": facts["email"],
        "company": facts["company"] or None,
        "status": legacy_status(facts["status"]),
        "qualificationScore": facts["score"],
    }


def _legacy_lead_created(event: Event) -> dict[str, Any]:
    return _legacy_lead(event.facts["lead"])


def _legacy_lead_qualified(event: Event) -> dict[str, Any]:
    previous = event.facts.get("previous_status")
    return {**_legacy_lead(event.facts["lead"]),
            "previousStatus": None if previous is None else legacy_status(previous),
            "qualificationReason": event.facts["reason"]}


def register() -> None:
    """Called by ``LeadsConfig.ready()``."""
    for type, render in (
        (EventType.LEAD_CREATED, _v1_lead_created),
        (EventType.LEAD_UPDATED, _v1_lead_updated),
        (EventType.LEAD_QUALIFIED, _v1_status_change),
        (EventType.LEAD_CONVERTED, _v1_status_change),
        (EventType.CONVERSION_COMPLETED, _v1_conversion_completed),
        (EventType.LEAD_SCORE_CHANGED, _v1_score_changed),
        (EventType.LEAD_DELETED, _v1_lead_deleted),
    ):
        events.register_payload(type, surface="v1", render=render)
    events.register_payload(EventType.LEAD_CREATED, surface="legacy", render=_legacy_lead_created)
    events.register_payload(EventType.LEAD_QUALIFIED, surface="legacy",
                            render=_legacy_lead_qualified)
