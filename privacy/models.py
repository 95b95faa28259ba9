"""Erasures: one row per request to erase a person (or per retention run), the audit line that
stays once the person is gone (docs/privacy.md)."""

from __future__ import annotations

import uuid

from django.db import models
from django.utils import timezone


class ErasureStatus(models.TextChoices):
    PENDING = "pending", "Pending"  # accepted; records, calendar events or files still to go
    COMPLETED = "completed", "Completed"
    FAILED = "failed", "Failed"  # a part outside the database could not be removed


class SubjectKind(models.TextChoices):
    """How the person was named: the erasure API's four ways, a DELETE of a lead or of a
    conversation, and the retention sweeper's runs."""

    EMAIL = "email", "Email address"
    LEAD = "lead", "Lead"
    VISITOR = "visitor", "Widget visitor"
    PHONE = "phone", "Phone number"
    CONVERSATION = "conversation", "Conversation"
    RETENTION = "retention", "Retention"


class Erasure(models.Model):
    """What was asked, by whom, and what was removed, kind by kind (``counts``).

    The value that named the person (an email, a phone, a visitor id) is kept encrypted only
    until the erasure has found them (``subject_encrypted``, blanked then): after it, this row
    holds no personal data. ``calendar_pending`` holds the events still to be removed from
    hosts' calendars (a connection id and an href, which carry no personal data): a calendar
    that cannot be reached is retried with backoff, and the erasure completes when it is done.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey("tenants.Tenant", on_delete=models.CASCADE, db_index=False,
                               related_name="+")
    livemode = models.BooleanField()
    subject_kind = models.CharField(max_length=12, choices=SubjectKind.choices)
    subject_encrypted = models.TextField(blank=True, editable=False)
    # The lead's or conversation's id when one named the person (ids are no personal data).
    subject_id = models.UUIDField(null=True, blank=True)
    status = models.CharField(max_length=10, choices=ErasureStatus.choices,
                              default=ErasureStatus.PENDING)
    requested_by = models.CharField(max_length=200)  # "API key sk_live_AbCd", a staff member
    counts = models.JSONField(default=dict, blank=True)
    records_erased = models.BooleanField(default=False)
    calendar_pending = models.JSONField(default=list, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    next_attempt_at = models.DateTimeField(null=True, blank=True)  # the calendar step's retry
    failure_reason = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    completed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["tenant", "livemode", "created_at", "id"], name="erasure_list"),
            models.Index(fields=["created_at"], condition=models.Q(status="pending"),
                         name="erasure_pending"),
        ]

    def __str__(self) -> str:
        return f"Erasure {self.pk} ({self.status})"

    def removed(self) -> str:
        """What went, for people: "1 lead, 4 messages, 2 events"; "nothing" when nothing did."""
        # In the kinds' order: PostgreSQL's jsonb keeps an object's keys in an order of its own.
        parts = [f"{count} {words[count != 1]}" for kind, words in ERASED_KINDS.items()
                 if (count := self.counts.get(kind, 0))]
        return ", ".join(parts) or "nothing"


# What an erasure counts, kind by kind (its ``counts``, in this order), singular and plural as
# the Privacy page names them.
ERASED_KINDS = {
    "leads": ("lead", "leads"), "conversations": ("conversation", "conversations"),
    "messages": ("message", "messages"), "meetings": ("meeting", "meetings"),
    "emails": ("email", "emails"), "events": ("event", "events"),
    "webhookAttempts": ("webhook answer", "webhook answers"),
    "idempotencyRecords": ("stored API answer", "stored API answers"),
    "visitorDays": ("visitor-day", "visitor-days"),
    "adminLogEntries": ("admin history line", "admin history lines"),
    "files": ("mail file", "mail files"),
    "attachments": ("file sent in a conversation", "files sent in conversations"),
    "importRows": ("import row", "import rows"),
    "calendarEvents": ("calendar event", "calendar events"),
}
