"""How subscriptions and deliveries are shown: the v1 shapes, which the dashboard reuses."""

from __future__ import annotations

from typing import Any

from core.ids import encode
from core.timestamps import format_timestamp

from .envelopes import attempt_id
from .models import Delivery, DeliveryAttempt, LegacyWebhook, Subscription


def v1_subscription(subscription: Subscription, *, secret: str | None = None) -> dict[str, Any]:
    """The specification's subscription object, plus ``disabledReason`` and ``updatedAt``; the
    secret only in the creation response."""
    data: dict[str, Any] = {
        "id": encode("wh", subscription.pk),
        "url": subscription.url,
        "events": list(subscription.events),
        "status": subscription.status,
        "disabledReason": subscription.disabled_reason or None,
        "createdAt": format_timestamp(subscription.created_at),
        "updatedAt": format_timestamp(subscription.updated_at),
    }
    if secret is not None:
        data["secret"] = secret
    return data


def v1_attempt(attempt: DeliveryAttempt) -> dict[str, Any]:
    return {
        "id": attempt_id(attempt.pk),
        "number": attempt.number,
        "trigger": attempt.trigger,
        "attemptedAt": format_timestamp(attempt.attempted_at),
        "statusCode": attempt.status_code,
        "durationMs": attempt.duration_ms,
        "success": attempt.success,
        "error": attempt.error or None,
        "responseExcerpt": attempt.response_excerpt or None,
    }


def v1_delivery(delivery: Delivery, *, attempts: list[DeliveryAttempt] | None = None
                ) -> dict[str, Any]:
    """A delivery with its attempts in order (``attempts`` prefetched by the selector)."""
    if attempts is None:
        attempts = list(delivery.attempts.all())
    return {
        "id": encode("whd", delivery.pk),
        "webhookId": encode("wh", delivery.subscription_id),
        "eventId": encode("evt", delivery.event_id),
        "eventType": delivery.event.type,
        "status": delivery.status,
        "attemptCount": delivery.attempt_count,
        "nextAttemptAt": format_timestamp(delivery.next_attempt_at),
        "lastAttemptAt": format_timestamp(delivery.last_attempt_at),
        "deliveredAt": format_timestamp(delivery.delivered_at),
        "createdAt": format_timestamp(delivery.created_at),
        "attempts": [v1_attempt(a) for a in attempts],
    }


def legacy_webhook_summary(webhook: LegacyWebhook, *, secret: str | None = None
                           ) -> dict[str, Any]:
    """A legacy webhook as operators and the dashboard see it (never its stored secret)."""
    data: dict[str, Any] = {
        "id": str(webhook.pk),
        "url": webhook.url,
        "events": list(webhook.events),
        "active": webhook.active,
        "mode": "live" if webhook.livemode else "test",
        "createdAt": format_timestamp(webhook.created_at),
        "updatedAt": format_timestamp(webhook.updated_at),
    }
    if secret is not None:
        data["secret"] = secret
    return data
