"""What the rate limiter adds to a request (``make bench``; figures in docs/performance.md).

1. The limiter alone, in-process, as a v1 request runs it: build the request's limits, one
   round trip to admit it (four counters and a concurrency slot), the headers, and one round
   trip to give the slot back. Also with a store that answers at once, which is the limiter's
   own Python work without any round trip.
2. A whole in-process request (Django's test client, GET /api/v1/users) with limits on and
   off, interleaved so that both see the same machine; the difference of the medians is the
   limiter's share.
3. For comparison, the same four counters through django-ratelimit's ``get_usage`` (one call per
   counter, as the library counts), without the slot: the figure behind the choice in
   docs/decisions.md ("Rate limits: our counter, not django-ratelimit's").
Redis figures need REDIS_URL; the local-memory figures are printed too, for the embedded default.
A PING baseline shows what one round trip costs on the machine at the time: the limiter makes
two per request, plus its own work.
"""

from __future__ import annotations

import os
import statistics
import time

import pytest
from django.conf import settings
from django.core.cache.backends.redis import RedisCache
from django.test import Client, RequestFactory, override_settings
from django_ratelimit.core import get_usage

from config import ratelimit
from config.ratelimit import policy, store
from tests.factories import make_tenant
from tests.limits import caller

pytestmark = pytest.mark.bench

WARMUP = 200
ROUNDS = 3000
REQUESTS = 400


def _stats(samples_ns: list[int]) -> dict[str, float]:
    ordered = sorted(samples_ns)
    pick = lambda q: ordered[min(len(ordered) - 1, int(q * len(ordered)))] / 1e6  # noqa: E731
    return {"median_ms": statistics.median(ordered) / 1e6, "p95_ms": pick(0.95),
            "p99_ms": pick(0.99), "n": len(ordered)}


def _report(title: str, stats: dict[str, float]) -> None:
    print(f"\n{title}: median {stats['median_ms']:.3f} ms, p95 {stats['p95_ms']:.3f} ms, "
          f"p99 {stats['p99_ms']:.3f} ms (n={stats['n']})")


def _limiter_rounds(db_kits) -> dict[str, float]:
    callers = [caller(kit, "read") for kit in db_kits]
    samples = []
    for i in range(WARMUP + ROUNDS):
        who = callers[i % len(callers)]
        started = time.perf_counter_ns()
        decision = ratelimit.check(policy.v1_limits(who, "default"), slots=policy.v1_slots(who))
        headers = decision.headers()
        decision.slot.release()
        elapsed = time.perf_counter_ns() - started
        assert decision.allowed and headers
        if i >= WARMUP:
            samples.append(elapsed)
    return _stats(samples)


@pytest.fixture
def kits(db):
    # Enterprise read keys, enough of them that no minute budget (1,500 each) runs out.
    return [make_tenant(f"Bench {n}", plan="enterprise") for n in range(3)]


class _InstantStore:
    """Admits everything without a round trip: what is left is the limiter's own work."""

    def hit(self, counters, slot, at):
        return store.Outcome(True, tuple(1 for _ in counters), 1)

    def release(self, key, holder):
        pass


def test_limiter_own_work_without_round_trips(kits, monkeypatch):
    monkeypatch.setattr(store, "_store", store.GuardedStore(_InstantStore()))
    _report("Limiter's own work (a store that answers at once)", _limiter_rounds(kits))


def _redis_only():
    if not os.environ.get("REDIS_URL"):
        pytest.skip("set REDIS_URL to measure the limiter on Redis")
    from django.core.cache import caches

    assert isinstance(caches["default"], RedisCache)


def test_limiter_alone_on_redis(kits):
    _redis_only()
    client = store.get_store().inner._client
    pings = []
    for _ in range(WARMUP + ROUNDS):
        started = time.perf_counter_ns()
        client.ping()
        pings.append(time.perf_counter_ns() - started)
    _report("Baseline: one Redis round trip (PING), same client", _stats(pings[WARMUP:]))
    stats = _limiter_rounds(kits)
    _report("Limiter alone, Redis (admit 4 counters + slot, headers, release)", stats)
    assert stats["median_ms"] < 5  # a sanity bound; the goal (under 1 ms) is in the docs


@override_settings(CACHES={"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}})
def test_limiter_alone_in_local_memory(kits):
    stats = _limiter_rounds(kits)
    _report("Limiter alone, local memory (embedded default)", stats)


def _get_usage_rounds(db_kits) -> dict[str, float]:
    request = RequestFactory().get("/api/v1/users")
    callers = [caller(kit, "read") for kit in db_kits]
    samples = []
    for i in range(WARMUP + ROUNDS):
        limits = policy.v1_limits(callers[i % len(callers)], "default")
        started = time.perf_counter_ns()
        usages = [get_usage(request, group=f"{limit.identity}:{limit.policy}",
                            key=lambda group, request, who=limit.identity: who,
                            rate=(limit.limit, limit.period), increment=True)
                  for limit in limits]
        elapsed = time.perf_counter_ns() - started
        assert not any(usage["should_limit"] for usage in usages)
        if i >= WARMUP:
            samples.append(elapsed)
    return _stats(samples)


def test_the_same_counters_through_django_ratelimit_on_redis(kits):
    _redis_only()
    _report("django-ratelimit get_usage, Redis (the 4 counters only, no slot)", _get_usage_rounds(kits))


def _request_rounds(kits) -> tuple[dict, dict]:
    client = Client()
    auth = [f"Bearer {kit.key('read')}" for kit in kits]
    on, off = [], []
    for i in range(WARMUP // 4 + REQUESTS):
        for enabled, samples in ((True, on), (False, off)):
            with override_settings(RATE_LIMIT_ENABLED=enabled):
                started = time.perf_counter_ns()
                r = client.get("/api/v1/users", HTTP_AUTHORIZATION=auth[i % len(auth)], secure=True)
                elapsed = time.perf_counter_ns() - started
            assert r.status_code == 200, r.content
            assert ("X-RateLimit-Limit" in r.headers) is enabled
            if i >= WARMUP // 4:
                samples.append(elapsed)
    return _stats(on), _stats(off)


def test_whole_request_with_and_without_limits_on_redis(kits):
    _redis_only()
    assert settings.RATE_LIMIT_ENABLED
    on, off = _request_rounds(kits)
    _report("GET /api/v1/users in-process, limits on (Redis)", on)
    _report("GET /api/v1/users in-process, limits off", off)
    print(f"Limiter's share of the median request: {on['median_ms'] - off['median_ms']:.3f} ms; "
          f"of the p95: {on['p95_ms'] - off['p95_ms']:.3f} ms")
