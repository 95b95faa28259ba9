"""Reads of the integrations app, scoped by tenant and mode."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from tenants.models import Tenant

from .models import CrmConnection, CrmSync


def connections_of(*, tenant: Tenant, livemode: bool) -> list[CrmConnection]:
    return list(CrmConnection.objects.filter(tenant=tenant, livemode=livemode))


def connection_get(*, tenant: Tenant, livemode: bool, provider: str) -> CrmConnection | None:
    return CrmConnection.objects.filter(tenant=tenant, livemode=livemode,
                                        provider=provider).first()


def sync_log(*, tenant: Tenant, livemode: bool, connection: CrmConnection) -> QuerySet[CrmSync]:
    """The connection's syncs, the latest change first (index ``crm_sync_log``)."""
    return (CrmSync.objects.filter(tenant=tenant, livemode=livemode, connection=connection)
            .select_related("lead").order_by("-updated_at", "id"))


def sync_get(*, tenant: Tenant, livemode: bool, sync_id: Any) -> CrmSync | None:
    return (CrmSync.objects.select_related("connection")
            .filter(tenant=tenant, livemode=livemode, pk=sync_id).first())
