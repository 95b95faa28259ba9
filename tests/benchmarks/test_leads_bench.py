"""Leads at a million rows: lists, search and throughput, through the real server over HTTP.

``make bench`` (tests/benchmarks/harness.py): daphne with production settings on PostgreSQL and
Redis, against the bare server (tests/benchmarks/bare_server.py) that runs the service's own SQL
statements for the same path with psycopg and ``json.dumps``; interleaved round by round in one
run. The benchmark database keeps one tenant with 1,000,000 live leads, seeded the first time
(``INSERT ... SELECT generate_series`` with the indexes dropped and rebuilt afterwards, then
``VACUUM ANALYZE``); later runs reuse the rows. Each case also checks that its statement count
is the same at limit 10 and 100. The tables go to docs/performance.md ("Leads").
"""

from __future__ import annotations

import itertools
import json
import time
import uuid
from urllib.parse import urlsplit

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.urls import resolve
from rest_framework.test import APIRequestFactory

from apikeys.models import ApiKey
from apikeys.services import api_key_create
from leads.counts import lead_counts_rebuild
from leads.models import Lead, LeadDailyCount
from leads.search import lead_search_rebuild
from tenants.models import Plan, Tenant
from tests.benchmarks import harness
from tests.benchmarks.harness import Comparison, check, interleave, ms, ratio_cell, rounds_for
from tests.benchmarks.http import Answer, Connection, load

pytestmark = pytest.mark.bench

TENANT_ID = uuid.UUID("00000000-0000-4000-8000-00000000be01")
LEADS = 1_000_000
KEYS = 64  # requests cycle through them: one key would meet its plan's 1,500 a minute

ADJECTIVES = [
    "Blue", "Red", "Green", "Silver", "Golden", "Northern", "Southern", "Rapid", "Quantum",
    "Bright", "Urban", "Prime", "Solid", "Swift", "Noble", "Clear", "Vivid", "Bold", "Lunar",
    "Solar", "Iron", "Cedar", "Maple", "Granite", "Crystal", "Atlas", "Summit", "Harbor",
    "Pacific", "Alpine", "Coastal", "Royal", "Amber", "Velvet", "Electric", "Hidden", "Open",
    "First", "Modern", "Zenith",
]
NOUNS = [
    "Logistics", "Analytics", "Robotics", "Foods", "Textiles", "Energy", "Labs", "Systems",
    "Ventures", "Media", "Health", "Motors", "Capital", "Studios", "Networks", "Farms",
    "Dynamics", "Works", "Partners", "Pharma", "Apparel", "Freight", "Insurance", "Software",
    "Devices", "Brewing", "Outfitters", "Builders", "Clinics", "Academy", "Telecom", "Mining",
    "Aerospace", "Hotels", "Realty", "Kitchens", "Optics", "Marine", "Solutions", "Goods",
]


def _sql_array(words: list[str]) -> str:
    return "(ARRAY[" + ", ".join(f"'{w}'" for w in words) + "])"


# Deterministic, varied data: prime multipliers spread statuses, sources, scores, companies
# and update times; creation times advance a minute per lead (about 694 days).
SEED_SQL = f"""
INSERT INTO leads_lead (id, tenant_id, livemode, email, name, company, title, phone, status,
    score, source, tags, custom_fields, custom_fields_text, last_intent, first_seen_at,
    last_active_at, created_at, updated_at)
SELECT
  md5('bench-lead-' || i)::uuid, %(tenant)s, true,
  'lead' || i || '@' || (ARRAY['example.com','mail.test','corp.test','acme.test'])[1 + i %% 4],
  (ARRAY['Ada','Grace','Alan','Linus','Barbara','Ken','Dennis','Margaret','Edsger','Donald',
         'Frances','Radia','John','Sophie','Tim','Anita','Guido','Bjarne','Hedy','Katherine'])
      [1 + i %% 20] || ' ' ||
  (ARRAY['Lovelace','Hopper','Turing','Torvalds','Liskov','Thompson','Ritchie','Hamilton',
         'Dijkstra','Knuth','Allen','Perlman','McCarthy','Wilson','Berners-Lee','Borg','Rossum',
         'Stroustrup','Lamarr','Johnson'])[1 + (i / 20) %% 20],
  {_sql_array(ADJECTIVES)}[1 + (i * 7919) %% 40] || ' ' ||
  {_sql_array(NOUNS)}[1 + ((i * 104729) / 40) %% 40] || ' ' ||
  (ARRAY['Inc','Ltd','GmbH','LLC','SA'])[1 + (i / 3) %% 5] || ' ' || ((i * 31) %% 500),
  '', '',
  (ARRAY['new','new','new','new','new','new','qualifying','qualifying','qualified','qualified',
         'qualified','booked','contacted','contacted','nurturing','converted','lost','lost',
         'lost','new'])[1 + (i * 7) %% 20],
  (i * 37) %% 101,
  (ARRAY['chat','chat','chat','chat','chat','api','api','import','import','form'])
      [1 + (i * 3) %% 10],
  '[]'::jsonb,
  jsonb_build_object('industry', (ARRAY['retail','banking','saas','health','manufacturing',
                                        'education','media','logistics'])[1 + i %% 8]),
  (ARRAY['retail','banking','saas','health','manufacturing','education','media',
         'logistics'])[1 + i %% 8],
  '',
  created, created + ((i * 7907) %% 100000) * interval '1 minute',
  created, created + ((i * 7907) %% 100000) * interval '1 minute'
FROM (
  SELECT i, timestamptz '2024-01-01 00:00:00+00' + i * interval '1 minute'
            + ((i * 7919) %% 60) * interval '1 second' AS created
  FROM generate_series(1::bigint, {LEADS}::bigint) AS i
) AS s
"""




