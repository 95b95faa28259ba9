"""Reads of tenant members."""

from __future__ import annotations

from django.db.models import QuerySet

from .models import Tenant, User


def tenant_users(*, tenant: Tenant) -> QuerySet[User]:
    """Active members of the tenant's staff, oldest first (stable: id breaks ties)."""
    return User.objects.filter(tenant=tenant, is_active=True).order_by("date_joined", "id")
