"""Webhook speed (``make bench``, docs/performance.md "Webhooks"), on PostgreSQL + Redis with real
Celery workers delivering to a receiver on 127.0.0.1 that answers 200 at once:

- throughput: deliveries per second, from enqueueing a backlog to the last attempt recorded,
  against its baseline, a drain of as many no-op Celery tasks by the same workers (same pool,
  concurrency, processes and prefetch), the two interleaved round by round (A B, B A, ...) by
  the harness (tests/benchmarks/harness.py). The aim, asserted with the harness's tolerance:
  deliveries per second at least ``AIM`` times no-op tasks per second (the ratio of the
  medians);
- latency: the time from an event's commit to its first attempt reaching the receiver.

Skipped without PostgreSQL and Redis (the workers must share the test database and a broker).
"""

from __future__ import annotations

import json
import os
import signal
import statistics
import subprocess
import sys
import time
import uuid

import pytest
import redis
from django.db import connection
from django.utils import timezone

from core import broker, events
from core.models import Event
from tests.benchmarks import harness, webhook_noop
from tests.factories import make_lead, make_tenant
from tests.fakes.webhook_receiver import WebhookReceiver
from tests.live import ROOT, environment
from webhooks import services
from webhooks.models import Delivery, DeliveryAttempt, Surface

pytestmark = [
    pytest.mark.skipif(not os.environ.get("REDIS_URL"), reason="needs REDIS_URL (the broker)"),
    pytest.mark.skipif(not os.environ.get("DATABASE_URL", "").startswith("postgres"),
                       reason="needs a PostgreSQL DATABASE_URL shared with the workers"),
    pytest.mark.django_db(transaction=True),
]

BACKLOG = int(os.environ.get("BENCH_WEBHOOK_BACKLOG", "2000"))
EVENTS = int(os.environ.get("BENCH_WEBHOOK_EVENTS", "200"))
# Deliveries wait on the network, not the CPU: many threads per process use 2 cores well.
POOL = os.environ.get("BENCH_WEBHOOK_POOL", "threads")
CONCURRENCY = int(os.environ.get("BENCH_WEBHOOK_CONCURRENCY", "8"))
PROCESSES = int(os.environ.get("BENCH_WEBHOOK_PROCESSES", "2"))
ROUNDS = int(os.environ.get("BENCH_WEBHOOK_ROUNDS", "6"))
# Deliveries per message (services.BATCH_SIZE); 1 shows what kept connections and the bulk
# record give alone, with one message per delivery as the no-op drain has.
BATCH = int(os.environ.get("BENCH_WEBHOOK_BATCH", str(services.BATCH_SIZE)))
# Delivery throughput against a no-op Celery drain with the same workers (issue 20).
AIM = 0.5
TABLE = harness.table("webhooks", [
    "measure", "deliveries/s, median", "no-op tasks/s, median", "ratio of medians (IQR of rounds)",
    "worker CPU per delivery", "commit → first attempt, median / p95"])


def _percentile(ordered: list[float], share: float) -> float:
    return ordered[max(0, int(len(ordered) * share + 0.5) - 1)]


@pytest.fixture
def local(settings):
    settings.WEBHOOKS_ALLOW_HTTP = True
    settings.WEBHOOKS_ALLOW_PRIVATE_TARGETS = True


@pytest.fixture
def workers(tmp_path, local):
    base = os.environ["DATABASE_URL"].rsplit("/", 1)[0]
    # The database this process really writes to: with the connection pool, a benchmark that
    # switched settings' NAME earlier in the session can leave NAME and the pool apart.
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_database()")
        (database,) = cursor.fetchone()
    env = environment({"DATABASE_URL": f"{base}/{database}",
                       "WEBHOOKS_ALLOW_HTTP": "1", "WEBHOOKS_ALLOW_PRIVATE_TARGETS": "1"})
    procs = []
    for n in range(PROCESSES):
        log = open(tmp_path / f"worker{n}.log", "w")  # noqa: SIM115 -- closed below
        procs.append((subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "config", "worker", "--loglevel=WARNING",
             f"--pool={POOL}", f"--concurrency={CONCURRENCY}", "--without-gossip",
             "-I", "tests.benchmarks.webhook_noop",
             "--without-mingle", "-n", f"bench{n}-{os.getpid()}@%h"],
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True), log))
    try:
        yield procs
    finally:
        for proc, _log in procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc, log in procs:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            log.close()


