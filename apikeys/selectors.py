"""Reads of API keys. Keys belong to the tenant, not to a mode: each key is live or test, and
one list shows both."""

from __future__ import annotations

import uuid

from tenants.models import Tenant

from .models import ApiKey


def api_key_list(*, tenant: Tenant, limit: int) -> list[ApiKey]:
    """The tenant's keys of both modes, newest first, each with the key that replaced it."""
    return list(ApiKey.objects.filter(tenant=tenant).select_related("replaced_by")
                .order_by("-created_at", "-id")[:limit])


def api_key_get(*, tenant: Tenant, key_id: uuid.UUID) -> ApiKey | None:
    """One key of the tenant (either mode), or None."""
    return ApiKey.objects.filter(tenant=tenant, pk=key_id).first()


def api_key_replaced(*, tenant: Tenant, key_id: uuid.UUID) -> ApiKey | None:
    """The key that rotation replaced with ``key_id`` (in its grace period or no longer), or
    None when ``key_id`` was generated, not rotated."""
    return (ApiKey.objects.filter(tenant=tenant, replaced_by_id=key_id)
            .order_by("-created_at", "-id").first())
