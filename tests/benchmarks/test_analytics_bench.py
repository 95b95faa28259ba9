"""Analytics at scale (``make bench``, PostgreSQL only; skipped elsewhere).

One tenant with 1,000,000 leads, 1,000,000 conversations and 10,000,000 messages, spread over
the last 400 days, plus the events and meetings that date the funnel stages. The data is
generated inside PostgreSQL (``INSERT ... SELECT generate_series``) into a persistent database,
the configured one with ``_bench`` appended (``salesagent`` -> ``salesagent_bench``), so later
runs reuse it. The rollups are then built by ``analytics.rebuild.rollups_rebuild`` from those raw
rows, as an operator would after a bulk load.

Measured through the real server over HTTP (tests/benchmarks/harness.py): the v1 overview over
365 days at month granularity compared with the previous period, against its baseline, the same
figures computed live by GROUP BY over the raw tables (leads, conversations, and the response
times from the messages' window) on the bare server, interleaved round by round; and the v1
funnel and the daily overview on their own. Figures: docs/performance.md ("Analytics").
"""

from __future__ import annotations

import json
import time
from datetime import date, timedelta

import pytest
from django.db import connection, transaction
from django.utils import timezone

from analytics.models import ChannelDailyStat
from analytics.rebuild import rollups_rebuild
from apikeys.services import api_key_create
from leads.counts import lead_counts_rebuild
from tenants.models import Tenant
from tenants.services import tenant_create
from tests.benchmarks import harness
from tests.benchmarks.harness import check, interleave, ms, ratio_cell
from tests.benchmarks.http import Connection

pytestmark = pytest.mark.bench

LEADS = 1_000_000
CONVERSATIONS = 1_000_000
MESSAGES_PER_CONVERSATION = 10
DAYS = 400
TENANT_NAME = "Analytics benchmark"
ROUNDS = 30
AIM_MS = 300  # p95 of every analytics request
LIVE_SPEEDUP = 20  # the rollups answer the overview at least this many times faster than live

_BIG_TABLES = ("leads_lead", "conversations_conversation", "conversations_message",
               "core_event", "conversations_meeting")


def _log(message: str) -> None:
    print(f"[analytics bench {time.strftime('%H:%M:%S')}] {message}", flush=True)


@pytest.fixture(scope="session")
def django_db_setup(bench_database, django_db_blocker):
    with django_db_blocker.unblock():
        _load_once()
    return bench_database


def _load_once() -> None:
    if ChannelDailyStat.objects.filter(tenant__name=TENANT_NAME).exists():
        _log("reusing the data loaded by an earlier run")
        return
    started = time.monotonic()
    # One transaction: a load that fails (or is interrupted) leaves nothing behind, not even
    # the dropped indexes, and the next run starts again.
    with transaction.atomic():
        tenant, _ = tenant_create(name=TENANT_NAME, plan="enterprise")
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL maintenance_work_mem = '1GB'")
            cursor.execute("SET LOCAL work_mem = '256MB'")
            cursor.execute("SET LOCAL synchronous_commit = off")
            dropped = _drop_indexes(cursor)
            _generate(cursor, tenant.pk)
            _log(f"raw rows inserted in {time.monotonic() - started:.0f} s; rebuilding indexes")
            for statement in dropped:
                cursor.execute(statement)
            cursor.execute("ANALYZE")
        _log(f"indexes rebuilt at {time.monotonic() - started:.0f} s; building the rollups")
        lead_counts_rebuild(tenant_id=tenant.pk, livemode=True)
        rollups_rebuild(tenant_id=tenant.pk, livemode=True)
        _log(f"rollups built at {time.monotonic() - started:.0f} s")
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    _log(f"data ready in {time.monotonic() - started:.0f} s")


