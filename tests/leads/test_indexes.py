"""The indexes the lists and search rely on exist, and the queries can use them.

On PostgreSQL the planner is told to avoid sequential scans and sorts (a test table is tiny, so
it would rather scan and sort) and the plans must then name our indexes: proof that each query's
expressions match an index's. On SQLite the GIN indexes of search do not exist.
"""

from __future__ import annotations

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from leads import selectors
from leads.models import Lead, LeadSearch, LeadSearchWord
from leads.services import LeadEmailTaken, lead_create
from tests.factories import make_lead

SEARCH_INDEXES = {  # table: the GIN indexes of migration 0005 (PostgreSQL only)
    LeadSearch: {"lead_search_text_trigrams", "lead_search_text_bigrams"},
    LeadSearchWord: {"lead_search_word_trigrams"},
}
OLD_TRIGRAM_INDEXES = {"lead_search_name", "lead_search_email", "lead_search_company",
                       "lead_search_custom"}


def _index_names(model=Lead) -> set[str]:
    with connection.cursor() as cursor:
        constraints = connection.introspection.get_constraints(cursor, model._meta.db_table)
    return {name for name, info in constraints.items() if info["index"]}


def _plan(sql: str) -> str:
    with connection.cursor() as cursor:
        # A test table is tiny: without these the planner would rather scan it, or read any
        # index and sort a row or two, whatever indexes exist.
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("SET LOCAL enable_sort = off")
        cursor.execute("EXPLAIN " + sql)
        return "\n".join(row[0] for row in cursor.fetchall())


def test_search_indexes_exist_only_on_postgresql(db):
    names = _index_names()
    assert {"lead_created", "lead_updated", "lead_score", "lead_status_created",
            "lead_source_created", "lead_last_active"} <= names
    assert not OLD_TRIGRAM_INDEXES & names
    assert {"lead_search_active", "lead_search_created"} <= _index_names(LeadSearch)
    for model, gin in SEARCH_INDEXES.items():
        found = _index_names(model)
        assert (gin <= found) if connection.vendor == "postgresql" else not gin & found


def test_queries_use_the_indexes(kit):
    for i in range(210):  # enough for a page of "engines" to walk the search rows
        make_lead(kit, name="Ada", company=f"Engines {i}")
    with CaptureQueriesContext(connection) as captured:
        selectors.lead_list(tenant=kit.tenant, livemode=True,
                            filters=selectors.LeadFilters(status="new"))
        selectors.lead_list(tenant=kit.tenant, livemode=True, sort_by="score")
    _, by_status, _, by_score = (q["sql"] for q in captured.captured_queries)
    if connection.vendor != "postgresql":
        return
    assert "Index Only Scan" in _plan(by_status) and "lead_status_created" in _plan(by_status)
    assert "lead_score" in _plan(by_score)
    # Each way of searching must match its index's very expression, or the index would never
    # be used: the words by their trigrams, the search rows by their trigrams or bigrams, and
    # the walk of a page in last-activity order.
    with CaptureQueriesContext(connection) as captured:
        selectors.lead_search(tenant=kit.tenant, livemode=True, q="engines")  # the walk
        selectors.lead_search(tenant=kit.tenant, livemode=True, q="engines", status="new")
        selectors.lead_search(tenant=kit.tenant, livemode=True, q="en")
    statements = [q["sql"] for q in captured.captured_queries
                  if "leads_lead" in q["sql"] or "leads_leadsearchword" in q["sql"]]
    words, walk, trigrams, bigrams = statements
    assert "lead_search_active" in _plan(walk)
    # A test tenant's few rows are cheaper to read through any btree index, even whole, than
    # through a GIN index; a tenant of some size has far more. Without index scans and without
    # the btree indexes that start with the tenant (dropped in the test's transaction, which is
    # rolled back) the plans must take the GIN indexes.
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # no foreign key check pending
        cursor.execute("ALTER TABLE leads_leadsearchword DROP CONSTRAINT lead_search_word_key")
        cursor.execute("DROP INDEX lead_search_active, lead_search_created")
        cursor.execute("SET LOCAL enable_indexscan = off")
    assert "lead_search_word_trigrams" in _plan(words)
    # Each GIN index also answers "this tenant" alone: take the other away first.
    for index, other, statement, condition in (
            ("lead_search_text_trigrams", "lead_search_text_bigrams", trigrams, "text ~~"),
            ("lead_search_text_bigrams", "lead_search_text_trigrams", bigrams, "@>")):
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(f"DROP INDEX {other}")
            plan = _plan(statement)
            transaction.set_rollback(True)
        assert index in plan, plan
        assert any("Index Cond" in line and condition in line for line in plan.splitlines()), plan


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
