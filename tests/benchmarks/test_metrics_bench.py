"""What the metrics cost a request (``make bench``, docs/performance.md "Metrics"; issue 31): the
aim is the floor request, ``GET /api/v1/users?limit=1``, with metrics on at most 1.05 times its
median with them off.

Two daphne processes with production settings on one scratch PostgreSQL database and the run's
Redis database: one with ``METRICS_TOKEN`` set (the request middleware in its chain, its series
written to a multiprocess directory of its own, as in production), one without. One HTTP/1.1
keep-alive client per server in this process sends the floor to each, interleaved round by round
by the harness (on then off, off then on, ...), so that both see the same machine. Rate limits are
off on both: their two Redis round trips are the same for both, and without them the ratio is, if
anything, stricter. The aim is asserted with the harness's tolerance (``harness.TOLERANCE``), and
the run writes the generated block of docs/performance.md's "Metrics". A scrape after the run
checks that the measured server did count every request.

Skipped without PostgreSQL and Redis: the aim is about the production stack.
"""

from __future__ import annotations

import json
import os
import uuid

import pytest

from tests.benchmarks import harness
from tests.benchmarks.harness import check, interleave, ms, ratio_cell
from tests.benchmarks.http import Connection
from tests.live import daphne, manage, scratch_database

pytestmark = [pytest.mark.live, harness.PRODUCTION_STACK]  # daphne

WARMUP = 200
ROUNDS = int(os.environ.get("BENCH_METRICS_ROUNDS", "1500"))
AIM = 1.05  # the floor's median with metrics on / off (issue 31), with harness.TOLERANCE
TOKEN = "metrics-bench-token-0123456789"
FLOOR = "/api/v1/users?limit=1"

TABLE = harness.table("metrics", [
    "GET /api/v1/users?limit=1", "Median / p95 / p99 ms", "Ratio of medians to metrics off "
    "(IQR of rounds)"])


def test_metrics_cost_the_floor_at_most_five_percent(tmp_path):
    with scratch_database(f"salesagent_metrics_bench_{os.getpid()}") as database:
        env = {
            "DJANGO_SETTINGS_MODULE": "config.settings", "DATABASE_URL": database,
            "REDIS_URL": os.environ["REDIS_URL"],
            "CACHE_KEY_PREFIX": f"metrics-bench-{uuid.uuid4().hex[:8]}",
            "DEBUG": "0", "SECRET_KEY": "metrics-bench", "ALLOWED_HOSTS": "127.0.0.1",
            "V1_REQUIRE_HTTPS": "0", "RATE_LIMIT_ENABLED": "0", "AGENT_WARM_UP": "false",
            "METRICS_DIR": None, "METRICS_TOKEN": None,
        }
        manage("migrate", "--noinput", env=env)
        created = json.loads(manage("create_tenant", "Metrics Bench", "--plan", "enterprise",
                                    "--json", env=env))
        headers = {"Authorization": f"Bearer {created['keys']['live']['read']}"}
        on_env = {**env, "METRICS_TOKEN": TOKEN, "VAR_DIR": str(tmp_path / "on")}
        off_env = {**env, "VAR_DIR": str(tmp_path / "off")}
        with daphne(on_env) as on_base, daphne(off_env) as off_base, \
                Connection(on_base) as on, Connection(off_base) as off:
            assert off.request("GET", "/metrics", headers={
                "Authorization": f"Bearer {TOKEN}"}).status == 404

            def timed(client: Connection) -> float:
                answer = client.request("GET", FLOOR, headers=headers)
                assert answer.status == 200, answer.body[:500]
                return answer.seconds * 1000

            result = interleave(lambda: timed(on), lambda: timed(off), rounds=ROUNDS,
                                warmup=WARMUP)
            scraped = on.request("GET", "/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
            assert scraped.status == 200
            counted = [line for line in scraped.body.decode().splitlines()
                       if line.startswith("salesagent_http_requests_total{")
                       and 'route="api/v1/users"' in line and 'status="200"' in line]
            assert counted and float(counted[0].rsplit(" ", 1)[1]) == WARMUP + ROUNDS
    for name, samples, ratio in (("metrics on", result.service, ratio_cell(result)),
                                 ("metrics off", result.baseline, "1")):
        TABLE.rows.append([name, f"{ms(samples.median)} / {ms(samples.p95)} / {ms(samples.p99)}",
                           ratio])
    low, high = result.iqr
    print(f"\n{FLOOR} with metrics on against off, two daphne processes over HTTP keep-alive, "
          f"{ROUNDS} interleaved rounds, load average {os.getloadavg()[0]:.2f}\n"
          f"  on: median {result.service.median:.3f} ms, p95 {result.service.p95:.3f} ms\n"
          f"  off: median {result.baseline.median:.3f} ms, p95 {result.baseline.p95:.3f} ms\n"
          f"  ratio of medians {result.ratio:.3f}; per-round ratios, interquartile range "
          f"{low:.2f}-{high:.2f}")
    check("metrics", "the floor's median with metrics on / off", result.ratio, AIM)