def _drop_indexes(cursor) -> list[str]:
    """Drops the foreign keys, unique constraints and secondary indexes of the big tables (one
    bulk build and one validating join afterwards are much faster than maintaining them row
    by row); returns the statements that recreate them, foreign keys last."""
    cursor.execute(
        "SELECT c.conrelid::regclass::text, c.conname, c.contype, pg_get_constraintdef(c.oid) "
        "FROM pg_constraint c WHERE c.conrelid::regclass::text = ANY(%s) AND c.contype IN ('f', 'u')",
        [list(_BIG_TABLES)])
    constraints = cursor.fetchall()
    for table, name, _, _ in sorted(constraints, key=lambda row: row[2] != "f"):
        cursor.execute(f'ALTER TABLE {table} DROP CONSTRAINT "{name}"')
    cursor.execute(
        "SELECT i.indexname, i.indexdef FROM pg_indexes i "
        "WHERE i.tablename = ANY(%s) AND NOT EXISTS ("
        "  SELECT 1 FROM pg_constraint c WHERE c.conname = i.indexname)",
        [list(_BIG_TABLES)])
    indexes = cursor.fetchall()
    for name, _ in indexes:
        cursor.execute(f'DROP INDEX "{name}"')
    recreate = [definition for _, definition in indexes]
    recreate += [f'ALTER TABLE {table} ADD CONSTRAINT "{name}" {definition}'
                 for table, name, kind, definition in sorted(constraints, key=lambda r: r[2] == "f")]
    return recreate


def _id(kind: int, number: str) -> str:
    """A UUID that grows with ``number``: rows arrive in primary-key order, so the key index
    is appended to rather than split at random pages. ``kind`` keeps the tables apart."""
    return f"('{kind}0000000-0000-4000-8000-' || lpad(to_hex({number}), 12, '0'))::uuid"


