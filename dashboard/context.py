"""What every dashboard page shows of its person (docs/dashboard.md, "Availability and
routing"): the unread handoffs beside Conversations, and how often the page reports activity."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from django.utils.functional import SimpleLazyObject

from conversations.selectors import handoffs_unread

ACTIVITY_EVERY_SECONDS = (1, 60)


def presence(request: HttpRequest) -> dict[str, Any]:
    """Template context of a dashboard page with a person signed in; nothing elsewhere."""
    actor = getattr(request, "actor", None)
    if actor is None or actor.user is None:
        return {}
    low, high = ACTIVITY_EVERY_SECONDS
    return {
        # Read when the page shows it: one COUNT over the person's own open handoffs.
        "unread_handoffs": SimpleLazyObject(
            lambda: actor.read(handoffs_unread, user=actor.user)),
        # A page reports activity at most this often: a quarter of the idle time that turns away.
        "activity_every": max(low, min(high, actor.tenant.presence_idle_seconds // 4)),
    }
