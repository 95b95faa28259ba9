"""Webhooks as data: subscriptions of both surfaces, one delivery row per event and receiver, and
one attempt row per HTTP request (after Saleor's EventDelivery/EventDeliveryAttempt and Svix's
message attempts). docs/webhooks.md describes the lifecycle; ``webhooks.services`` writes all of it.
"""

from __future__ import annotations

import uuid

from django.db import models
from django.db.models import Q
from django.utils import timezone

from core import crypto


class SubscriptionStatus(models.TextChoices):
    ACTIVE = "active", "Active"
    DISABLED = "disabled", "Disabled"


class Subscription(models.Model):
    """A v1 webhook subscription (``wh_<hex>``): where to send which event types, and the secret
    that signs them.

    The secret is stored encrypted (``core.crypto``) because signing needs the plaintext; the
    API shows it only in the creation response. ``failing_since`` is the time of the first failed
    attempt since the last success: when every attempt has failed for five days, the subscription
    is disabled with ``disabled_reason`` (docs/webhooks.md, "Automatic disabling").
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey("tenants.Tenant", on_delete=models.CASCADE, db_index=False,
                               related_name="webhook_subscriptions")
    livemode = models.BooleanField()
    url = models.CharField(max_length=2048)
    events = models.JSONField(default=list)
    secret_encrypted = models.TextField(editable=False)
    status = models.CharField(max_length=10, choices=SubscriptionStatus.choices,
                              default=SubscriptionStatus.ACTIVE)
    disabled_reason = models.CharField(max_length=500, blank=True)
    disabled_at = models.DateTimeField(null=True, blank=True)
    failing_since = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["tenant", "livemode", "created_at", "id"], name="wh_sub_list"),
        ]

    def __str__(self) -> str:
        return f"wh_{self.pk.hex} {self.url}"

    @property
    def secret(self) -> str:
        return crypto.decrypt(self.secret_encrypted)


class LegacyWebhook(models.Model):
    """A legacy-surface webhook, configured by sales staff in the dashboard (Settings, Webhooks)
    or with ``manage.py configure_legacy_webhook``. Events: lead.created, lead.qualified,
    meeting.booked. Like the legacy cookie it acts on live data unless created for test mode."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey("tenants.Tenant", on_delete=models.CASCADE, db_index=False,
                               related_name="legacy_webhooks")
    livemode = models.BooleanField(default=True)
    url = models.CharField(max_length=2048)
    events = models.JSONField(default=list)
    secret_encrypted = models.TextField(editable=False)
    active = models.BooleanField(default=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["tenant", "livemode", "created_at", "id"], name="wh_legacy_list"),
        ]

    def __str__(self) -> str:
        return f"legacy webhook {self.pk} {self.url}"

    @property
    def secret(self) -> str:
        return crypto.decrypt(self.secret_encrypted)


class Surface(models.TextChoices):
    V1 = "v1", "v1"
    LEGACY = "legacy", "Legacy"


class DeliveryStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    DELIVERING = "delivering", "Delivering"
    DELIVERED = "delivered", "Delivered"
    WAITING_RETRY = "waiting_retry", "Waiting for retry"
    FAILED = "failed", "Failed"


# A delivery in one of these may be claimed by a worker once it is due.
CLAIMABLE = (DeliveryStatus.PENDING, DeliveryStatus.WAITING_RETRY)


class Trigger(models.TextChoices):
    SCHEDULED = "scheduled", "Scheduled"
    MANUAL = "manual", "Manual"


