"""Reads of the knowledge base: the documents a tenant sees in one mode (the dashboard's
Knowledge base page)."""

from __future__ import annotations

import uuid

from django.db.models import QuerySet

from tenants.models import Tenant

from .models import Document


def document_list(*, tenant: Tenant, livemode: bool) -> QuerySet[Document]:
    """The tenant's documents in one mode, newest first; the id keeps pages stable."""
    return Document.objects.filter(tenant=tenant, livemode=livemode).order_by("-created_at", "-id")


def document_get(*, tenant: Tenant, livemode: bool, document_id: uuid.UUID) -> Document | None:
    """One document of the tenant in this mode, or None."""
    return Document.objects.filter(tenant=tenant, livemode=livemode, pk=document_id).first()
