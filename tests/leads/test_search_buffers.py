"""What a search reads, held by its buffer count: the statements the endpoint runs, under
``EXPLAIN (ANALYZE, BUFFERS)``, must stay under bounds the old plan (trigram indexes on the lead
table, blind to the tenant) exceeds many times over. A regression of the plan fails here without
a stopwatch.

PostgreSQL only (the plans and the GIN indexes are PostgreSQL's); CI runs the suite on
PostgreSQL too. The figures of the old plan on this data are in docs/performance.md, "Search".
"""

from __future__ import annotations

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from leads.counts import lead_counts_rebuild
from leads.search import lead_search_rebuild
from tests.factories import make_tenant

pytestmark = pytest.mark.skipif(connection.vendor != "postgresql",
                                reason="PostgreSQL only: EXPLAIN (BUFFERS) (CI runs it)")

BIG, SMALL = 30_000, 600  # leads of the two tenants; a quarter of each have "Robotics"

SEED = """
INSERT INTO leads_lead (id, tenant_id, livemode, email, name, company, title, phone, status,
    score, source, tags, custom_fields, custom_fields_text, last_intent, first_seen_at,
    last_active_at, created_at, updated_at)
SELECT md5(%(tag)s || i)::uuid, %(tenant)s, true, %(tag)s || i || '@example.com',
    'Person ' || i,
    CASE WHEN i %% 4 = 0 THEN 'Robotics Works ' ELSE 'Solar Farms ' END || i, '', '',
    'new', 0, 'api', '[]', '{}', '', '', t, t, t, t
FROM (SELECT i, timestamptz '2026-01-01 00:00:00+00' + i * interval '1 minute' AS t
      FROM generate_series(%(first)s::int, %(last)s::int) AS i) AS s
"""


def _seed(tenant, tag: str, first: int, last: int) -> None:
    """Leads written around the services, then the search rows and counts rebuilt from them,
    as a bulk load does (docs/leads.md)."""
    with connection.cursor() as cursor:
        cursor.execute(SEED, {"tag": tag, "tenant": tenant.pk, "first": first, "last": last})
    lead_counts_rebuild(tenant_id=tenant.pk, livemode=True)
    lead_search_rebuild(tenant_id=tenant.pk, livemode=True)
    with connection.cursor() as cursor:
        for table in ("leads_lead", "leads_leadsearch", "leads_leadsearchword"):
            cursor.execute(f"ANALYZE {table}")


@pytest.fixture
def tenants(db):
    big, small = make_tenant("Big Co"), make_tenant("Small Co")
    _seed(big.tenant, "big", 1, BIG)
    _seed(small.tenant, "small", 1, SMALL)
    return big, small


def _buffers(api, kit, path: str) -> tuple[int, dict]:
    """Shared buffers (hit + read) of every statement the request runs, and its body."""
    with CaptureQueriesContext(connection) as captured:
        r = api.get(path, headers=kit.auth("read"))
    assert r.status_code == 200, r.content
    statements = [q["sql"] for q in captured.captured_queries]
    total = 0
    with transaction.atomic(), connection.cursor() as cursor:
        for sql in statements[1:]:  # the first is the API key's
            if "set_config" in sql:
                cursor.execute(sql)  # the planner settings of the walk, rolled back below
            elif sql.lstrip().upper().startswith(("SELECT", "WITH")):
                cursor.execute("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + sql)
                plan = cursor.fetchone()[0][0]["Plan"]
                total += plan.get("Shared Hit Blocks", 0) + plan.get("Shared Read Blocks", 0)
        transaction.set_rollback(True)
    return total, r.json()


def test_a_wide_search_reads_its_page_not_its_matches(api, tenants):
    """7,500 of the big tenant's 30,000 leads match. The old plan rechecked every match on its
    lead row: 850 buffers on this data. Now the word counts give the total and the page walks
    the search rows in order (about 100 buffers on v1, 180 on legacy's 50 rows)."""
    big, _ = tenants
    buffers, body = _buffers(api, big, "/api/v1/leads/search?q=robotics")
    assert body["pagination"]["total"] == BIG // 4
    assert len(body["data"]) == 25
    assert buffers < 200, buffers
    legacy, body = _buffers(api, big, "/api/leads?q=robotics")
    assert body["pagination"]["total"] == BIG // 4
    assert legacy < 300, legacy


def test_a_two_character_search_reads_its_matches_only(api, tenants):
    """No lead has "zq": the old plan read every lead of the tenant (706 buffers here); the
    bigram index answers in a few pages."""
    big, _ = tenants
    buffers, body = _buffers(api, big, "/api/v1/leads/search?q=zq")
    assert body["pagination"]["total"] == 0
    assert buffers < 30, buffers


def test_a_small_tenants_search_does_not_pay_for_another_tenants_matches(api, tenants):
    """The search indexes start with the tenant: the small tenant's search reads about the same
    whether the big tenant has 7,500 or 17,500 leads with the term (its GIN trees grow a little
    deeper: 126 buffers became 151 with the status filter). The old indexes knew no tenant and
    every other tenant's match was rechecked on its row: 102-149 buffers became 673."""
    big, small = tenants
    paths = ["/api/v1/leads/search?q=robotics&status=new",  # the filter: collected matches
             "/api/v1/leads/search?q=works%20",  # two words: collected matches
             "/api/v1/leads/search?q=ks"]  # no trigram: the bigram index
    before = [_buffers(api, small, path) for path in paths]
    _seed(big.tenant, "more", 1, 40_000)
    after = [_buffers(api, small, path) for path in paths]
    for path, (was, first), (now, then) in zip(paths, before, after, strict=True):
        assert first["pagination"]["total"] == then["pagination"]["total"] == SMALL // 4, path
        assert was < 250, (path, was)
        assert now <= was + 40, (path, was, now)
