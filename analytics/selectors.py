"""Reads of the event log."""

from __future__ import annotations

import uuid

from .models import Event


def lead_conversation_count(*, lead_id: uuid.UUID) -> int:
    """How many distinct conversations the event log ties to the lead.

    Every conversation event of an identified visitor names its lead and conversation, so this
    is the number of the lead's conversations that have produced an event. The chat issue,
    which brings the conversations table, can count its rows instead; callers do not change.
    """
    return (
        Event.objects.filter(lead_id=lead_id, conversation_id__isnull=False)
        .values("conversation_id").distinct().count()
    )
