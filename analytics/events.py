"""The one function that emits domain events (ARCHITECTURE.md, "Events").

``emit`` writes the ``Event`` row in the caller's transaction, so a write that rolls back leaves
no event. After the transaction commits, every hook in ``on_commit_hooks`` receives the event
(the row as written: no hook needs to read it again); the webhooks app registers its fan-out
there. Only services call ``emit``; views never do.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from functools import partial
from typing import Any

from django.db import transaction
from django.utils import timezone

from tenants.models import Tenant

from .models import Event, EventType

logger = logging.getLogger("salesagent.events")

# Called with the event once the emitting transaction has committed. Kept as an explicit list
# (not signals) so that a reader sees every consumer by grepping for it.
on_commit_hooks: list[Callable[[Event], None]] = []


def emit(
    *,
    tenant: Tenant,
    livemode: bool,
    type: str,
    lead: Any = None,
    conversation_id: uuid.UUID | None = None,
    description: str,
    data: dict[str, Any],
) -> Event:
    """Records one event and schedules its fan-out for after the commit."""
    if type not in EventType.values:
        raise ValueError(f"Unknown event type {type!r}")
    event = Event.objects.create(
        tenant=tenant,
        livemode=livemode,
        type=type,
        lead=lead,
        conversation_id=conversation_id,
        description=description[:500],
        data=data,
        occurred_at=timezone.now(),
    )
    transaction.on_commit(partial(_fan_out, event))
    return event


def _fan_out(event: Event) -> None:
    # The write is committed by now: a failing consumer must not fail it, nor starve the others.
    for hook in list(on_commit_hooks):
        try:
            hook(event)
        except Exception:
            logger.exception("Event hook %r failed for event %s", hook, event.pk)
