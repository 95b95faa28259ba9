"""How the activity feed shows erasures and retention runs: what went, as counts, and by which
erasure; never whom (docs/privacy.md)."""

from __future__ import annotations

import uuid
from typing import Any

from core import events, ids
from core.models import Event, EventType


def erasure_facts(erasure: Any, counts: dict[str, int]) -> dict[str, Any]:
    return {"erasure_id": str(erasure.pk), "subject_kind": erasure.subject_kind,
            "counts": dict(counts)}


def _v1(event: Event) -> dict[str, Any]:
    facts = event.facts
    shown = {"erasureId": ids.encode("erasure", uuid.UUID(facts["erasure_id"])),
             "counts": facts["counts"]}
    if event.type == EventType.DATA_ERASED:
        shown["subjectKind"] = facts["subject_kind"]
    else:
        shown["olderThanDays"] = facts.get("older_than_days", {})
    return shown


def register() -> None:
    """Called by ``PrivacyConfig.ready()``."""
    events.register_payload(EventType.DATA_ERASED, surface="v1", render=_v1)
    events.register_payload(EventType.DATA_EXPIRED, surface="v1", render=_v1)
