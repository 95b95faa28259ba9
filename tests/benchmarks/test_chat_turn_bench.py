"""The chat turn through the real server (``make bench``, tests/benchmarks/harness.py).

Non-streaming ``POST /api/v1/chat`` turns with the builtin agent (no network), through daphne
with production settings on PostgreSQL and Redis over HTTP, interleaved round by round with the
authenticated floor, ``GET /api/v1/users?limit=1``. A turn's own time is the turn less the
floor of its round: what the chat costs beyond what any authenticated request costs (the HTTP
exchange, the key, the rate limiter). Conversations of six messages, as a visitor's, a new one
every sixth turn; each message a text new to the server (``tests/benchmarks/corpus.py``), as a
visitor's is, so that the turn embeds it as a visitor's turn does.

The aim (issue 20's, restated by issue 27 as a ratio to the floor of the same run): the turn's
own time, median and p95, at most ``OWN_AIM`` times the floor's median. Issue 20 set it at 25 ms
on the machine where the floor's median was 2.5 ms; on a slower machine of the same kind both
grow alike (the floor 7.8 ms, the turn's own time 30 ms), and a time would fail there what the
ratio passes. The milliseconds stay in the table.
"""

from __future__ import annotations

import pytest

from tenants.models import Plan, Tenant
from tests.benchmarks import harness
from tests.benchmarks.chat import Visitors, bench_keys
from tests.benchmarks.corpus import Messages
from tests.benchmarks.harness import check, interleave, ms

pytestmark = pytest.mark.bench

TENANT_NAME = "Chat benchmark"
TURNS = 240
WARMUP = 24  # not timed: the first requests of a process compile and cache
OWN_AIM = 10.0  # × the floor's median: 25 ms when the floor's median was 2.5 ms (issue 20)


@pytest.fixture(scope="session")
def django_db_setup(bench_database):
    return bench_database


@pytest.fixture(scope="module")
def keys(django_db_setup, django_db_blocker) -> list[str]:
    with django_db_blocker.unblock():
        tenant, _ = Tenant.objects.get_or_create(name=TENANT_NAME,
                                                 defaults={"plan": Plan.ENTERPRISE})
        return bench_keys(tenant, "chat bench")


def test_builtin_turn_own_time_against_the_floor(service_server, keys):
    visitors = Visitors(service_server, keys, Messages(seed=20).next, visitor="bench")
    result = interleave(visitors.turn, visitors.floor_request, rounds=TURNS, warmup=WARMUP)
    visitors.close()
    own = harness.Samples([a - b for a, b in zip(result.service.values, result.baseline.values,
                                                 strict=True)])
    floor = result.baseline.median
    table = harness.table("chat", ["Measure", "Median ms", "p95 ms", "p99 ms"])
    for label, samples in [("turn, through HTTP", result.service),
                           ("floor: GET /api/v1/users?limit=1", result.baseline),
                           ("own time: the turn less its round's floor", own)]:
        table.rows.append([label, ms(samples.median), ms(samples.p95), ms(samples.p99)])
    table.notes.append(
        f"- Own time ÷ the floor's median: median {own.median / floor:.2f}×, p95 "
        f"{own.p95 / floor:.2f}×; the turn ÷ the floor (medians): {result.ratio:.2f}× "
        f"(interquartile range of the rounds' ratios {result.iqr[0]:.2f}–{result.iqr[1]:.2f}).")
    table.notes.append(f"- The embedding model's BLAS threads: {harness.embedding_threads()}.")
    missed = []
    for label, measured in (("median", own.median), ("p95", own.p95)):
        try:
            check("chat", f"builtin turn, own time beyond the floor, {label}, × the floor's median",
                  measured / floor, OWN_AIM)
        except AssertionError as miss:  # both aims in the table first
            missed.append(str(miss))
    assert not missed, missed