def _generate(cursor, tenant_id) -> None:
    t = str(tenant_id)
    now = timezone.now()
    # Leads: statuses in the proportions of a real pipeline, four sources, scores 0-100.
    cursor.execute(f"""
        INSERT INTO leads_lead (id, tenant_id, livemode, email, name, company, title, phone,
            status, score, source, tags, custom_fields, custom_fields_text, last_intent,
            first_seen_at, last_active_at, created_at, updated_at)
        SELECT {_id(1, 'i')}, %s, true, 'lead' || i || '@bench.example', 'Lead ' || i,
            'Company ' || (i %% 5000), '', '',
            (ARRAY['new','new','new','new','qualifying','qualified','booked','contacted',
                   'converted','lost'])[i %% 10 + 1],
            i %% 101, (ARRAY['chat','api','import','form'])[i %% 4 + 1], '[]', '{{}}', '', '',
            c, c, c, c
        FROM (SELECT i, %s::timestamptz - make_interval(days => i %% {DAYS}, secs => (i * 37) %% 86400) AS c
              FROM generate_series(1, {LEADS}) AS i) AS g""", [t, now])
    _log("leads inserted")
    # Conversations: a third produced a lead, a tenth was handed off; ten messages each.
    cursor.execute(f"""
        INSERT INTO conversations_conversation (id, tenant_id, livemode, lead_id, visitor_id,
            channel, status, subject, summary, intents, signals, contact, lead_score,
            score_reasons, language, handoff, metadata, offered_slots, high_value_notified,
            message_count, started_at, last_message_at, created_at, updated_at)
        SELECT {_id(2, 'j')}, %s, true,
            CASE WHEN j %% 3 = 0 THEN {_id(1, 'j')} END, 'visitor-' || j,
            (ARRAY['web_chat','api','whatsapp','slack'])[j %% 4 + 1],
            CASE WHEN j %% 10 = 0 THEN 'handed_off' ELSE 'closed' END, '', '', '[]', '[]', '{{}}',
            j %% 101, '[]', 'en',
            CASE WHEN j %% 10 = 0 THEN '{{"reason": "asked for a person"}}'::jsonb END,
            '{{}}', '[]', false, {MESSAGES_PER_CONVERSATION}, s,
            s + make_interval(secs => {MESSAGES_PER_CONVERSATION - 1} * 7), s, s
        FROM (SELECT j, %s::timestamptz - make_interval(days => j %% {DAYS}, secs => (j * 53) %% 86400) AS s
              FROM generate_series(1, {CONVERSATIONS}) AS j) AS g""", [t, now])
    _log("conversations inserted")
    cursor.execute(f"""
        INSERT INTO conversations_message (id, tenant_id, livemode, conversation_id, sequence,
            role, content, intent, confidence, suggested_actions, handoff, sources, interrupted,
            turn, created_at)
        SELECT {_id(3, 'j * 10 + k')}, %s, true, {_id(2, 'j')}, k,
            CASE WHEN k %% 2 = 0 THEN 'user' ELSE 'assistant' END, 'message ' || k,
            CASE WHEN k %% 2 = 1 THEN 'question' ELSE '' END,
            CASE WHEN k %% 2 = 1 THEN 0.9 END, '[]', NULL, '[]', false, '{{}}',
            %s::timestamptz - make_interval(days => j %% {DAYS}, secs => (j * 53) %% 86400)
                + make_interval(secs => k * 7 + (k %% 2) * (j %% 5))
        FROM generate_series(1, {CONVERSATIONS}) AS j,
             generate_series(0, {MESSAGES_PER_CONVERSATION - 1}) AS k""", [t, now])
    _log("messages inserted")
    # The events and meetings that date the funnel stages.
    cursor.execute(f"""
        INSERT INTO core_event (id, tenant_id, livemode, type, lead_id, conversation_id,
            description, facts, occurred_at)
        SELECT gen_random_uuid(), %s::uuid, true, 'lead.created', l.id, {_id(2, 'g.i')},
            'Lead created', '{{}}'::jsonb, l.created_at
        FROM generate_series(12, {LEADS}, 12) AS g(i) JOIN leads_lead l ON l.id = {_id(1, 'g.i')}
        UNION ALL
        SELECT gen_random_uuid(), %s::uuid, true, 'lead.qualified', l.id, NULL, 'Lead qualified', '{{}}',
            l.created_at + interval '1 day'
        FROM leads_lead l WHERE l.tenant_id = %s::uuid AND l.status IN ('qualified', 'booked', 'converted')
        UNION ALL
        SELECT gen_random_uuid(), %s::uuid, true, 'lead.converted', l.id, NULL, 'Lead converted', '{{}}',
            l.created_at + interval '3 days'
        FROM leads_lead l WHERE l.tenant_id = %s::uuid AND l.status = 'converted'""", [t, t, t, t, t])
    cursor.execute("""
        INSERT INTO conversations_meeting (id, tenant_id, livemode, lead_id, conversation_id,
            starts_at, ends_at, time_zone, status, sequence, cancelled_by, created_at, updated_at)
        SELECT gen_random_uuid(), %s::uuid, true, l.id, NULL, l.created_at + interval '5 days',
            l.created_at + interval '5 days 30 minutes', 'UTC', 'completed', 0, '',
            l.created_at + interval '2 days', l.created_at + interval '2 days'
        FROM leads_lead l WHERE l.tenant_id = %s::uuid AND l.status IN ('booked', 'converted')""", [t, t])
    _log("events and meetings inserted")


def _live_statements(tenant_id, periods: list[tuple[date, date]]) -> list[str]:
    """The overview's figures computed live from the raw rows, by month: the periods'
    conversations and leads (the baseline of the rollups). A lower bound of the live cost: the
    agents' response delays, a window over the ten million messages that takes minutes, are
    left out."""
    t = f"'{tenant_id}'::uuid"
    since = min(start for start, _ in periods).isoformat()
    until = (max(end for _, end in periods) + timedelta(days=1)).isoformat()
    since, until = f"'{since}'::timestamptz", f"'{until}'::timestamptz"
    return [
        f"""SELECT date_trunc('month', started_at AT TIME ZONE 'UTC') AS month, count(*),
                   count(lead_id) AS converted, count(*) FILTER (WHERE handoff IS NOT NULL)
                   AS handed_off, sum(message_count) AS messages
            FROM conversations_conversation
            WHERE tenant_id = {t} AND livemode AND started_at >= {since}
                  AND started_at < {until}
            GROUP BY 1 ORDER BY 1""",
        f"""SELECT date_trunc('month', created_at AT TIME ZONE 'UTC') AS month, count(*),
                   count(*) FILTER (WHERE status IN ('qualified', 'booked', 'converted'))
                   AS qualified, sum(score) AS score_sum
            FROM leads_lead
            WHERE tenant_id = {t} AND livemode AND created_at >= {since}
                  AND created_at < {until}
            GROUP BY 1 ORDER BY 1""",
    ]