def _seed(tenant: Tenant) -> float:
    started = time.perf_counter()
    # One transaction: a failed load leaves the schema (its indexes) as it was.
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("DELETE FROM leads_leaddailycount WHERE tenant_id = %s", [tenant.pk])
        cursor.execute("DELETE FROM leads_leadsearchword WHERE tenant_id = %s", [tenant.pk])
        cursor.execute("DELETE FROM leads_leadsearch WHERE tenant_id = %s", [tenant.pk])
        cursor.execute("DELETE FROM leads_lead WHERE tenant_id = %s", [tenant.pk])
        # Loading into bare heap and building each index once is far faster than maintaining
        # thirteen indexes row by row (the search tables' too, leads.search).
        cursor.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE tablename IN ('leads_lead', "
            "'leads_leadsearch', 'leads_leadsearchword') AND indexname NOT LIKE '%%_pkey' "
            "AND indexname <> 'lead_search_word_key'"
        )
        indexes = cursor.fetchall()
        for name, _ in indexes:
            cursor.execute(f'DROP INDEX "{name}"')
        # Check the foreign keys row by row now: deferred checks pending at commit would forbid
        # CREATE INDEX in this transaction.
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        cursor.execute(SEED_SQL, {"tenant": tenant.pk})
        lead_search_rebuild(tenant_id=tenant.pk, livemode=True)
        cursor.execute("SET maintenance_work_mem = '512MB'")
        for _, definition in indexes:
            cursor.execute(definition)
        cursor.execute("RESET maintenance_work_mem")
        lead_counts_rebuild(tenant_id=tenant.pk, livemode=True)
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE leads_lead")
        cursor.execute("VACUUM ANALYZE leads_leaddailycount")
        cursor.execute("VACUUM ANALYZE leads_leadsearch")
        cursor.execute("VACUUM ANALYZE leads_leadsearchword")
    return time.perf_counter() - started


@pytest.fixture(scope="session")
def django_db_setup(bench_database):
    return bench_database


@pytest.fixture(scope="module")
def bench(django_db_setup, django_db_blocker, service_server, bare_server):
    """The seeded tenant, keys for it, and connections to both servers."""
    with django_db_blocker.unblock():
        connection.set_autocommit(True)
        tenant, _ = Tenant.objects.get_or_create(
            pk=TENANT_ID, defaults={"name": "Benchmark", "plan": Plan.ENTERPRISE})
        counted = sum(LeadDailyCount.objects.filter(tenant=tenant, livemode=True)
                      .values_list("count", flat=True))
        if counted != LEADS or Lead.objects.filter(tenant=tenant).count() != LEADS:
            print(f"\nSeeded {LEADS:,} leads in {_seed(tenant):.0f} s")
        ApiKey.objects.filter(tenant=tenant, name="benchmark").delete()
        keys = [api_key_create(tenant=tenant, name="benchmark", scope="read", livemode=True)[1]
                for _ in range(KEYS)]
        yield Bench(service_server, bare_server, keys)


