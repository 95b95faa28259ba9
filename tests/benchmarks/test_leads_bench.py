"""Leads at a million rows: list and search, measured in-process through the ASGI app.

Run with ``make bench`` against a PostgreSQL database whose name ends in ``_bench``::

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/salesagent_leads_bench \\
    SECRET_KEY=bench ALLOWED_HOSTS=testserver make bench

The benchmark uses that database as it is (no test database): it migrates it, and seeds one
tenant with 1,000,000 live leads the first time (``INSERT ... SELECT generate_series`` with the
indexes dropped and rebuilt afterwards, then ``VACUUM ANALYZE``); later runs reuse the rows.
Each case reports the median and p95 of the endpoint, its query count (the same at limit 10 and
100), and the ratio to a bare function that runs the same SQL statements on a plain psycopg
connection and ``json.dumps`` the rows. The figures go to docs/performance.md ("Leads").
"""

from __future__ import annotations

import json
import os
import statistics
import time
import uuid
from collections.abc import Callable
from urllib.parse import urlsplit

import psycopg
import pytest
from django.conf import settings
from django.core.management import call_command
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.urls import resolve
from rest_framework.test import APIRequestFactory

from apikeys.services import api_key_create
from leads.counts import lead_counts_rebuild
from leads.models import Lead, LeadDailyCount
from leads.search import lead_search_rebuild
from tenants.models import Plan, Tenant
from tests.live import ensure_database
from tests.loop_client import LoopClient

pytestmark = pytest.mark.bench

TENANT_ID = uuid.UUID("00000000-0000-4000-8000-00000000be01")
LEADS = 1_000_000
RUNS = 100  # a shared virtual machine: medians of fewer rounds move by 20 % from run to run
WARMUP = 3

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


def _is_postgres() -> bool:
    return settings.DATABASES["default"]["ENGINE"].endswith("postgresql")


@pytest.fixture(scope="session")
def django_db_setup():
    """Use DATABASE_URL's database itself, so the million rows survive between runs."""
    if not _is_postgres():
        pytest.skip("The leads benchmark needs PostgreSQL: set DATABASE_URL to a *_bench "
                    "PostgreSQL database.")
    name = settings.DATABASES["default"]["NAME"]
    if not name.endswith("_bench"):
        pytest.skip(f"Refusing to seed {name!r}: the benchmark database's name must end in "
                    "_bench.")
    ensure_database(name)  # on first use


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


@pytest.fixture(scope="module")
def bench(django_db_setup, django_db_blocker):
    """The seeded tenant, a read key for it, and a ``measure`` function."""
    with django_db_blocker.unblock():
        connection.set_autocommit(True)
        call_command("migrate", verbosity=0)
        tenant, _ = Tenant.objects.get_or_create(
            pk=TENANT_ID, defaults={"name": "Benchmark", "plan": Plan.ENTERPRISE})
        counted = sum(LeadDailyCount.objects.filter(tenant=tenant, livemode=True)
                      .values_list("count", flat=True))
        seeded = None
        if counted != LEADS or Lead.objects.filter(tenant=tenant).count() != LEADS:
            seeded = _seed(tenant)
        _, raw_key = api_key_create(tenant=tenant, name="benchmark", scope="read",
                                    livemode=True)
        dsn = settings.DATABASE_URL
        with psycopg.connect(dsn, autocommit=True) as bare_connection, LoopClient() as client:
            yield Bench(client, {"Authorization": f"Bearer {raw_key}"}, bare_connection,
                        seeded)


class Bench:
    def __init__(self, api, headers: dict[str, str], bare_connection, seeded: float | None):
        self.api = api
        self.headers = headers
        self.bare_connection = bare_connection
        self.seeded = seeded
        self.factory = APIRequestFactory()

    def get(self, path: str) -> dict:
        """Through the ASGI application, every middleware included, as daphne runs it: one
        long-lived event loop, the sync view on a thread of its own per request."""
        return self.timed_get(path)[0]

    def timed_get(self, path: str) -> tuple[dict, float]:
        """The ASGI application called as daphne calls it, and the call's duration
        (``LoopClient.timed``)."""
        status, body, seconds = self.api.timed("GET", path, headers=self.headers)
        assert status == 200, body
        return json.loads(body), seconds

    def call_view(self, path: str) -> bytes:
        """The resolved DRF view called directly: authentication, scoping, selectors,
        presenters and rendering, without the ASGI server and the middleware."""
        match = resolve(urlsplit(path).path)
        request = self.factory.get(path, secure=True,
                                   HTTP_AUTHORIZATION=self.headers["Authorization"])
        response = match.func(request, **match.kwargs)
        response.render()
        assert response.status_code == 200
        return response.content

    def statements(self, path: str) -> list[str]:
        """The SQL the endpoint runs, as sent to the server (parameters bound). Captured from
        the view called on this thread (the ASGI path runs the same view on another thread,
        with a connection of its own)."""
        self.call_view(path)  # the key's last-use stamp is written at most once a minute
        with CaptureQueriesContext(connection) as captured:
            self.call_view(path)
        return [query["sql"] for query in captured.captured_queries]

    def bare(self, statements: list[str]) -> Callable[[], str]:
        # The statements include the BEGIN and COMMIT around a SET LOCAL (short search terms):
        # the autocommit connection runs them as they come.
        def run() -> str:
            out = []
            with self.bare_connection.cursor() as cursor:
                for sql in statements:
                    cursor.execute(sql)
                    if cursor.description is None:
                        continue
                    columns = [column.name for column in cursor.description]
                    out.append([dict(zip(columns, row, strict=True))
                                for row in cursor.fetchall()])
            return json.dumps(out, default=str)

        return run


