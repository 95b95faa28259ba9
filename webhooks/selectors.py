"""Reads of the webhooks: what the v1 API lists and what the dashboard (Settings, Webhooks)
shows: subscriptions, legacy webhooks, the deliveries log with attempts, the failed ones."""

from __future__ import annotations

import uuid

from django.db.models import Prefetch, QuerySet

from tenants.models import Tenant

from .models import Delivery, DeliveryAttempt, DeliveryStatus, LegacyWebhook, Subscription

_ATTEMPTS = Prefetch("attempts", queryset=DeliveryAttempt.objects.order_by("number", "attempted_at"))


def subscription_list(*, tenant: Tenant, livemode: bool) -> QuerySet[Subscription]:
    return Subscription.objects.filter(tenant=tenant, livemode=livemode).order_by("-created_at", "-id")


def legacy_webhook_list(*, tenant: Tenant, livemode: bool = True) -> QuerySet[LegacyWebhook]:
    return LegacyWebhook.objects.filter(tenant=tenant, livemode=livemode).order_by("-created_at", "-id")


def webhook_added(*, tenant: Tenant) -> bool:
    """Whether the tenant has a webhook of either kind (a v1 subscription of either mode, or a
    legacy webhook), active or not."""
    return (Subscription.objects.filter(tenant=tenant).exists()
            or LegacyWebhook.objects.filter(tenant=tenant).exists())


def with_attempts(deliveries: QuerySet[Delivery]) -> QuerySet[Delivery]:
    """Deliveries ready to present: their event joined, their attempts in one more query."""
    return deliveries.select_related("event").prefetch_related(_ATTEMPTS)


def delivery_log(*, tenant: Tenant, livemode: bool, subscription_id: uuid.UUID | None = None,
                 legacy_webhook_id: uuid.UUID | None = None, status: str | None = None,
                 ) -> QuerySet[Delivery]:
    """Deliveries newest first, optionally of one receiver or in one status."""
    deliveries = Delivery.objects.filter(tenant=tenant, livemode=livemode)
    if subscription_id is not None:
        deliveries = deliveries.filter(subscription_id=subscription_id)
    if legacy_webhook_id is not None:
        deliveries = deliveries.filter(legacy_webhook_id=legacy_webhook_id)
    if status is not None:
        deliveries = deliveries.filter(status=status)
    return with_attempts(deliveries.order_by("-created_at", "-id"))


def failed_deliveries(*, tenant: Tenant, livemode: bool) -> QuerySet[Delivery]:
    """The dashboard's list of deliveries that gave up (v1 ones can be retried), latest first."""
    return with_attempts(Delivery.objects.filter(tenant=tenant, livemode=livemode,
                                                 status=DeliveryStatus.FAILED)
                         .order_by("-updated_at", "-id"))


# --- the staff dashboard ---------------------------------------------------------------------

def subscription_get(*, tenant: Tenant, livemode: bool, subscription_id: uuid.UUID,
                     ) -> Subscription | None:
    """One v1 subscription of the tenant in this mode, or None."""
    return subscription_list(tenant=tenant, livemode=livemode).filter(pk=subscription_id).first()


def legacy_webhook_get(*, tenant: Tenant, livemode: bool, webhook_id: uuid.UUID,
                       ) -> LegacyWebhook | None:
    """One legacy webhook of the tenant in this mode, or None."""
    return legacy_webhook_list(tenant=tenant, livemode=livemode).filter(pk=webhook_id).first()


def delivery_log_with_receivers(*, tenant: Tenant, livemode: bool, status: str | None = None,
                                ) -> QuerySet[Delivery]:
    """``delivery_log`` with each delivery's subscription or legacy webhook joined."""
    return delivery_log(tenant=tenant, livemode=livemode, status=status).select_related(
        "subscription", "legacy_webhook")


def failed_deliveries_with_receivers(*, tenant: Tenant, livemode: bool, limit: int,
                                     ) -> list[Delivery]:
    """The latest ``failed_deliveries`` with their receivers joined."""
    return list(failed_deliveries(tenant=tenant, livemode=livemode)
                .select_related("subscription", "legacy_webhook")[:limit])


def delivery_get(*, tenant: Tenant, livemode: bool, delivery_id: uuid.UUID) -> Delivery | None:
    """One delivery of the tenant in this mode, with its event, receiver and attempts; or None."""
    return delivery_log_with_receivers(tenant=tenant, livemode=livemode).filter(pk=delivery_id).first()