class Bench:
    def __init__(self, service_url: str, bare, keys: list[str]):
        self.service_url = service_url
        self.bare = bare
        self.headers = [{**harness.PROXY_HEADERS, "Authorization": f"Bearer {key}"}
                        for key in keys]
        self._next_headers = itertools.cycle(self.headers)
        self.service = Connection(service_url)
        self.bare_connection = Connection(bare.url)
        self.factory = APIRequestFactory()
        self.registered: set[str] = set()

    def get(self, path: str) -> Answer:
        answer = self.service.request("GET", path, headers=next(self._next_headers))
        assert answer.status == 200, answer.body[:500]
        return answer

    def json(self, path: str) -> dict:
        return json.loads(self.get(path).body)

    def bare_get(self, path: str) -> Answer:
        if path not in self.registered:
            self.bare.register(path, self.statements(path))
            self.registered.add(path)
        answer = self.bare_connection.request("GET", path)
        assert answer.status == 200, answer.body[:500]
        return answer

    def call_view(self, path: str) -> None:
        """The resolved DRF view called in this process, to capture its statements."""
        match = resolve(urlsplit(path).path)
        request = self.factory.get(path, secure=True,
                                   HTTP_AUTHORIZATION=self.headers[0]["Authorization"])
        response = match.func(request, **match.kwargs)
        response.render()
        assert response.status_code == 200, response.content[:500]

    def statements(self, path: str) -> list[str]:
        """The SQL the endpoint runs, as sent to the server (parameters bound)."""
        self.call_view(path)  # the key's last-use stamp is written at most once a minute
        with CaptureQueriesContext(connection) as captured:
            self.call_view(path)
        return [query["sql"] for query in captured.captured_queries]

    def compare(self, path: str) -> Comparison:
        def ours() -> float:
            return self.get(path).seconds * 1000

        def theirs() -> float:
            return self.bare_get(path).seconds * 1000

        theirs()
        return interleave(ours, theirs, rounds=rounds_for(ours, budget_seconds=12))


LATENCY = harness.table("leads", [
    "Case", "Statements", "Service median / p95 / p99 ms", "Bare median / p95 / p99 ms",
    "Ratio of medians (IQR of rounds)", "Ratio of p95"])


def _case(bench: Bench, label: str, path: str) -> Comparison:
    small = bench.statements(path.replace("limit=100", "limit=10"))
    statements = bench.statements(path)
    assert len(small) == len(statements), (label, small, statements)
    result = bench.compare(path)
    LATENCY.rows.append([
        label, str(len(statements)),
        " / ".join(ms(x) for x in (result.service.median, result.service.p95, result.service.p99)),
        " / ".join(ms(x) for x in (result.baseline.median, result.baseline.p95,
                                   result.baseline.p99)),
        ratio_cell(result), f"{result.p95_ratio:.2f}"])
    return result


def _deep_page(bench: Bench, path: str) -> str:
    """The same list at its middle page (page 5,000 of the unfiltered list)."""
    total_pages = bench.json(path)["pagination"]["totalPages"]
    return f"{path}&page={max(1, total_pages // 2)}"


LIST_CASES = [
    ("default (createdAt desc)", "/api/v1/leads?limit=100"),
    ("sortOrder=asc", "/api/v1/leads?limit=100&sortOrder=asc"),
    ("sortBy=updatedAt", "/api/v1/leads?limit=100&sortBy=updatedAt"),
    ("sortBy=score", "/api/v1/leads?limit=100&sortBy=score"),
    ("status=qualified", "/api/v1/leads?limit=100&status=qualified"),
    ("status=converted", "/api/v1/leads?limit=100&status=converted"),
    ("source=form", "/api/v1/leads?limit=100&source=form"),
    ("createdAfter..createdBefore (1 year)",
     "/api/v1/leads?limit=100&createdAfter=2024-06-01&createdBefore=2025-05-31"),
    ("status=qualified&sortBy=score",
     "/api/v1/leads?limit=100&status=qualified&sortBy=score"),
]

# The lists the issue holds to an aim: <= 1.6x bare at the median, <= 2x at p95.
AIMED = {"default (createdAt desc)", "status=qualified&sortBy=score", "legacy"}