TABLE = harness.table("analytics", [
    "Request", "Service median / p95 ms", "Live GROUP BY median / p95 ms",
    "Service / live (IQR of rounds)"])


def _timed(connection: Connection, path: str, headers: dict[str, str]) -> float:
    answer = connection.request("GET", path, headers=headers)
    assert answer.status == 200, answer.body[:500]
    return answer.seconds * 1000


def _json(connection: Connection, path: str, headers: dict[str, str]) -> dict:
    answer = connection.request("GET", path, headers=headers)
    assert answer.status == 200, answer.body[:500]
    return json.loads(answer.body)


@pytest.fixture
def tenant_key(django_db_setup, django_db_blocker) -> tuple[Tenant, str]:
    """The tenant and a read key, committed (the server reads them; the benchmark database
    is no test database: nothing is rolled back or flushed)."""
    with django_db_blocker.unblock():
        tenant = Tenant.objects.get(name=TENANT_NAME)
        tenant.api_keys.filter(name="bench read").delete()
        _, raw = api_key_create(tenant=tenant, name="bench read", scope="read", livemode=True)
    return tenant, raw


def test_overview_and_funnel_at_scale(service_server, bare_server, tenant_key):
    tenant, raw = tenant_key
    headers = {**harness.PROXY_HEADERS, "Authorization": f"Bearer {raw}"}
    service = Connection(service_server)
    today = timezone.now().date()
    start = today.replace(year=today.year - 1)
    span = f"startDate={start.isoformat()}&endDate={today.isoformat()}"
    overview_path = f"/api/v1/analytics/overview?{span}&granularity=month&compareWith=previous_period"
    overview = _json(service, overview_path, headers)
    assert overview["summary"]["totalConversations"] > 800_000
    assert overview["summary"]["totalLeads"] > 800_000
    assert overview["summary"]["avgMessagesPerConversation"] == 10.0
    assert overview["summary"]["avgResponseTime"] > 0
    funnel = _json(service, f"/api/v1/analytics/funnel?{span}", headers)
    assert funnel["stages"][2]["count"] == overview["summary"]["totalLeads"]
    counts = [stage["count"] for stage in funnel["stages"]]
    assert counts == sorted(counts, reverse=True), counts  # each stage within the one before

    previous = date.fromisoformat(overview["comparison"]["period"]["startDate"])
    bare_server.register("/live-overview", _live_statements(tenant.pk, [(previous, today)]))
    bare = Connection(bare_server.url)
    result = interleave(lambda: _timed(service, overview_path, headers),
                        lambda: _timed(bare, "/live-overview", {}), rounds=ROUNDS // 3, warmup=1)
    TABLE.rows.append([
        "overview (365 days, month, previous_period)",
        f"{ms(result.service.median)} / {ms(result.service.p95)}",
        f"{ms(result.baseline.median)} / {ms(result.baseline.p95)}", ratio_cell(result)])
    check("analytics", "overview at 1M leads and 10M messages vs live GROUP BY", result.ratio,
          1 / LIVE_SPEEDUP)
    check("analytics", "overview p95", result.service.p95, AIM_MS, unit=" ms")

    for label, path in [
        ("overview (365 days, day, previous_year)",
         f"/api/v1/analytics/overview?{span}&granularity=day&compareWith=previous_year"),
        ("funnel (365 days)", f"/api/v1/analytics/funnel?{span}"),
        ("funnel (365 days, channel and source)",
         f"/api/v1/analytics/funnel?{span}&channel=web_chat&source=chat"),
    ]:
        samples = harness.Samples([_timed(service, path, headers) for _ in range(ROUNDS)])
        TABLE.rows.append([label, f"{ms(samples.median)} / {ms(samples.p95)}", "", ""])
        check("analytics", f"{label} p95", samples.p95, AIM_MS, unit=" ms")
