"""The erasure of a person, as the apps below the privacy app reach it.

``DELETE /api/v1/leads/{id}`` and ``DELETE /api/v1/conversations/{id}`` must go through the one
erasure service (docs/privacy.md), which lives in the ``privacy`` app at the top of the app graph:
it reaches every app, so no app may import it. The leads and conversations APIs call these two
functions instead; the privacy app registers what they run in its ``AppConfig.ready()``, as apps
subscribe to events.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

_erasers: dict[str, Callable[..., Any]] = {}


def register(*, lead: Callable[..., Any], conversation: Callable[..., Any]) -> None:
    _erasers.update(lead=lead, conversation=conversation)


def erase_lead(lead: Any, *, requested_by: str) -> Any:
    """Erases the person behind ``lead``: the lead, their conversations, meetings, emails and
    every trace in the events (``privacy.services.lead_erase``)."""
    return _erasers["lead"](lead=lead, requested_by=requested_by)


def erase_conversation(conversation: Any, *, requested_by: str) -> Any:
    """Erases one conversation: its messages, what it gathered, and its trace in the events
    (``privacy.services.conversation_erase``)."""
    return _erasers["conversation"](conversation=conversation, requested_by=requested_by)