# Match counts checked against SEED_SQL's million leads.
SEARCH_CASES = [
    ("company substring (625 matches)", "/api/v1/leads/search?limit=100&q=Lunar%20Robotics"),
    ("email substring (11 matches)", "/api/v1/leads/search?limit=100&q=lead12345"),
    ("company word (25,000 matches)", "/api/v1/leads/search?limit=100&q=Robotics"),
    ("legacy company word (25,000 matches)", "/api/leads?limit=100&q=Robotics"),
    ("company substring, page 5 (625 matches)",
     "/api/v1/leads/search?limit=100&q=Lunar%20Robotics&page=5"),
    ("2 characters, no trigram (0 matches)", "/api/v1/leads/search?limit=100&q=zq"),
]
# The wide and two-character searches: < 50 ms at the median on a quiet machine.
SEARCH_AIM_MS = 50.0
SEARCH_AIMED = {"company word (25,000 matches)", "legacy company word (25,000 matches)",
                "2 characters, no trigram (0 matches)"}


def _list_aims(label: str, result: Comparison) -> None:
    check("leads", f"lead list {label}, page 1: median vs bare", result.ratio, 1.6)
    check("leads", f"lead list {label}, page 1: p95 vs bare", result.p95_ratio, 2.0)


def test_floor(bench):
    """The fixed cost of any request: the smallest authenticated endpoint there is."""
    _case(bench, "floor: GET /api/v1/users?limit=1 (no users)", "/api/v1/users?limit=1")


@pytest.mark.parametrize("label, path", LIST_CASES, ids=[c[0] for c in LIST_CASES])
def test_list_first_page(bench, label, path):
    assert bench.json(path)["pagination"]["total"] > 0
    result = _case(bench, f"list {label}, page 1", path)
    if label in AIMED:
        _list_aims(label, result)


def test_legacy_list_first_page(bench):
    path = "/api/leads?limit=100"
    assert bench.json(path)["pagination"]["total"] == LEADS
    _list_aims("legacy", _case(bench, "legacy list, page 1", path))


@pytest.mark.parametrize("label, path", LIST_CASES, ids=[c[0] for c in LIST_CASES])
def test_list_deep_page(bench, label, path):
    deep = _deep_page(bench, path)
    assert len(bench.json(deep)["data"]) == 100
    _case(bench, f"list {label}, page {deep.rsplit('=', 1)[1]}", deep)


@pytest.mark.parametrize("label, path", SEARCH_CASES, ids=[c[0] for c in SEARCH_CASES])
def test_search(bench, label, path):
    result = _case(bench, f"search {label}", path)
    if label in SEARCH_AIMED:
        check("leads", f"search {label}: median", result.service.median, SEARCH_AIM_MS,
              unit=" ms")


THROUGHPUT = harness.table("leads-throughput", [
    "Concurrency", "Service req/s (median of rounds)", "Bare req/s", "Ratio (IQR of rounds)",
    "Service p50 / p99 ms", "Bare p50 / p99 ms"])


@pytest.mark.parametrize("concurrency", [1, 8, 32])
def test_throughput(bench, concurrency):
    """One daphne process against the bare server on the first page of the lead list, rounds
    of two seconds each, interleaved."""
    path = "/api/v1/leads?limit=100"
    bench.bare_get(path)
    service_paths = [(path, headers) for headers in bench.headers]
    bare_paths = [(path, {})]
    service_latencies: list[float] = []
    bare_latencies: list[float] = []

    def ours() -> float:
        measured = load(bench.service_url, service_paths, concurrency=concurrency, seconds=2)
        assert measured.errors == 0
        service_latencies.extend(measured.latencies)
        return measured.rate

    def theirs() -> float:
        measured = load(bench.bare.url, bare_paths, concurrency=concurrency, seconds=2)
        assert measured.errors == 0
        bare_latencies.extend(measured.latencies)
        return measured.rate

    result = interleave(ours, theirs, rounds=6, warmup=1)
    service_latencies.sort()
    bare_latencies.sort()
    THROUGHPUT.rows.append([
        str(concurrency), f"{result.service.median:,.0f}", f"{result.baseline.median:,.0f}",
        ratio_cell(result),
        f"{harness.percentile(service_latencies, 0.5):.1f} / "
        f"{harness.percentile(service_latencies, 0.99):.1f}",
        f"{harness.percentile(bare_latencies, 0.5):.1f} / "
        f"{harness.percentile(bare_latencies, 0.99):.1f}"])
    if concurrency > 1:
        check("leads", f"lead list throughput at concurrency {concurrency} vs bare",
              result.ratio, 0.5, at_most=False)
