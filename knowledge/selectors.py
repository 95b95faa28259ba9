"""Reads of the knowledge base: the documents a tenant sees in one mode (the dashboard's
Knowledge base page)."""

from __future__ import annotations

from django.db.models import QuerySet

from tenants.models import Tenant

from .models import Document


def document_list(*, tenant: Tenant, livemode: bool) -> QuerySet[Document]:
    """The tenant's documents in one mode, newest first; the id keeps pages stable."""
    return Document.objects.filter(tenant=tenant, livemode=livemode).order_by("-created_at", "-id")
