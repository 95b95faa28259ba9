"""How a lead is shown: the v1 and the legacy shapes, and the v1 shapes events carry.

Plain functions over a row mapping (``Lead`` columns by name), so that list endpoints render
``.values()`` rows without building model instances or serializers per row.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from core.timestamps import format_timestamp

from .models import Lead
from .vocabulary import legacy_status, v1_status

# The columns every presenter below reads, besides the timestamps; list queries select these.
COLUMNS = (
    "id", "email", "name", "company", "title", "phone", "status", "score", "source", "tags",
    "custom_fields", "assigned_to_id", "last_intent",
)
# Timestamps come in rows already formatted, under their API names.
TIMESTAMPS = {
    "firstSeenAt": "first_seen_at", "lastActiveAt": "last_active_at",
    "createdAt": "created_at", "updatedAt": "updated_at",
}

Row = Mapping[str, Any]


def lead_row(lead: Lead) -> dict[str, Any]:
    """A model instance as the row mapping the presenters take."""
    row = {column: getattr(lead, column) for column in COLUMNS}
    for key, column in TIMESTAMPS.items():
        row[key] = format_timestamp(getattr(lead, column))
    return row


def v1_id(pk) -> str:
    return "lead_" + pk.hex


def v1_user_id(pk) -> str | None:
    return None if pk is None else "user_" + pk.hex


def v1_lead(row: Row) -> dict[str, Any]:
    """The v1 lead of the list and of webhook data. Optional strings are stored blank and
    shown as null."""
    return {
        "id": "lead_" + row["id"].hex,
        "email": row["email"],
        "name": row["name"] or None,
        "company": row["company"] or None,
        "title": row["title"] or None,
        "phone": row["phone"] or None,
        "status": v1_status(row["status"]),
        "score": row["score"],
        "source": row["source"],
        "tags": row["tags"],
        "customFields": row["custom_fields"],
        "assignedTo": v1_user_id(row["assigned_to_id"]),
        "firstSeenAt": row["firstSeenAt"],
        "lastActiveAt": row["lastActiveAt"],
        "createdAt": row["createdAt"],
        "updatedAt": row["updatedAt"],
    }


def v1_lead_detail(row: Row, *, conversation_count: int) -> dict[str, Any]:
    """The single-lead read: the list shape plus conversationCount and lastIntent."""
    return {**v1_lead(row), "conversationCount": conversation_count,
            "lastIntent": row["last_intent"] or None}


def v1_search_result(row: Row, *, match_field: str) -> dict[str, Any]:
    return {
        "id": "lead_" + row["id"].hex,
        "email": row["email"],
        "name": row["name"] or None,
        "company": row["company"] or None,
        "status": v1_status(row["status"]),
        "score": row["score"],
        "matchField": match_field,
        "lastActiveAt": row["lastActiveAt"],
    }


def legacy_lead(row: Row) -> dict[str, Any]:
    """The legacy lead: the specification's list fields, then phone, metadata, updatedAt."""
    return {
        "id": str(row["id"]),
        "name": row["name"] or None,
        "email": row["email"],
        "company": row["company"] or None,
        "status": legacy_status(row["status"]),
        "qualificationScore": row["score"],
        "createdAt": row["createdAt"],
        "phone": row["phone"] or None,
        "metadata": row["custom_fields"],
        "updatedAt": row["updatedAt"],
    }


# --- event data (docs/events.md) ------------------------------------------------------------

def event_lead_created(row: Row) -> dict[str, Any]:
    return {
        "id": v1_id(row["id"]),
        "email": row["email"],
        "name": row["name"] or None,
        "company": row["company"] or None,
        "status": v1_status(row["status"]),
        "score": row["score"],
        "source": row["source"],
        "createdAt": row["createdAt"],
    }


def event_lead_summary(row: Row, *, previous_status: str | None = None) -> dict[str, Any]:
    """The ``lead`` object of lead.qualified and lead.converted (with ``previousStatus``)."""
    return {
        "id": v1_id(row["id"]),
        "email": row["email"],
        "name": row["name"] or None,
        "company": row["company"] or None,
        "status": v1_status(row["status"]),
        "score": row["score"],
        "previousStatus": previous_status,
    }
