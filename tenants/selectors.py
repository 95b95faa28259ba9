"""Reads of tenant members."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db.models import QuerySet

from .models import Tenant, User


def tenant_users(*, tenant: Tenant) -> QuerySet[User]:
    """Active members of the tenant's staff, oldest first (stable: id breaks ties)."""
    return User.objects.filter(tenant=tenant, is_active=True).order_by("date_joined", "id")


def tenant_by_reference(ref: str) -> Tenant | None:
    """The tenant whose id (UUID) or public id (``tn_…``) is ``ref``, as operators type it."""
    try:
        found = Tenant.objects.filter(pk=ref).first()
    except ValidationError:
        found = None
    return found or Tenant.objects.filter(public_id=ref).first()
