"""Reads of the agent app: a tenant's test sets in one mode (the dashboard's Agent tests)."""

from __future__ import annotations

import uuid

from django.db.models import QuerySet

from tenants.models import Tenant

from .models import AgentTestSet


def agent_test_set_list(*, tenant: Tenant, livemode: bool) -> QuerySet[AgentTestSet]:
    """The tenant's sets in one mode, newest first (at most ``services.MAX_SETS``), without
    their questions and results: a list shows their counts and summaries."""
    return (AgentTestSet.objects.filter(tenant=tenant, livemode=livemode)
            .defer("questions", "last_results").order_by("-created_at", "-id"))


def agent_test_set_get(*, tenant: Tenant, livemode: bool,
                       test_set_id: uuid.UUID) -> AgentTestSet | None:
    """One set of the tenant in this mode, or None."""
    return AgentTestSet.objects.filter(tenant=tenant, livemode=livemode, pk=test_set_id).first()