def _timed(function: Callable[[], object]) -> Callable[[], float]:
    def run() -> float:
        started = time.perf_counter()
        function()
        return time.perf_counter() - started

    return run


def _timings(*functions: Callable[[], float]) -> tuple[list[list[float]], list[list[float]]]:
    """Wall-clock and CPU samples (ms) of each function, taken in turns so that all see the
    same machine load. Each function returns its own duration in seconds (the ASGI requests
    are timed on the event loop). CPU time is this process's (every thread: the ASGI app runs
    here); it leaves out the database server and any wait for a CPU, so it shows the
    application's own cost even on a busy machine."""
    started = time.perf_counter()
    for function in functions:
        function()
    # Slow cases (seconds) get fewer runs, so that the whole benchmark stays in minutes.
    runs = RUNS if time.perf_counter() - started < 0.5 else 5
    for _ in range(WARMUP - 1):
        for function in functions:
            function()
    wall: list[list[float]] = [[] for _ in functions]
    cpu: list[list[float]] = [[] for _ in functions]
    for _ in range(runs):
        for index, function in enumerate(functions):
            started_cpu = time.process_time()
            wall[index].append(function() * 1000)
            cpu[index].append((time.process_time() - started_cpu) * 1000)
    return wall, cpu


def _p95(samples: list[float]) -> float:
    return statistics.quantiles(samples, n=20, method="inclusive")[-1]


RESULTS: list[dict] = []


def _case(bench: Bench, label: str, path: str) -> dict:
    small = bench.statements(path.replace("limit=100", "limit=10"))
    statements = bench.statements(path)
    assert len(small) == len(statements), (label, small, statements)
    (asgi, view, bare), (asgi_cpu, _, bare_cpu) = _timings(
        lambda: bench.timed_get(path)[1], _timed(lambda: bench.call_view(path)),
        _timed(bench.bare(statements)))
    bare_median = statistics.median(bare)
    result = {
        "case": label, "path": path, "queries": len(statements),
        "median": statistics.median(asgi), "p95": _p95(asgi),
        "view_median": statistics.median(view), "view_p95": _p95(view),
        "bare_median": bare_median,
        "ratio": statistics.median(asgi) / bare_median,
        "view_ratio": statistics.median(view) / bare_median,
        "cpu": statistics.median(asgi_cpu), "bare_cpu": statistics.median(bare_cpu),
    }
    RESULTS.append(result)
    return result


def _deep_page(bench: Bench, path: str) -> str:
    """The same list at its middle page (page 5,000 of the unfiltered list)."""
    total_pages = bench.get(path)["pagination"]["totalPages"]
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


def test_baseline(bench):
    """The fixed cost of any request: the smallest authenticated endpoint there is."""
    _case(bench, "baseline: GET /api/v1/users?limit=1 (no users)", "/api/v1/users?limit=1")


@pytest.mark.parametrize("label, path", LIST_CASES, ids=[c[0] for c in LIST_CASES])
def test_list_first_page(bench, label, path):
    assert bench.get(path)["pagination"]["total"] > 0
    _case(bench, f"list {label}, page 1", path)


@pytest.mark.parametrize("label, path", LIST_CASES, ids=[c[0] for c in LIST_CASES])
def test_list_deep_page(bench, label, path):
    deep = _deep_page(bench, path)
    assert len(bench.get(deep)["data"]) == 100
    _case(bench, f"list {label}, page {deep.rsplit('=', 1)[1]}", deep)


@pytest.mark.parametrize("label, path", SEARCH_CASES, ids=[c[0] for c in SEARCH_CASES])
def test_search(bench, label, path):
    _case(bench, f"search {label}", path)


def test_report(bench):
    """Prints the table for docs/performance.md."""
    if bench.seeded is not None:
        print(f"\nSeeded {LEADS:,} leads in {bench.seeded:.0f} s")
    print(f"\nLoad average at the end: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    print("\n| Case | Queries | ASGI median / p95 ms | View median / p95 ms | Bare median ms "
          "| Ratio ASGI / view | CPU ms ASGI / bare |")
    print("|---|---|---|---|---|---|---|")
    for r in RESULTS:
        print(f"| {r['case']} | {r['queries']} | {r['median']:.1f} / {r['p95']:.1f} | "
              f"{r['view_median']:.1f} / {r['view_p95']:.1f} | {r['bare_median']:.1f} | "
              f"{r['ratio']:.2f} / {r['view_ratio']:.2f} | {r['cpu']:.1f} / "
              f"{r['bare_cpu']:.1f} |")
    assert RESULTS
