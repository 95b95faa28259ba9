"""``/api/health`` against the authenticated floor (``make bench``, docs/performance.md "Health";
issue 20): the aim is a median at most 1.5 times that of ``GET /api/v1/users?limit=1``, the
smallest authenticated request, through the real server.

One daphne process with production settings on PostgreSQL and Redis (a scratch database, the
run's Redis database); one HTTP/1.1 keep-alive client in this process sends both requests,
interleaved round by round (health then floor, floor then health, ...), so that both see the same
machine. Rate limits are off for the run on both sides: health's public budget is 60 a minute
per address, and the limiter's two Redis round trips are the same for both (without them the
ratio is, if anything, stricter).

Skipped without PostgreSQL and Redis: the aim is about the production stack.
"""

from __future__ import annotations

import json
import os
import statistics
import time
import uuid

import httpx
import pytest

from tests.live import daphne, manage, scratch_database

pytestmark = [
    pytest.mark.live,  # daphne
    pytest.mark.skipif(
        not (os.environ.get("DATABASE_URL", "").startswith("postgres")
             and os.environ.get("REDIS_URL")),
        reason="set DATABASE_URL (PostgreSQL) and REDIS_URL: the aim is about the production stack"),
]

WARMUP = 100  # rounds before timing: the pool fills, the kept broker connection is made
ROUNDS = int(os.environ.get("BENCH_HEALTH_ROUNDS", "600"))
AIM = 1.5  # health's median / the floor's median (issue 20)
# This shared 2-vCPU machine moves a sub-millisecond ratio by a few percent from run to run
# (docs/performance.md): the assertion allows that much on top of the aim.
TOLERANCE = 0.1


def _percentile(ordered: list[float], share: float) -> float:
    return ordered[max(0, int(len(ordered) * share + 0.5) - 1)]


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 3)


def _timed(client: httpx.Client, path: str, headers: dict[str, str]) -> float:
    started = time.perf_counter()
    r = client.get(path, headers=headers)
    elapsed = time.perf_counter() - started
    assert r.status_code == 200, r.text[:500]
    return elapsed


def test_health_costs_at_most_one_and_a_half_floors(tmp_path):
    with scratch_database(f"salesagent_health_bench_{os.getpid()}") as database:
        env = {
            "DJANGO_SETTINGS_MODULE": "config.settings", "VAR_DIR": str(tmp_path),
            "DATABASE_URL": database, "REDIS_URL": os.environ["REDIS_URL"],
            "CACHE_KEY_PREFIX": f"health-bench-{uuid.uuid4().hex[:8]}",
            "DEBUG": "0", "SECRET_KEY": "health-bench", "ALLOWED_HOSTS": "127.0.0.1",
            "V1_REQUIRE_HTTPS": "0", "RATE_LIMIT_ENABLED": "0",
        }
        manage("migrate", "--noinput", env=env)
        created = json.loads(manage("create_tenant", "Health Bench", "--plan", "enterprise",
                                    "--json", env=env))
        floor_headers = {"Authorization": f"Bearer {created['keys']['live']['read']}"}
        cases = {"health": ("/api/health", {}), "floor": ("/api/v1/users?limit=1", floor_headers)}
        with daphne(env) as base, httpx.Client(base_url=base, timeout=30) as client:
            body = client.get("/api/health").json()
            assert body["status"] == "ok", body
            assert {name: c["status"] for name, c in body["components"].items()} == {
                "database": "ok", "cache": "ok", "broker": "ok"}
            samples: dict[str, list[float]] = {"health": [], "floor": []}
            for i in range(WARMUP + ROUNDS):
                order = ("health", "floor") if i % 2 == 0 else ("floor", "health")
                times = {name: _timed(client, *cases[name]) for name in order}
                if i >= WARMUP:
                    for name, elapsed in times.items():
                        samples[name].append(elapsed)
    ratio = _report(samples)
    assert ratio <= AIM + TOLERANCE, (
        f"/api/health's median is {ratio:.2f} times the floor's (aim {AIM}, tolerance "
        f"{TOLERANCE})")


def _report(samples: dict[str, list[float]]) -> float:
    """Prints the figures and returns the ratio of medians."""
    medians = {name: statistics.median(times) for name, times in samples.items()}
    ratios = sorted(h / f for h, f in zip(samples["health"], samples["floor"], strict=True))
    quartiles = statistics.quantiles(ratios, n=4)
    ratio = medians["health"] / medians["floor"]
    with open("/proc/loadavg") as loadavg:
        load = loadavg.read().split()[0]
    print(f"\n/api/health against GET /api/v1/users?limit=1, daphne over HTTP keep-alive, "
          f"{len(ratios)} interleaved rounds, load average {load}")
    for name, times in samples.items():
        ordered = sorted(times)
        print(f"  {name}: median {_ms(medians[name])} ms, p95 {_ms(_percentile(ordered, 0.95))} ms")
    print(f"  ratio of medians {ratio:.2f} (aim <= {AIM}, tolerance {TOLERANCE}); per-round "
          f"ratios, interquartile range {quartiles[0]:.2f}-{quartiles[2]:.2f}")
    return ratio
