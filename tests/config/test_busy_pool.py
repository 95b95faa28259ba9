"""A busy connection pool is waited for, unlike a database server that is gone
(config/postgresql/base.py; docs/security.md, "Under faults"): on a live daphne with a pool of
one connection, a request that finds it taken for longer than the pool's one-second slice checks
that the server answers and waits on, then succeeds."""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from tests.live import daphne, manage, scratch_database

pytestmark = [
    pytest.mark.live,  # daphne
    pytest.mark.skipif(
        not os.environ.get("DATABASE_URL", "").startswith("postgres"),
        reason="set DATABASE_URL (PostgreSQL): the pool is PostgreSQL's (CI runs the suite on "
               "PostgreSQL too)",
    ),
]


@contextlib.contextmanager
def _held_pool(tmp_path, seconds: int) -> Iterator[str]:
    """daphne on a scratch database with a pool of one connection, which a probe request holds
    for ``seconds`` once this yields the server's base URL (a request is authenticated, then
    asleep); the probe's answer is checked at the end."""
    with scratch_database(f"salesagent_busy_pool_{os.getpid()}") as database:
        env = {"DATABASE_URL": database, "REDIS_URL": "", "VAR_DIR": str(tmp_path),
               "DJANGO_SETTINGS_MODULE": "tests.live_settings", "DEBUG": "0",
               "SECRET_KEY": "busy-pool", "ALLOWED_HOSTS": "127.0.0.1", "V1_REQUIRE_HTTPS": "0",
               "DB_POOL_MAX_SIZE": "1"}
        manage("migrate", "--noinput", env=env)
        created = json.loads(manage("create_tenant", "Busy Co", "--json", env=env))
        auth = {"Authorization": f"Bearer {created['keys']['live']['admin']}"}
        started = tmp_path / "started"
        with daphne(env) as base, ThreadPoolExecutor(1) as pool:
            assert httpx.post(f"{base}/api/v1/_probe/keys", json={"name": "warm"}, headers=auth,
                              timeout=30).status_code == 201
            assert httpx.get(f"{base}/api/health", timeout=30).status_code == 200
            slow = pool.submit(httpx.post, f"{base}/api/v1/_probe/keys", headers=auth, timeout=30,
                               json={"name": "slow", "seconds": seconds, "started": str(started)})
            deadline = time.monotonic() + 20
            while not started.exists() and time.monotonic() < deadline:
                time.sleep(0.05)
            yield base, auth
            assert slow.result().status_code == 201


def test_a_request_waits_for_a_busy_pool_past_its_slices(tmp_path):
    with _held_pool(tmp_path, seconds=3) as (base, auth):
        sent = time.monotonic()
        second = httpx.post(f"{base}/api/v1/_probe/keys", json={"name": "patient"}, headers=auth,
                            timeout=30)
        waited = time.monotonic() - sent
    assert second.status_code == 201, second.text  # waited, not 503 nor 500
    assert waited > 1.5  # more than one slice of the pool's wait


def test_health_answers_ok_while_the_pool_is_busy(tmp_path):
    """/api/health checks the database on a pooled connection; a pool that stays taken is no
    outage: after one slice the check asks the server on a connection of its own, 200."""
    # The pool's only connection is held for 6 s: longer than health may take.
    with _held_pool(tmp_path, seconds=6) as (base, _):
        sent = time.monotonic()
        health = httpx.get(f"{base}/api/health", timeout=30)
        waited = time.monotonic() - sent
    assert health.status_code == 200, health.text
    assert health.json()["components"]["database"]["status"] == "ok"
    assert 1 <= waited < 4  # one slice of the pool's wait, then a direct connection
