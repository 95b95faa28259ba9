"""Analytics at scale (``make bench``, PostgreSQL only; skipped elsewhere).

One tenant with 1,000,000 leads, 1,000,000 conversations and 10,000,000 messages, spread over
the last 400 days, plus the events and meetings that date the funnel stages. The data is
generated inside PostgreSQL (``INSERT ... SELECT generate_series``) into a persistent database,
the configured one with ``_bench`` appended (``salesagent`` -> ``salesagent_bench``), so later
runs reuse it. The rollups are then built by ``analytics.rebuild.rollups_rebuild`` from those raw
rows, as an operator would after a bulk load.

Measured through the whole HTTP stack (ASGI app, authentication, serialization): the v1
overview over 365 days at month granularity compared with the previous period, and the v1
funnel over 365 days; median and p95 of 30 requests each. Figures: docs/performance.md.
"""

from __future__ import annotations

import statistics
import time

import pytest
from django.conf import settings
from django.core.management import call_command
from django.db import connection, connections, transaction
from django.utils import timezone

from analytics.models import ChannelDailyStat
from analytics.rebuild import rollups_rebuild
from apikeys.services import api_key_create
from leads.counts import lead_counts_rebuild
from tenants.models import Tenant
from tenants.services import tenant_create
from tests.conftest import ApiClient
from tests.factories import TenantKit
from tests.live import ensure_database

pytestmark = pytest.mark.bench

LEADS = 1_000_000
CONVERSATIONS = 1_000_000
MESSAGES_PER_CONVERSATION = 10
DAYS = 400
TENANT_NAME = "Analytics benchmark"
RUNS = 30
AIM_MS = 300

_BIG_TABLES = ("leads_lead", "conversations_conversation", "conversations_message",
               "core_event", "conversations_meeting")


def _log(message: str) -> None:
    print(f"[analytics bench {time.strftime('%H:%M:%S')}] {message}", flush=True)


@pytest.fixture(scope="session")
def django_db_setup(django_db_blocker):
    """The persistent benchmark database instead of a throw-away test database."""
    if not settings.IS_POSTGRES:
        pytest.skip("the analytics benchmark needs PostgreSQL (set DATABASE_URL)")
    default = connections["default"]
    original = default.settings_dict["NAME"]
    name = original if original.endswith("_bench") else f"{original}_bench"
    ensure_database(name)
    for conn in connections.all():
        conn.close()
    default.close_pool()  # its connections are to the database named before
    default.settings_dict["NAME"] = name
    with django_db_blocker.unblock():
        call_command("migrate", verbosity=0, interactive=False)
        _load_once()
    yield
    for conn in connections.all():
        conn.close()
    default.close_pool()
    default.settings_dict["NAME"] = original


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


def _kit() -> TenantKit:
    tenant = Tenant.objects.get(name=TENANT_NAME)
    _, raw = api_key_create(tenant=tenant, name="bench read", scope="read", livemode=True)
    return TenantKit(tenant=tenant, admin_token="", keys={"live": {"read": raw}})


def _measure(client: ApiClient, url: str, headers: dict) -> tuple[float, float]:
    for _ in range(3):  # warm-up: connections, caches, the schema of the first request
        assert client.get(url, headers=headers).status_code == 200
    timings = []
    for _ in range(RUNS):
        started = time.perf_counter()
        response = client.get(url, headers=headers)
        timings.append((time.perf_counter() - started) * 1000)
        assert response.status_code == 200
    timings.sort()
    return statistics.median(timings), timings[int(0.95 * (len(timings) - 1))]


@pytest.mark.django_db
def test_overview_and_funnel_at_scale():
    kit = _kit()
    client = ApiClient()
    client.validate_schema = False  # measured: the service, not the test's schema validation
    headers = kit.auth("read")
    today = timezone.now().date()
    start = today.replace(year=today.year - 1)
    span = f"startDate={start.isoformat()}&endDate={today.isoformat()}"
    overview = client.get(f"/api/v1/analytics/overview?{span}&granularity=month"
                          "&compareWith=previous_period", headers=headers).json()
    assert overview["summary"]["totalConversations"] > 800_000
    assert overview["summary"]["totalLeads"] > 800_000
    assert overview["summary"]["avgMessagesPerConversation"] == 10.0
    assert overview["summary"]["avgResponseTime"] > 0
    funnel = client.get(f"/api/v1/analytics/funnel?{span}", headers=headers).json()
    assert funnel["stages"][2]["count"] == overview["summary"]["totalLeads"]
    counts = [stage["count"] for stage in funnel["stages"]]
    assert counts == sorted(counts, reverse=True), counts  # each stage within the one before

    results = {
        "overview (365 days, month, previous_period)": _measure(
            client, f"/api/v1/analytics/overview?{span}&granularity=month"
                    "&compareWith=previous_period", headers),
        "overview (365 days, day, previous_year)": _measure(
            client, f"/api/v1/analytics/overview?{span}&granularity=day"
                    "&compareWith=previous_year", headers),
        "funnel (365 days)": _measure(client, f"/api/v1/analytics/funnel?{span}", headers),
        "funnel (365 days, channel and source)": _measure(
            client, f"/api/v1/analytics/funnel?{span}&channel=web_chat&source=chat", headers),
    }
    print()
    print(f"{'endpoint':48} {'median ms':>10} {'p95 ms':>8}")
    for label, (median, p95) in results.items():
        print(f"{label:48} {median:10.1f} {p95:8.1f}")
    for label, (_median, p95) in results.items():
        assert p95 < AIM_MS, f"{label}: p95 {p95:.0f} ms, aim {AIM_MS} ms"