def _cpu_seconds(pids: list[int]) -> float:
    """User + system CPU time of the given processes, from /proc (Linux)."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0
    for pid in pids:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / ticks


def _warm_up(kit, receiver) -> None:
    """Every worker process has started and served a delivery before anything is timed."""
    before = len(receiver.received)
    for i in range(PROCESSES * 4):
        make_lead(kit, email=f"warm{i}@example.com")
    receiver.wait_for(before + PROCESSES * 4, timeout=120)
    time.sleep(1.0)


def _lead_facts(email: str) -> dict:
    """A lead as a lead.created event records it (leads.events.lead_facts)."""
    at = "2026-11-21T00:00:00+00:00"
    return {"id": str(uuid.uuid4()), "email": email, "name": "", "company": "", "title": "",
            "phone": "", "status": "new", "score": 0, "source": "api", "tags": [],
            "custom_fields": {}, "assigned_to_id": None, "last_intent": "", "first_seen_at": at,
            "last_active_at": at, "created_at": at, "updated_at": at}


def _delivery_drain(kit, sub, receiver, pids: list[int]) -> tuple[float, float]:
    """Deliveries per second and worker CPU ms per delivery for a backlog enqueued at once,
    from the start of enqueueing to the last attempt recorded."""
    now = timezone.now()
    backlog_events = Event.objects.bulk_create([
        Event(tenant=kit.tenant, livemode=True, type="lead.created", description="bench",
              facts={"lead": _lead_facts(f"b{i}@example.com")}, occurred_at=now)
        for i in range(BACKLOG)])
    rows = Delivery.objects.bulk_create([
        Delivery(tenant=kit.tenant, livemode=True, surface=Surface.V1, event=e,
                 subscription=sub, next_attempt_at=now, enqueued_at=now)
        for e in backlog_events])
    ids = [row.pk for row in rows]
    before = len(receiver.received)
    time.sleep(0.5)  # let the machine settle after the inserts
    cpu_before = _cpu_seconds(pids)
    started = time.monotonic()
    services.enqueue(ids)
    receiver.wait_for(before + BACKLOG, timeout=600)
    deadline = time.monotonic() + 120
    while Delivery.objects.filter(pk__in=ids, status="delivered").count() < BACKLOG:
        assert time.monotonic() < deadline, "deliveries not all recorded"
        time.sleep(0.01)
    elapsed = time.monotonic() - started
    assert DeliveryAttempt.objects.filter(delivery_id__in=ids).count() == BACKLOG
    return BACKLOG / elapsed, (_cpu_seconds(pids) - cpu_before) / BACKLOG * 1000


def _noop_drain() -> float:
    """No-op tasks per second for a backlog published at once, as ``services.enqueue``
    publishes (``core.broker.publish``), until the broker holds none of them, neither waiting
    nor unacknowledged (the tasks are acked late, after they ran)."""
    client = redis.Redis.from_url(os.environ["REDIS_URL"])
    time.sleep(0.5)
    started = time.monotonic()
    assert broker.publish(webhook_noop.noop, [str(i) for i in range(BACKLOG)])
    deadline = started + 600
    while client.llen("celery") or client.hlen("unacked"):
        assert time.monotonic() < deadline, "no-op tasks not all drained"
        time.sleep(0.002)
    elapsed = time.monotonic() - started
    client.close()
    return BACKLOG / elapsed


def test_webhook_throughput_and_commit_to_first_attempt(workers, settings, monkeypatch):
    monkeypatch.setattr(services, "BATCH_SIZE", BATCH)
    receiver = WebhookReceiver()
    try:
        kit = make_tenant("Bench Inc")
        services.subscription_create(tenant=kit.tenant, livemode=True, url=receiver.url(),
                                     events=["lead.created"])
        _warm_up(kit, receiver)

        # --- latency: commit -> first attempt at the receiver, one event at a time ---------
        committed: dict[str, float] = {}

        def stamp(event: Event) -> None:
            committed[f"evt_{event.pk.hex}"] = time.time()

        # Runs right at the commit, before the fan-out subscriber.
        events._after_commit["lead.created"].insert(0, stamp)
        try:
            start = len(receiver.received)
            for i in range(EVENTS):
                make_lead(kit, email=f"lat{i}@example.com")
                receiver.wait_for(start + i + 1, timeout=30)
        finally:
            events._after_commit["lead.created"].remove(stamp)
        latencies = []
        for request in receiver.received[start:]:
            event_id = json.loads(request.body)["id"]
            latencies.append(request.at - committed[event_id])
        latencies.sort()
        median_ms = statistics.median(latencies) * 1000
        p95_ms = _percentile(latencies, 0.95) * 1000

        # --- throughput: deliveries against no-op tasks, interleaved round by round ---------
        sub = kit.tenant.webhook_subscriptions.get()
        pids = [proc.pid for proc, _ in workers]
        cpu_ms: list[float] = []

        def deliveries() -> float:
            rate, cpu = _delivery_drain(kit, sub, receiver, pids)
            cpu_ms.append(cpu)
            return rate

        result = harness.interleave(deliveries, _noop_drain, rounds=ROUNDS, warmup=1)
        q1, q3 = result.iqr
        cpu = statistics.median(cpu_ms[1:])  # the warm-up round left out

        print(f"\nwebhooks: {PROCESSES} worker processes x {CONCURRENCY} ({POOL} pool), "
              f"prefetch multiplier {settings.CELERY_WORKER_PREFETCH_MULTIPLIER}")
        print(f"  commit -> first attempt over {EVENTS} events: median {median_ms:.1f} ms, "
              f"p95 {p95_ms:.1f} ms, max {latencies[-1] * 1000:.1f} ms")
        print(f"  {ROUNDS} rounds of {BACKLOG} each, interleaved (A B, B A, ...), up to {BATCH} "
              "deliveries per message:")
        print("  deliveries/s: " + ", ".join(f"{r:.0f}" for r in result.service.values))
        print("  no-op tasks/s: " + ", ".join(f"{r:.0f}" for r in result.baseline.values))
        print(f"  median: {result.service.median:.0f} deliveries/s against "
              f"{result.baseline.median:.0f} no-op tasks/s = {result.ratio:.2f}x "
              f"(per-round ratios {min(result.round_ratios):.2f}-{max(result.round_ratios):.2f}, "
              f"IQR {q1:.2f}-{q3:.2f})")
        print(f"  worker CPU per delivery: {cpu:.2f} ms; machine load average "
              f"{os.getloadavg()[0]:.1f}")
        TABLE.rows.append([
            f"{BACKLOG:,} deliveries, {BATCH} per message; {PROCESSES} × {CONCURRENCY} {POOL}",
            f"{result.service.median:,.0f}", f"{result.baseline.median:,.0f}",
            harness.ratio_cell(result), f"{cpu:.2f} ms",
            f"{harness.ms(median_ms)} / {harness.ms(p95_ms)} ms"])
        assert median_ms < 1000
        assert len({r.headers["x-service-delivery"] for r in receiver.received}) == len(
            receiver.received)
        harness.check("webhooks", "Delivery throughput / no-op Celery drain", result.ratio, AIM,
                      at_most=False)
    finally:
        receiver.close()
