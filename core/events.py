"""Domain events: the one way a write has side effects (docs/architecture.md, "Events").

A service writes its rows and calls ``emit``, which

1. writes one ``Event`` row in the service's transaction, holding facts in stored vocabulary;
2. runs the event type's **in-transaction** subscribers at once (count tables, analytics
   rollups): their writes commit or roll back with the service's;
3. hands the event to the **after-commit** subscribers once the transaction commits (webhook
   fan-out, live pushes to open streams); for a write that rolled back, nothing runs.

Apps subscribe in their ``AppConfig.ready()``, and there too they register how each surface
shows their events (``register_payload``): webhook envelopes and the activity feed render an
event's facts when they need them, with the presenters of the surface's API. Nothing here knows
a domain app; services know no subscriber.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from functools import partial
from typing import Any

from django.db import connection, transaction
from django.utils import timezone

from .models import Event, EventType

logger = logging.getLogger("salesagent.events")

Handler = Callable[[Event], None]
Renderer = Callable[[Event], "dict[str, Any] | None"]

SURFACES = ("v1", "legacy")

_in_transaction: dict[str, list[Handler]] = {}
_after_commit: dict[str, list[Handler]] = {}
_payloads: dict[str, dict[str, Renderer]] = {surface: {} for surface in SURFACES}


def subscribe(handler: Handler, *, types: Iterable[str], after_commit: bool = False) -> None:
    """Calls ``handler(event)`` for every event of ``types``: inside the emitting transaction,
    or, with ``after_commit``, once it has committed. Subscribing twice changes nothing."""
    table = _after_commit if after_commit else _in_transaction
    for type in types:
        _check_type(type)
        handlers = table.setdefault(type, [])
        if handler not in handlers:
            handlers.append(handler)


def register_payload(type: str, *, surface: str, render: Renderer) -> None:
    """How ``surface`` shows events of ``type``: ``render(event)`` returns the ``data`` object of
    its webhook envelope (and, on v1, the activity feed's ``metadata``), or None when the surface
    has nothing to say about this event."""
    _check_type(type)
    _payloads[surface][type] = render


def payload(event: Event, surface: str) -> dict[str, Any] | None:
    """The event as ``surface`` shows it; None when that surface does not show it."""
    render = _payloads[surface].get(event.type)
    return None if render is None else render(event)


def shown_on(surface: str) -> frozenset[str]:
    """The event types that ``surface`` can render."""
    return frozenset(_payloads[surface])


def emit(type: str, *, tenant_id: Any, livemode: bool, description: str, facts: dict[str, Any],
         lead_id: Any = None, conversation_id: Any = None) -> Event:
    """Records one event and runs its subscribers (see the module's docstring).

    Only services call it, inside their transaction: an event outside a transaction would reach
    the after-commit subscribers before anything could roll it back, so that is an error.
    """
    _check_type(type)
    if not connection.in_atomic_block:
        raise RuntimeError(f"emit({type!r}) outside a transaction: services emit inside theirs")
    event = Event.objects.create(
        tenant_id=tenant_id, livemode=livemode, type=type, lead_id=lead_id,
        conversation_id=conversation_id, description=description[:500], facts=facts,
        occurred_at=timezone.now(),
    )
    for handler in _in_transaction.get(type, ()):
        handler(event)
    committed = _after_commit.get(type)
    if committed:
        transaction.on_commit(partial(_dispatch, event, tuple(committed)))
    return event


def _dispatch(event: Event, handlers: tuple[Handler, ...]) -> None:
    # The write is committed by now: a failing subscriber must not fail it, nor starve the others.
    for handler in handlers:
        try:
            handler(event)
        except Exception:
            logger.exception("Subscriber %r failed for event %s (%s)", handler, event.pk, event.type)


def _check_type(type: str) -> None:
    if type not in EventType.values:
        raise ValueError(f"Unknown event type {type!r}")
