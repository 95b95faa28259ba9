"""Events as the surfaces show them: the tests read an event's facts through the same payloads
that webhooks and the activity feed render."""

from __future__ import annotations

from typing import Any

from core.events import payload
from core.models import Event


def v1_data(event: Event) -> dict[str, Any] | None:
    return payload(event, "v1")


def legacy_data(event: Event) -> dict[str, Any] | None:
    return payload(event, "legacy")
