"""The webhooks' own event, ``webhook.test``: what it records and how each surface shows it.

A test event is sent by hand to one receiver (the dashboard's "Send test event"), through the
ordinary delivery path: a delivery row, signed and claimed like any other, whose one attempt is
manual (a failure is not retried on the schedule: the person who asked sends another). The specification
names no test or ping event, so it is ours (docs/decisions.md, "Webhooks"): a type of its own,
so that a receiver can never take it for a real lead or conversation, and no subscription can
ask for it (the fan-out never sends it to anyone else).
"""

from __future__ import annotations

import uuid
from typing import Any

from core import events
from core.ids import encode
from core.models import Event, EventType

MESSAGE = ("A test event sent from the dashboard. If you can read this, your endpoint receives "
           "our webhooks; check its signature as you would any other.")


def test_facts(*, receiver_id: Any, surface: str, url: str) -> dict[str, Any]:
    """The facts of a ``webhook.test``: which receiver it was for, and where it was sent."""
    return {"receiver": {"id": str(receiver_id), "surface": surface, "url": url}}


def _v1(event: Event) -> dict[str, Any] | None:
    receiver = event.facts["receiver"]
    if receiver["surface"] != "v1":
        return None
    return {"webhookId": encode("wh", uuid.UUID(receiver["id"])), "message": MESSAGE}


def _legacy(event: Event) -> dict[str, Any] | None:
    receiver = event.facts["receiver"]
    if receiver["surface"] != "legacy":
        return None
    return {"webhookId": receiver["id"], "message": MESSAGE}


def register() -> None:
    events.register_payload(EventType.WEBHOOK_TEST, surface="v1", render=_v1)
    events.register_payload(EventType.WEBHOOK_TEST, surface="legacy", render=_legacy)
