"""A tenant's connection to a CRM, and the sync of each lead, conversation and meeting to it."""

from __future__ import annotations

import uuid

from django.db import models
from django.utils import timezone

from core import crypto
from core.work import RetriedWork


class Provider(models.TextChoices):
    HUBSPOT = "hubspot", "HubSpot"


class AuthKind(models.TextChoices):
    TOKEN = "token", "Private app token"
    OAUTH = "oauth", "OAuth 2.0"


class ConnectionStatus(models.TextChoices):
    CONNECTED = "connected", "Connected"
    # The CRM refused the token (401): revoked, expired past refreshing, or its app uninstalled.
    # Syncs wait (status ``waiting``) until the manager connects again.
    NEEDS_RECONNECT = "needs_reconnect", "Needs reconnect"
    DISCONNECTED = "disconnected", "Disconnected"


class BackfillStatus(models.TextChoices):
    RUNNING = "running", "Running"
    DONE = "done", "Done"


class CrmConnection(models.Model):
    """One CRM of one tenant, in one mode (live or test data). Tokens are stored encrypted like
    the tenants' model keys (``core.crypto``) and never shown again; on Disconnect they are
    revoked at the CRM and wiped here, and the row stays for its sync log."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey("tenants.Tenant", on_delete=models.CASCADE, db_index=False,
                               related_name="crm_connections")
    livemode = models.BooleanField()
    provider = models.CharField(max_length=20, choices=Provider.choices)
    status = models.CharField(max_length=20, choices=ConnectionStatus.choices,
                              default=ConnectionStatus.CONNECTED)
    auth_kind = models.CharField(max_length=10, choices=AuthKind.choices)
    base_url = models.URLField("API base URL", max_length=2048)
    access_token_encrypted = models.TextField(blank=True, editable=False)
    refresh_token_encrypted = models.TextField(blank=True, editable=False)
    expires_at = models.DateTimeField(null=True, blank=True)  # of the access token (OAuth)
    scopes = models.JSONField(default=list, blank=True)
    account_id = models.CharField(max_length=64, blank=True)  # the CRM's account (HubSpot hub id)
    # Lead field -> CRM property, and stored lead status -> CRM properties (docs/integrations.md).
    field_mapping = models.JSONField(default=dict, blank=True)
    status_mapping = models.JSONField(default=dict, blank=True)
    # Where reading changes back from the CRM stands (CRM -> here): the CRM's last-modified
    # time (HubSpot: epoch milliseconds) of the latest contact read; blank: from connecting on.
    cursor = models.CharField(max_length=200, blank=True)
    polled_at = models.DateTimeField(null=True, blank=True)
    # The backfill of the leads that existed before connecting: where it stands (the last lead
    # id sent, leads go in id order), how many of how many are done.
    backfill_status = models.CharField(max_length=10, choices=BackfillStatus.choices,
                                       blank=True)
    backfill_cursor = models.CharField(max_length=64, blank=True)
    backfill_done = models.PositiveIntegerField(default=0)
    backfill_total = models.PositiveIntegerField(default=0)
    last_error = models.CharField(max_length=500, blank=True)
    connected_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["provider", "id"]
        constraints = [models.UniqueConstraint(fields=["tenant", "livemode", "provider"],
                                               name="crm_connection_one_per_provider")]
        indexes = [models.Index(fields=["tenant", "livemode", "status"], name="crm_conn_active")]

    def __str__(self) -> str:
        return f"{self.get_provider_display()} ({self.status})"

    @property
    def access_token(self) -> str:
        return crypto.decrypt(self.access_token_encrypted)

    @property
    def refresh_token(self) -> str:
        return crypto.decrypt(self.refresh_token_encrypted)


class SyncKind(models.TextChoices):
    CONTACT = "contact", "Contact"  # a lead
    NOTE = "note", "Note"  # a conversation
    MEETING = "meeting", "Meeting"


class SyncStatus(models.TextChoices):
    PENDING = "pending", "Pending"  # to send, now or at next_attempt_at
    SYNCED = "synced", "Synced"
    FAILED = "failed", "Failed"  # refused for good (4xx) or every attempt failed
    WAITING = "waiting", "Waiting for reconnect"  # the connection needs reconnecting


class CrmSync(RetriedWork):
    """Where one local object stands in one CRM: the CRM's id of it (so a second change updates,
    never duplicates), and the state of its latest change. A change re-arms the row (pending,
    ``generation`` + 1); the Celery task ``integrations.sync`` sends the object as it is then,
    retried with backoff (core.work). A change that comes while an attempt is on the wire keeps
    the row pending for one more attempt (the generation it claimed is not the current one)."""

    PENDING = SyncStatus.PENDING

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    connection = models.ForeignKey(CrmConnection, on_delete=models.CASCADE, related_name="syncs")
    tenant = models.ForeignKey("tenants.Tenant", on_delete=models.CASCADE, db_index=False,
                               related_name="+")
    livemode = models.BooleanField()
    kind = models.CharField(max_length=10, choices=SyncKind.choices)
    object_id = models.UUIDField()  # the lead's, conversation's or meeting's id
    lead = models.ForeignKey("leads.Lead", null=True, blank=True, on_delete=models.SET_NULL,
                             related_name="crm_syncs")
    status = models.CharField(max_length=10, choices=SyncStatus.choices,
                              default=SyncStatus.PENDING)
    remote_id = models.CharField(max_length=64, blank=True)
    generation = models.PositiveIntegerField(default=1)
    claimed_generation = models.PositiveIntegerField(default=0)
    trigger = models.CharField(max_length=40, blank=True)  # the event type of the latest change
    last_status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    # The lead status last sent (contacts): set_status runs only when it changed.
    pushed_status = models.CharField(max_length=12, blank=True)
    # The email of the CRM record's owner (contacts; read back from the CRM): the lead's rep.
    remote_owner_email = models.CharField(max_length=254, blank=True)
    synced_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-updated_at", "id"]
        constraints = [models.UniqueConstraint(fields=["connection", "kind", "object_id"],
                                               name="crm_sync_one_per_object")]
        indexes = [models.Index(fields=["status", "next_attempt_at"], name="crm_sync_due"),
                   models.Index(fields=["connection", "-updated_at"], name="crm_sync_log"),
                   models.Index(fields=["lead", "-updated_at"], name="crm_sync_lead_log"),
                   models.Index(fields=["connection", "kind", "remote_id"],
                                name="crm_sync_remote")]

    def __str__(self) -> str:
        return f"{self.kind} {self.object_id}: {self.status}"
