"""The event log: every domain event, once (docs/events.md). It is the v1 activity feed, the
source of webhook envelopes, and an audit trail."""

from __future__ import annotations

import uuid

from django.db import models
from django.utils import timezone


class EventType(models.TextChoices):
    """Every event type: the specification's (webhooks of both surfaces, the activity feed) and
    the service's own, which only subscribers and the audit trail see."""

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
    MEETING_RESCHEDULED = "meeting.rescheduled"
    MEETING_CANCELLED = "meeting.cancelled"
    # The service's own: no surface shows them.
    CONVERSATION_LEAD_LINKED = "conversation.lead_linked"
    CONVERSATION_ASSIGNED = "conversation.assigned"
    CONVERSATION_HANDED_BACK = "conversation.handed_back"
    CONVERSATION_DELETED = "conversation.deleted"
    # A person's presence changed (online, away, offline): routing offers them waiting handoffs.
    USER_STATUS_CHANGED = "user.status_changed"
    # The team (docs/dashboard.md, "Team"): the service's own; the Team page and the audit
    # trail show them, with the person who acted (``actor``).
    TEAM_MEMBER_INVITED = "team.member_invited"
    TEAM_INVITATION_RESENT = "team.invitation_resent"
    TEAM_INVITATION_REVOKED = "team.invitation_revoked"
    TEAM_MEMBER_JOINED = "team.member_joined"
    TEAM_ROLE_CHANGED = "team.role_changed"
    TEAM_MEMBER_DEACTIVATED = "team.member_deactivated"
    TEAM_MEMBER_REACTIVATED = "team.member_reactivated"
    TEAM_TWO_FACTOR_REQUIRED = "team.two_factor_required"
    TEAM_MEMBER_TWO_FACTOR = "team.member_two_factor"
    # A person's data was erased, or expired by the tenant's retention (docs/privacy.md): the
    # activity feed says so with counts and no personal data; no webhook carries them.
    DATA_ERASED = "data.erased"
    DATA_EXPIRED = "data.expired"
    # A teammate wrote an internal note (docs/dashboard.md, "Inbox"): the people it mentions are
    # told (a toast, an email). Ids only; no surface shows it, so no webhook can carry a note.
    NOTE_CREATED = "note.created"
    # Sent by hand to one webhook receiver (the dashboard's "Send test event"): both webhook
    # surfaces show it to that receiver alone; no subscription can ask for it.
    WEBHOOK_TEST = "webhook.test"


class Event(models.Model):
    """One domain event, written by ``core.events.emit`` in the writer's transaction.

    ``facts`` are what happened, in stored vocabulary: ids as UUID strings, stored statuses,
    snapshots of the rows involved as they were at that moment, timestamps as ISO 8601 UTC
    strings. No surface's shape is stored: each surface renders its payload from the facts
    (``core.events.payload``), with the presenters its API uses. ``lead`` is SET_NULL so that
    the history of a deleted lead, and its ``lead.deleted`` event, survive; every lead event
    also names the lead in ``facts``.
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
    # A plain UUID: the conversation may be deleted while its events stay.
    conversation_id = models.UUIDField(null=True, blank=True)
    description = models.CharField(max_length=500)
    facts = models.JSONField(default=dict)
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
