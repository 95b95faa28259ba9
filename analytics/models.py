"""The event log: every domain event, once. It is the v1 activity feed, the source of webhook
envelopes, and an audit trail (ARCHITECTURE.md, "Events")."""

from __future__ import annotations

import uuid

from django.db import models
from django.utils import timezone


class EventType(models.TextChoices):
    """Every event type of the specification, webhooks and activity feed together."""

    LEAD_CREATED = "lead.created"
    LEAD_UPDATED = "lead.updated"
    LEAD_QUALIFIED = "lead.qualified"
    LEAD_CONVERTED = "lead.converted"
    LEAD_DELETED = "lead.deleted"
    LEAD_SCORE_CHANGED = "lead.score_changed"
    CONVERSION_COMPLETED = "conversion.completed"
    CONVERSATION_STARTED = "conversation.started"
    CONVERSATION_COMPLETED = "conversation.completed"
    CONVERSATION_HANDOFF = "conversation.handoff"
    MESSAGE_RECEIVED = "message.received"
    MESSAGE_SENT = "message.sent"
    INTENT_HIGH_VALUE = "intent.high_value"
    MEETING_BOOKED = "meeting.booked"


# The filter values of the v1 activity feed (the specification's "Activity types").
ACTIVITY_TYPES = frozenset({
    EventType.LEAD_CREATED,
    EventType.LEAD_QUALIFIED,
    EventType.LEAD_SCORE_CHANGED,
    EventType.CONVERSATION_STARTED,
    EventType.CONVERSATION_HANDOFF,
    EventType.CONVERSION_COMPLETED,
    EventType.INTENT_HIGH_VALUE,
})


class Event(models.Model):
    """One domain event, written by ``analytics.events.emit`` in the writer's transaction.

    ``data`` holds the v1 envelope's ``data`` object (v1 ids, v1 vocabulary); docs/events.md
    lists what each type carries. ``lead`` is SET_NULL so that the history of a deleted lead,
    and its ``lead.deleted`` event, survive; every lead event also names the lead in ``data``.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    # No index of its own: the feed indexes below start with the tenant.
    tenant = models.ForeignKey("tenants.Tenant", on_delete=models.CASCADE, related_name="events",
                               db_index=False)
    livemode = models.BooleanField()
    type = models.CharField(max_length=40, choices=EventType.choices)
    lead = models.ForeignKey(
        "leads.Lead", null=True, blank=True, on_delete=models.SET_NULL, related_name="events"
    )
    # The conversations app does not exist yet; a plain UUID keeps the id without a constraint.
    conversation_id = models.UUIDField(null=True, blank=True)
    description = models.CharField(max_length=500)
    data = models.JSONField(default=dict)
    occurred_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-occurred_at", "-id"]
        indexes = [
            models.Index(fields=["tenant", "livemode", "occurred_at", "id"],
                         name="event_feed"),
            models.Index(fields=["tenant", "livemode", "type", "occurred_at", "id"],
                         name="event_feed_type"),
            models.Index(fields=["conversation_id"], name="event_conversation",
                         condition=models.Q(conversation_id__isnull=False)),
        ]

    def __str__(self) -> str:
        return f"{self.type} {self.pk}"
