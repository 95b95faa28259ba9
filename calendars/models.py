"""A sales rep's calendar connection, and the calendar write of each meeting booked with a rep."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.utils import timezone

from core import crypto
from core.work import RetriedWork


class CalendarConnection(models.Model):
    """One CalDAV calendar of one tenant user. The password (an app password, as a rule) is stored
    encrypted like the tenants' model keys and never shown again."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey("tenants.Tenant", on_delete=models.CASCADE,
                               related_name="calendar_connections")
    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                                related_name="calendar_connection")
    url = models.URLField("CalDAV URL", max_length=2048)
    username = models.CharField(max_length=255)
    password_encrypted = models.TextField(editable=False)
    calendar_url = models.URLField(max_length=2048, editable=False,
                                   help_text="The calendar collection found at verification.")
    # Whether the calendar answers a free-busy REPORT; if not, a time-range REPORT is used.
    freebusy_query = models.BooleanField(default=True, editable=False)
    verified_at = models.DateTimeField(null=True, editable=False)
    last_error = models.CharField(max_length=500, blank=True, editable=False)
    # Round-robin among the reps free at a slot: the one booked longest ago goes next.
    last_booked_at = models.DateTimeField(null=True, blank=True, editable=False)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    updated_at = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [models.Index(fields=["tenant", "verified_at"], name="calendar_conn_tenant")]

    def __str__(self) -> str:
        return f"{self.user} · {self.calendar_url or self.url}"

    @property
    def password(self) -> str:
        return crypto.decrypt(self.password_encrypted)


class WriteStatus(models.TextChoices):
    PENDING = "pending", "Pending"  # to be written (or removed), now or at next_attempt_at
    WRITTEN = "written", "Written"
    FAILED = "failed", "Failed"  # every attempt of the schedule failed
    REMOVED = "removed", "Removed"  # the meeting was cancelled and its event removed


class MeetingCalendarWrite(RetriedWork):
    """Where a meeting stands in its host rep's calendar: written, pending a (re)try, failed or
    removed. Created with the booking (same transaction); the Celery task ``calendars.write``
    PUTs the VEVENT (or removes it once the meeting is cancelled) and retries with backoff
    (core.work)."""

    PENDING = WriteStatus.PENDING

    meeting = models.OneToOneField("conversations.Meeting", on_delete=models.CASCADE,
                                   primary_key=True, related_name="calendar_write")
    tenant = models.ForeignKey("tenants.Tenant", on_delete=models.CASCADE, db_index=False,
                               related_name="+")
    # The rep the meeting is with (calendars.availability.pick_host).
    host = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL,
                             related_name="+")
    status = models.CharField(max_length=10, choices=WriteStatus.choices,
                              default=WriteStatus.PENDING)
    sequence = models.PositiveIntegerField(default=0)  # the VEVENT's SEQUENCE
    href = models.URLField(max_length=2048, blank=True)
    etag = models.CharField(max_length=255, blank=True)
    written_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["created_at", "meeting_id"]
        indexes = [models.Index(fields=["status", "next_attempt_at"], name="calendar_write_due"),
                   models.Index(fields=["tenant", "host", "status"], name="calendar_write_host")]

    def __str__(self) -> str:
        return f"Calendar write of {self.meeting_id}: {self.status}"
