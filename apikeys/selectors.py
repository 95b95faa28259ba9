"""Reads of API keys. Keys belong to the tenant, not to a mode: each key is live or test, and
one list shows both."""

from __future__ import annotations

import uuid

from django.db.models import Q
from django.utils import timezone

from tenants.models import Tenant

from .models import ApiKey

# ``created_by`` of the keys a tenant is created with (``manage.py create_tenant``).
WITH_THE_TENANT = "create_tenant"


def api_key_list(*, tenant: Tenant, limit: int) -> list[ApiKey]:
    """The tenant's keys of both modes, newest first, each with the key that replaced it."""
    return list(ApiKey.objects.filter(tenant=tenant).select_related("replaced_by")
                .order_by("-created_at", "-id")[:limit])


def api_key_usable(*, tenant: Tenant) -> bool:
    """Whether the tenant holds a key that works now (active, or an old one in its grace
    period), of either mode: the default keys it was created with count, since ``make run`` and
    ``create_tenant`` print them."""
    return (ApiKey.objects.filter(tenant=tenant, revoked_at__isnull=True)
            .filter(Q(expires_at__isnull=True) | Q(expires_at__gt=timezone.now())).exists())


def api_key_get(*, tenant: Tenant, key_id: uuid.UUID) -> ApiKey | None:
    """One key of the tenant (either mode), or None."""
    return ApiKey.objects.filter(tenant=tenant, pk=key_id).first()


def api_key_ancestors(*, tenant: Tenant, key_id: uuid.UUID) -> list[ApiKey]:
    """Every key that rotations replaced on the way to ``key_id`` (K1 → K2 → K3: K2, then K1),
    nearest first; empty when ``key_id`` was generated, not rotated."""
    found: list[ApiKey] = []
    seen, frontier = {key_id}, [key_id]
    while frontier:
        replaced = list(ApiKey.objects.filter(tenant=tenant, replaced_by_id__in=frontier)
                        .exclude(pk__in=seen).order_by("-created_at", "-id"))
        seen.update(k.pk for k in replaced)
        frontier = [k.pk for k in replaced]
        found += replaced
    return found
