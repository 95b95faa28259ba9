"""The hottest statements are prepared once per connection (core.sql.prepared_cursor): the API
key's lookup with its value bound by the server, a page of leads with its values written in, so
that each tenant's page is planned for that tenant. Django's own statements are never prepared.
"""

from __future__ import annotations

import pytest
from django.db import connection

from tests.conftest import body
from tests.factories import make_lead, make_tenant

postgresql_only = pytest.mark.skipif(
    connection.vendor != "postgresql",
    reason="PostgreSQL's prepared statements (CI runs the suite on PostgreSQL too)")


def _prepared() -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements WHERE NOT from_sql")
        return [row[0] for row in cursor.fetchall()]


def test_answers_are_the_same_before_and_after_preparation(api, kit):
    for n in range(3):
        make_lead(kit, email=f"p{n}@example.com")
    answers = [api.get("/api/v1/leads?limit=2", headers=kit.auth("read")) for _ in range(3)]
    assert [r.status_code for r in answers] == [200, 200, 200]
    assert body(answers[0]) == body(answers[1]) == body(answers[2])
    assert [lead["email"] for lead in body(answers[0])["data"]] == [
        "p2@example.com", "p1@example.com"]
    legacy = [api.get("/api/leads", headers=kit.auth("read")) for _ in range(2)]
    assert body(legacy[0]) == body(legacy[1]) and len(body(legacy[0])["leads"]) == 3


@postgresql_only
def test_one_prepared_lookup_serves_every_key(api, kit, stranger):
    for tenant_kit in (kit, stranger, kit, stranger):
        assert api.get("/api/v1/leads", headers=tenant_kit.auth("read")).status_code == 200
    lookups = [sql for sql in _prepared() if "apikeys_apikey" in sql]
    assert len(lookups) == 1 and '"hashed_key" = $1' in lookups[0]


@postgresql_only
def test_each_tenant_s_page_is_planned_with_its_own_values(api, kit, stranger):
    make_lead(kit, email="a@example.com")
    make_lead(stranger, email="b@example.com")
    for tenant_kit in (kit, kit, stranger, stranger):
        assert api.get("/api/v1/leads", headers=tenant_kit.auth("read")).status_code == 200
    pages = [sql for sql in _prepared() if sql.startswith('SELECT "id" AS "id"')]
    assert len(pages) == 2
    assert all("$" not in sql for sql in pages)  # no value is left to a generic plan
    assert any(kit.tenant.pk.hex in sql.replace("-", "") for sql in pages)
    assert any(stranger.tenant.pk.hex in sql.replace("-", "") for sql in pages)


@postgresql_only
def test_a_page_asked_for_once_is_not_prepared(api, kit):
    for n in range(3):
        make_lead(kit, email=f"once{n}@example.com")
    for page in range(1, 4):
        r = api.get(f"/api/v1/leads?limit=1&page={page}", headers=kit.auth("read"))
        assert r.status_code == 200 and len(body(r)["data"]) == 1
    assert not [sql for sql in _prepared() if sql.startswith('SELECT "id" AS "id"')]


@postgresql_only
def test_django_s_statements_are_not_prepared(api, kit):
    for _ in range(3):
        assert api.get("/api/v1/users", headers=kit.auth("read")).status_code == 200
    assert not [sql for sql in _prepared() if "tenants_user" in sql]


@postgresql_only
@pytest.mark.django_db(transaction=True)
def test_the_search_walk_s_planner_settings_end_with_it(api):
    """Outside a transaction the walk commits (a rollback would forget the prepared statements),
    and its settings, local to its transaction, end there all the same."""
    big = make_tenant("Walk Co")
    for n in range(30):
        make_lead(big, email=f"robot{n}@example.com", company="Robotics Works")
    r = api.get("/api/v1/leads/search?q=robot", headers=big.auth("read"))
    assert r.status_code == 200 and body(r)["pagination"]["total"] == 30
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_setting('enable_seqscan'), "
                       "current_setting('enable_bitmapscan')")
        assert cursor.fetchone() == ("on", "on")


def test_captured_statements_carry_their_values(api, kit):
    """What query counts, tests and the benchmarks' bare baseline capture is each statement as
    it ran, values written in, prepared or not."""
    from django.test.utils import CaptureQueriesContext

    make_lead(kit, email="seen@example.com")
    api.get("/api/v1/leads", headers=kit.auth("read"))  # the key's last use, stamped once
    with CaptureQueriesContext(connection) as captured:
        assert api.get("/api/v1/leads", headers=kit.auth("read")).status_code == 200
    statements = [query["sql"] for query in captured.captured_queries]
    assert len(statements) == 3 and all(statements)
    assert not any("%s" in sql or "$1" in sql for sql in statements)
    assert kit.key_rows["live"]["read"].hashed_key in statements[0]


@pytest.mark.parametrize("q", ["100%", "o'brien", "a_b", "%s", "$1", "x\\y"])
def test_values_written_in_are_quoted_before_and_after_preparation(api, kit, q):
    """A search term is written into its statement's text: quotes, placeholders and LIKE's
    wildcards in it stay the visitor's characters, on the first run and the prepared ones."""
    make_lead(kit, email="obrien@example.com", name="O'Brien 100% a_b %s $1 x\\y")
    make_lead(kit, email="other@example.com", name="Someone Else")
    for _ in range(3):
        r = api.get("/api/v1/leads/search", params={"q": q}, headers=kit.auth("read"))
        assert r.status_code == 200, r.content
        assert [lead["email"] for lead in body(r)["data"]] == ["obrien@example.com"], q
