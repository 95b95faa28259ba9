"""What receivers get: the envelopes, headers and signatures of both surfaces (docs/webhooks.md).

Each surface's ``data`` is rendered from the event's facts by the payload its domain app
registered (``core.events.payload``), with the presenters of that surface's API. The facts
never change, so every attempt of a delivery carries the same bytes and the same event id; only
the per-attempt headers (delivery id, timestamp, signature) differ.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
from typing import Any

from core import events
from core.ids import encode
from core.models import Event
from core.timestamps import format_timestamp

# The specification's v1 webhook event types (Events, "Webhooks, v1 surface"), and the meeting
# lifecycle's (issue 16, docs/meetings.md).
V1_EVENT_TYPES: tuple[str, ...] = (
    "lead.created", "lead.updated", "lead.qualified", "lead.converted", "lead.deleted",
    "conversation.started", "conversation.completed", "conversation.handoff",
    "message.received", "message.sent", "intent.high_value",
    "meeting.booked", "meeting.rescheduled", "meeting.cancelled",
)
# The legacy surface's three.
LEGACY_EVENT_TYPES: tuple[str, ...] = ("lead.created", "lead.qualified", "meeting.booked")

# The payload version of v1 envelopes (``apiVersion``): the date this format was fixed.
API_VERSION = "2026-11-01"
USER_AGENT = "SalesAgentService-Webhooks/1.0"
SECRET_PREFIX = "whsec_"


def new_secret() -> str:
    """A signing secret with 256 bits of randomness."""
    return SECRET_PREFIX + secrets.token_urlsafe(32)


def attempt_id(pk) -> str:
    """The ``X-Service-Delivery`` value of one attempt."""
    return encode("wha", pk)


def _dumps(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


# --- v1 -------------------------------------------------------------------------------------

def v1_envelope(event: Event) -> dict[str, Any]:
    return {
        "id": encode("evt", event.pk),
        "type": event.type,
        "apiVersion": API_VERSION,
        "createdAt": format_timestamp(event.occurred_at),
        "data": events.payload(event, "v1"),
    }


def v1_signature(secret: str, timestamp: int, body: bytes) -> str:
    """hex HMAC-SHA256(secret, "<timestamp>.<raw body>")."""
    return hmac.new(secret.encode(), str(timestamp).encode() + b"." + body,
                    hashlib.sha256).hexdigest()


def v1_request(event: Event, *, secret: str, attempt: str, timestamp: int
               ) -> tuple[bytes, dict[str, str]]:
    body = _dumps(v1_envelope(event))
    return body, {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        "X-Service-Event": event.type,
        "X-Service-Delivery": attempt,
        "X-Service-Timestamp": str(timestamp),
        "X-Service-Signature": v1_signature(secret, timestamp, body),
    }


# --- legacy ---------------------------------------------------------------------------------

def legacy_envelope(event: Event) -> dict[str, Any]:
    return {"event": event.type, "timestamp": format_timestamp(event.occurred_at),
            "data": events.payload(event, "legacy")}


def legacy_signature(secret: str, body: bytes) -> str:
    """hex HMAC-SHA256(secret, raw body): the legacy surface signs the body alone."""
    return hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def legacy_request(event: Event, *, secret: str, attempt: str) -> tuple[bytes, dict[str, str]]:
    body = _dumps(legacy_envelope(event))
    return body, {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        "X-Service-Event": event.type,
        "X-Service-Delivery": attempt,
        "X-Service-Signature": legacy_signature(secret, body),
    }
