"""API keys: how REST clients prove which tenant (and which of its live or test data) they act for."""

from __future__ import annotations

import uuid
from datetime import datetime

from django.db import models
from django.utils import timezone


class Scope(models.TextChoices):
    READ = "read", "Read"
    WRITE = "write", "Write"
    ADMIN = "admin", "Admin"


# Each scope allows everything the ones before it do (the specification's scope table).
SCOPE_RANK = {Scope.READ: 0, Scope.WRITE: 1, Scope.ADMIN: 2}


def scope_allows(held: str, needed: str) -> bool:
    """Whether a key of scope ``held`` may do what needs ``needed``."""
    return SCOPE_RANK[held] >= SCOPE_RANK[needed]

ROTATION_GRACE = timezone.timedelta(hours=24)


class KeyStatus(models.TextChoices):
    ACTIVE = "active", "Active"
    GRACE = "grace_period", "Old key in grace period"
    REVOKED = "revoked", "Revoked"


class ApiKey(models.Model):
    """One secret key. Only its SHA-256 is stored; ``prefix`` and ``last4`` identify it in lists.

    Lifecycle (the specification's key table): active → (rotate) grace period for 24 hours →
    revoked, or revoked at once. The grace period ends by itself: authentication compares
    ``expires_at`` with the clock, so no sweeper is needed.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey("tenants.Tenant", on_delete=models.CASCADE, related_name="api_keys")
    livemode = models.BooleanField()
    name = models.CharField(max_length=100)
    scope = models.CharField(max_length=10, choices=Scope.choices)
    prefix = models.CharField(max_length=16, editable=False)  # "sk_live_AbCd"
    last4 = models.CharField(max_length=4, editable=False)
    hashed_key = models.CharField(max_length=64, unique=True, editable=False)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)
    # Set when the key is rotated: the end of its grace period.
    expires_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    replaced_by = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="replaced"
    )
    created_by = models.CharField(max_length=200, blank=True)

    class Meta:
        verbose_name, verbose_name_plural = "API key", "API keys"
        ordering = ["-created_at", "id"]
        indexes = [models.Index(fields=["tenant", "-created_at"], name="apikey_tenant_created")]

    def __str__(self) -> str:
        return f"{self.name} ({self.masked})"

    @property
    def masked(self) -> str:
        return f"{self.prefix}…{self.last4}"

    def status_at(self, now: datetime) -> str:
        if self.revoked_at is not None or (self.expires_at is not None and self.expires_at <= now):
            return KeyStatus.REVOKED
        if self.expires_at is not None:
            return KeyStatus.GRACE
        return KeyStatus.ACTIVE

    @property
    def status(self) -> str:
        return self.status_at(timezone.now())

    @property
    def is_usable(self) -> bool:
        return self.status != KeyStatus.REVOKED

    def allows(self, scope: str) -> bool:
        return scope_allows(self.scope, scope)


class IdempotencyState(models.TextChoices):
    IN_PROGRESS = "in_progress", "In progress"
    COMPLETED = "completed", "Completed"


class IdempotencyKey(models.Model):
    """An ``Idempotency-Key`` sent with a v1 POST, and the first response given to it.

    Keys belong to the API key that sent them (the same string from two API keys is two
    records). A record older than 24 hours is as good as absent: the next request with its key
    overwrites it, so expiry needs no sweeper (one purges old rows hourly to keep the table small).
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey("tenants.Tenant", on_delete=models.CASCADE, related_name="+")
    livemode = models.BooleanField()
    api_key = models.ForeignKey(ApiKey, on_delete=models.CASCADE, related_name="idempotency_keys")
    key = models.CharField(max_length=255)
    # SHA-256 of the method, path and canonical JSON body: "the same request" means the same hash.
    fingerprint = models.CharField(max_length=64)
    state = models.CharField(max_length=12, choices=IdempotencyState.choices,
                             default=IdempotencyState.IN_PROGRESS)
    response_status = models.PositiveSmallIntegerField(null=True, blank=True)
    response_headers = models.JSONField(default=dict, blank=True)
    response_body = models.BinaryField(default=b"", blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    # When the request that owns an in-progress record started; a record in progress for longer
    # than IDEMPOTENCY_LOCK_SECONDS belongs to a request that died, and a retry may take it over.
    locked_at = models.DateTimeField(default=timezone.now)
    # Who runs the in-progress request (``apikeys.liveness``): its PostgreSQL connection, or its
    # process on SQLite. A retry may take over at once from an owner that is gone ...
    owner = models.CharField(max_length=255, blank=True, default="")
    # ... unless the request wrote to the database: set in each transaction that writes, so that
    # it commits with the writes and only with them (``config.api.idempotency``).
    written = models.BooleanField(default=False)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["api_key", "key"], name="idempotency_key_per_api_key"),
        ]
        indexes = [models.Index(fields=["created_at"], name="idempotency_created")]

    def __str__(self) -> str:
        return f"{self.key} ({self.state})"
