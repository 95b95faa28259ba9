"""Reads of the privacy app."""

from __future__ import annotations

from django.db.models import QuerySet

from tenants.models import Tenant

from .models import Erasure


def erasures(*, tenant: Tenant, livemode: bool) -> QuerySet[Erasure]:
    """The tenant's erasures in the mode, newest first (index ``erasure_list``)."""
    return Erasure.objects.filter(tenant=tenant, livemode=livemode).order_by("-created_at", "-id")