class Delivery(models.Model):
    """One event on its way to one receiver (a v1 subscription or a legacy webhook).

    ``next_attempt_at`` is when the sweeper may enqueue it; ``enqueued_at`` when a task for it
    was last put on the broker (a message lost by the broker is re-enqueued after a while);
    ``lease_expires_at`` bounds a ``delivering`` claim, so that a worker that died mid-attempt
    does not strand the delivery; ``claim_token`` tells the claiming worker's result apart from a
    late one. ``next_trigger`` says whether the next attempt was asked for by hand.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey("tenants.Tenant", on_delete=models.CASCADE, db_index=False,
                               related_name="+")
    livemode = models.BooleanField()
    surface = models.CharField(max_length=6, choices=Surface.choices)
    event = models.ForeignKey("core.Event", on_delete=models.CASCADE, related_name="+")
    subscription = models.ForeignKey(Subscription, null=True, blank=True, on_delete=models.CASCADE,
                                     related_name="deliveries", db_index=False)
    legacy_webhook = models.ForeignKey(LegacyWebhook, null=True, blank=True,
                                       on_delete=models.CASCADE, related_name="deliveries",
                                       db_index=False)
    status = models.CharField(max_length=13, choices=DeliveryStatus.choices,
                              default=DeliveryStatus.PENDING)
    attempt_count = models.PositiveSmallIntegerField(default=0)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    next_trigger = models.CharField(max_length=9, choices=Trigger.choices,
                                    default=Trigger.SCHEDULED)
    enqueued_at = models.DateTimeField(null=True, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    claim_token = models.UUIDField(null=True, blank=True)
    last_attempt_at = models.DateTimeField(null=True, blank=True)
    last_status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    last_error = models.CharField(max_length=500, blank=True)
    delivered_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        verbose_name_plural = "deliveries"
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=(Q(subscription__isnull=False, legacy_webhook__isnull=True, surface="v1")
                           | Q(subscription__isnull=True, legacy_webhook__isnull=False,
                               surface="legacy")),
                name="delivery_one_receiver",
            ),
            # One delivery per event and receiver, whatever runs the fan-out twice.
            models.UniqueConstraint(fields=["subscription", "event"], name="delivery_sub_event",
                                    condition=Q(subscription__isnull=False)),
            models.UniqueConstraint(fields=["legacy_webhook", "event"],
                                    name="delivery_legacy_event",
                                    condition=Q(legacy_webhook__isnull=False)),
        ]
        indexes = [
            # The sweeper's two questions: what is due, and what has overrun its lease.
            models.Index(fields=["next_attempt_at"], name="delivery_due",
                         condition=Q(status__in=["pending", "waiting_retry"])),
            models.Index(fields=["lease_expires_at"], name="delivery_leased",
                         condition=Q(status="delivering")),
            # A subscription's deliveries log, newest first.
            models.Index(fields=["subscription", "created_at", "id"], name="delivery_by_sub"),
            models.Index(fields=["legacy_webhook", "created_at", "id"], name="delivery_by_legacy"),
            # The dashboard's log and its failed list.
            models.Index(fields=["tenant", "livemode", "created_at", "id"], name="delivery_log"),
            models.Index(fields=["tenant", "livemode", "updated_at", "id"], name="delivery_failed",
                         condition=Q(status="failed")),
        ]

    def __str__(self) -> str:
        return f"delivery {self.pk} ({self.status})"


class DeliveryAttempt(models.Model):
    """One HTTP request of a delivery, as its ``X-Service-Delivery`` header named it
    (``wha_<hex>`` of this row's id): when, with what answer, how long, and why it failed."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    delivery = models.ForeignKey(Delivery, on_delete=models.CASCADE, related_name="attempts")
    number = models.PositiveSmallIntegerField()
    trigger = models.CharField(max_length=9, choices=Trigger.choices)
    attempted_at = models.DateTimeField()
    status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    duration_ms = models.PositiveIntegerField(default=0)
    success = models.BooleanField(default=False)
    error = models.CharField(max_length=500, blank=True)
    response_excerpt = models.TextField(blank=True)
    # The address actually connected to (after the SSRF check), for the operator's record.
    remote_address = models.CharField(max_length=64, blank=True)

    class Meta:
        ordering = ["number", "attempted_at"]
        indexes = [models.Index(fields=["delivery", "number"], name="attempt_by_delivery")]

    def __str__(self) -> str:
        return f"attempt {self.number} of {self.delivery_id}"
