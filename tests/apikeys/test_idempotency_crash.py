"""Idempotency-Key when the first request dies (issue 28: a retry after a crash was refused with
409 for up to 120 s), on live daphne processes, on the suite's database (a scratch PostgreSQL
database, or an SQLite file): the probe ends its server process there and then (``os._exit``, as
a kill does) after its key was claimed, before it wrote anything, in the middle of its write's
transaction, or after that transaction committed; the retry goes to a new process.

A first request that died having written nothing is retried at once; one whose write may have
committed keeps its key (409) rather than run twice; two requests that truly overlap still get
409 for the second; and a request whose key a retry took over (after the lock) does nothing
(docs/idempotency.md, "When the first request dies")."""

from __future__ import annotations

import json
import os
import sqlite3
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import psycopg
import pytest

from tests.live import daphne, manage, scratch_database

pytestmark = pytest.mark.live  # daphne, killed and started again

PRODUCTION = {"DJANGO_SETTINGS_MODULE": "tests.live_settings", "DEBUG": "0",
              "SECRET_KEY": "idempotency-crash-0123456789abcdef", "ALLOWED_HOSTS": "127.0.0.1",
              "V1_REQUIRE_HTTPS": "0"}


@pytest.fixture(scope="module")
def stack(tmp_path_factory) -> dict:
    var = tmp_path_factory.mktemp("idempotency-crash")
    env = {**PRODUCTION, "VAR_DIR": str(var)}
    if os.environ.get("DATABASE_URL", "").startswith("postgres"):
        with scratch_database(f"salesagent_idempotency_crash_{os.getpid()}") as database:
            yield _tenant({**env, "DATABASE_URL": database})
    else:
        yield _tenant({**env, "DATABASE_URL": None, "REDIS_URL": None})


def _tenant(env: dict) -> dict:
    manage("migrate", "--noinput", env=env)
    created = json.loads(manage("create_tenant", "Crash Co", "--json", env=env))
    return {"env": env, "auth": {"Authorization": f"Bearer {created['keys']['live']['admin']}"}}


def _post(base: str, stack: dict, key: str, body: dict) -> httpx.Response:
    return httpx.post(f"{base}/api/v1/_probe/keys", json=body, timeout=30,
                      headers={**stack["auth"], "Idempotency-Key": key})


def _keys_named(stack: dict, name: str) -> int:
    """How many API keys of this name the database holds: the probe's side effect."""
    database = stack["env"].get("DATABASE_URL")
    sql = "SELECT count(*) FROM apikeys_apikey WHERE name = {}"
    if database:
        with psycopg.connect(database) as conn:
            return conn.execute(sql.format("%s"), [name]).fetchone()[0]
    with sqlite3.connect(Path(stack["env"]["VAR_DIR"]) / "db.sqlite3") as conn:
        return conn.execute(sql.format("?"), [name]).fetchone()[0]


def _dies(stack: dict, key: str, body: dict) -> None:
    """Sends the request whose server process dies in the middle of it."""
    with daphne(stack["env"]) as base:
        with pytest.raises(httpx.TransportError):  # no answer: the connection just ends
            _post(base, stack, key, body)
        assert base.process.wait(timeout=20) == 70  # the probe's exit, not a crash of its own


@pytest.mark.parametrize("when", ["die_before", "die_uncommitted"])
def test_a_retry_of_a_request_that_died_having_written_nothing_runs_at_once(stack, tmp_path, when):
    key, name = f"crash-{uuid.uuid4().hex}", f"{when}-{uuid.uuid4().hex[:8]}"
    body = {"name": name, when: str(tmp_path / "died")}
    _dies(stack, key, body)
    assert _keys_named(stack, name) == 0  # an uncommitted write is rolled back with the process
    with daphne(stack["env"]) as base:
        retry = _post(base, stack, key, body)
        assert retry.status_code == 201, retry.text  # before: 409 for IDEMPOTENCY_LOCK_SECONDS
        assert "Idempotent-Replayed" not in retry.headers
        again = _post(base, stack, key, body)
        assert again.headers["Idempotent-Replayed"] == "true" and again.json() == retry.json()
    assert _keys_named(stack, name) == 1


def test_a_retry_of_a_request_that_died_after_its_write_committed_does_not_run_it_again(
        stack, tmp_path):
    key, name = f"crash-{uuid.uuid4().hex}", f"after-{uuid.uuid4().hex[:8]}"
    body = {"name": name, "die_after": str(tmp_path / "died")}
    _dies(stack, key, body)
    assert _keys_named(stack, name) == 1
    with daphne(stack["env"]) as base:
        retry = _post(base, stack, key, body)
        assert retry.status_code == 409, retry.text  # its work is done; its answer was lost
        assert "still being processed" in retry.json()["error"]["message"]
    assert _keys_named(stack, name) == 1


def _until(check, timeout: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_two_requests_that_overlap_still_get_409_for_the_second(stack, tmp_path):
    key, name = f"overlap-{uuid.uuid4().hex}", f"overlap-{uuid.uuid4().hex[:8]}"
    started = tmp_path / "started"
    body = {"name": name, "seconds": 3, "started": str(started)}
    with daphne(stack["env"]) as base, ThreadPoolExecutor(1) as pool:
        first = pool.submit(_post, base, stack, key, body)
        assert _until(started.exists)  # the first runs, its key claimed, nothing written yet
        duplicate = _post(base, stack, key, body)
        original = first.result()
        replay = _post(base, stack, key, body)
    assert duplicate.status_code == 409, duplicate.text
    assert "still being processed" in duplicate.json()["error"]["message"]
    assert original.status_code == 201, original.text
    assert replay.headers["Idempotent-Replayed"] == "true" and replay.json() == original.json()
    assert _keys_named(stack, name) == 1


def test_a_request_whose_key_a_retry_took_over_does_nothing(stack, tmp_path):
    """The first request outlives the lock (5 s here) before it writes: a retry takes its key
    over and runs; the first one's write is then refused and rolled back, so the work is done
    once, and the key keeps the retry's answer."""
    key, name = f"slow-{uuid.uuid4().hex}", f"slow-{uuid.uuid4().hex[:8]}"
    started = tmp_path / "started"
    body = {"name": name, "seconds": 8, "started": str(started)}
    with daphne({**stack["env"], "IDEMPOTENCY_LOCK_SECONDS": "5"}) as base, \
            ThreadPoolExecutor(1) as pool:
        first = pool.submit(_post, base, stack, key, body)
        assert _until(started.exists)
        time.sleep(5.5)
        retry = _post(base, stack, key, body)
        original = first.result()
        replay = _post(base, stack, key, body)
    assert retry.status_code == 201, retry.text
    assert original.status_code == 409, original.text
    assert "took over" in original.json()["error"]["message"]
    assert replay.headers["Idempotent-Replayed"] == "true" and replay.json() == retry.json()
    assert _keys_named(stack, name) == 1
