"""The indexes the lists and search rely on exist, and the queries can use them.

On PostgreSQL the planner is told to avoid sequential scans and sorts (a test table is tiny, so
it would rather scan and sort) and the plans must then name our indexes: proof that each query's expressions
match an index's. On SQLite the trigram migration must be a no-op.
"""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from leads import selectors
from leads.models import Lead
from leads.services import LeadEmailTaken, lead_create
from tests.factories import make_lead

TRIGRAM_INDEXES = {"lead_search_name", "lead_search_email", "lead_search_company",
                   "lead_search_custom"}


def _index_names() -> set[str]:
    with connection.cursor() as cursor:
        constraints = connection.introspection.get_constraints(cursor, Lead._meta.db_table)
    return {name for name, info in constraints.items() if info["index"]}


def _plan(sql: str) -> str:
    with connection.cursor() as cursor:
        # A test table is tiny: without these the planner would rather scan it, or read any
        # index and sort a row or two, whatever indexes exist.
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("SET LOCAL enable_sort = off")
        cursor.execute("EXPLAIN " + sql)
        return "\n".join(row[0] for row in cursor.fetchall())


def test_trigram_indexes_exist_only_on_postgresql(db):
    names = _index_names()
    assert {"lead_created", "lead_updated", "lead_score", "lead_status_created",
            "lead_source_created", "lead_last_active"} <= names
    if connection.vendor == "postgresql":
        assert names >= TRIGRAM_INDEXES
    else:
        assert not TRIGRAM_INDEXES & names


def test_queries_use_the_indexes(kit):
    make_lead(kit, name="Ada", company="Engines")
    with CaptureQueriesContext(connection) as captured:
        selectors.lead_list(tenant=kit.tenant, livemode=True,
                            filters=selectors.LeadFilters(status="new"))
        selectors.lead_list(tenant=kit.tenant, livemode=True, sort_by="score")
    _, by_status, _, by_score = (q["sql"] for q in captured.captured_queries)
    if connection.vendor != "postgresql":
        return
    assert "Index Only Scan" in _plan(by_status) and "lead_status_created" in _plan(by_status)
    assert "lead_score" in _plan(by_score)
    # Search compares each field the way Django's icontains writes it; each must be the very
    # expression of its trigram index, or the index would never be used.
    for field, index in (("name", "lead_search_name"), ("email", "lead_search_email"),
                         ("company", "lead_search_company"),
                         ("custom_fields_text", "lead_search_custom")):
        sql, params = Lead.objects.filter(**{f"{field}__icontains": "engines"}).values(
            "pk").query.sql_with_params()
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL enable_seqscan = off")
            cursor.execute("EXPLAIN " + sql, params)
            plan = "\n".join(row[0] for row in cursor.fetchall())
        assert index in plan, plan


def test_a_concurrent_duplicate_still_yields_the_existing_id(kit, monkeypatch):
    """Two writers may both pass the email check; the unique index stops the second one,
    which must still answer with the first one's id (not a 500)."""
    from leads import services

    first = make_lead(kit, email="race@example.com")
    monkeypatch.setattr(services, "_email_owner",
                        _once(lambda **kw: None, services._email_owner))
    with pytest.raises(LeadEmailTaken) as caught:
        lead_create(tenant=kit.tenant, livemode=True, email="RACE@example.com")
    assert caught.value.existing_id == first.pk
    assert Lead.objects.count() == 1


def _once(first_result, then):
    calls = []

    def call(**kwargs):
        calls.append(kwargs)
        return first_result(**kwargs) if len(calls) == 1 else then(**kwargs)

    return call
