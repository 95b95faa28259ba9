"""Rate limits and idempotency on real daphne processes: streams hold concurrency slots over
real connections, a client that leaves gives its slot back, overlapping duplicates get 409,
and two servers count one budget in Redis, even when one of them is killed holding slots."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from tests.live import daphne, manage

pytestmark = pytest.mark.live  # daphne

NEEDS_REDIS = pytest.mark.skipif(
    not os.environ.get("REDIS_URL"),
    reason="set REDIS_URL: separate processes share a budget only through Redis (CI runs the "
           "suite with Redis; the embedded default is one process with a local-memory cache)",
)
LEASE = 3  # seconds; short so that a killed server's slots come back within the test


@pytest.fixture(scope="module")
def live(tmp_path_factory) -> dict:
    """The environment of the live servers (a SQLite file they share, the same Redis as the
    suite when there is one, the probe views) and a Starter tenant created in it."""
    env = {
        "DATABASE_URL": "",  # the embedded default's SQLite, in its own VAR_DIR
        "VAR_DIR": str(tmp_path_factory.mktemp("live")),
        "DJANGO_SETTINGS_MODULE": "tests.live_settings",
        "DEBUG": "0", "SECRET_KEY": "live-test", "ALLOWED_HOSTS": "127.0.0.1",
        "V1_REQUIRE_HTTPS": "0",
        "REDIS_URL": os.environ.get("REDIS_URL", ""),
        "CACHE_KEY_PREFIX": f"salesagent-live-{uuid.uuid4().hex[:8]}",
        "RATE_LIMIT_SLOT_LEASE_SECONDS": str(LEASE),
    }
    manage("migrate", "--noinput", env=env)
    tenants = [json.loads(manage("create_tenant", name, "--plan", "starter", "--json", env=env))
               for name in ("Live Co", "Crash Co")]
    # Each test uses keys of its own, so that no test eats into another's minute.
    return {"env": env, "keys": tenants[0]["keys"], "crash_keys": tenants[1]["keys"]}


def _auth(live, scope: str, mode: str = "live", keys: str = "keys") -> dict[str, str]:
    return {"Authorization": f"Bearer {live[keys][mode][scope]}"}


def _until(check, timeout: float = 15.0):
    # Polls twice a second: a poll is a request of the key, counted like any other.
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result or time.monotonic() > deadline:
            return result
        time.sleep(0.5)


@contextlib.contextmanager
def _open_streams(base: str, auth: dict, count: int):
    """``count`` streaming chats held open on ``base``; yields their responses."""
    with contextlib.ExitStack() as stack:
        client = stack.enter_context(httpx.Client(base_url=base, timeout=20))
        streams, readers = [], []
        for _ in range(count):
            r = stack.enter_context(client.stream(
                "POST", "/api/v1/_probe/chat", json={"stream": True, "hold": 30}, headers=auth))
            assert r.status_code == 200, r.read()
            # Keep the reader: a dropped, half-read iterator closes its connection.
            readers.append(r.iter_raw())
            assert b"message_start" in next(readers[-1])
            streams.append(r)
        yield streams


def test_open_streams_keep_their_slots_beyond_the_lease(live):
    auth = _auth(live, "write")
    with daphne(live["env"]) as base, _open_streams(base, auth, 5):
        # The leases are 3 s: holding the slots for longer proves the streams renew them.
        time.sleep(LEASE + 1)
        r = httpx.get(f"{base}/api/v1/_probe/default", headers=auth)
        assert r.status_code == 429 and r.json()["error"]["message"].startswith(
            "Rate limit exceeded: 5 concurrent requests")
        assert r.headers["X-RateLimit-Policy"] == "concurrency"


def test_a_client_that_leaves_gives_its_slot_back_at_once(live):
    auth = _auth(live, "write", mode="test")
    # A long lease, so that a slot coming back can only be the disconnect's doing.
    with daphne({**live["env"], "RATE_LIMIT_SLOT_LEASE_SECONDS": "60"}) as base, \
            _open_streams(base, auth, 5) as streams:
        assert httpx.get(f"{base}/api/v1/users", headers=auth).status_code == 429
        streams[0].close()  # the client goes away mid-stream
        left = time.monotonic()
        assert _until(lambda: httpx.get(f"{base}/api/v1/users", headers=auth).status_code == 200,
                      timeout=20)
        assert time.monotonic() - left < 20  # a third of the lease at most


def test_a_duplicate_of_a_running_request_is_409_then_replays(live, tmp_path):
    # Not the key of the streams test above: a server stopped with streams open leaves their
    # slots taken until the lease runs out, and on a fast machine this test starts before that.
    auth = {**_auth(live, "admin"), "Idempotency-Key": f"overlap-{uuid.uuid4().hex}"}
    started = tmp_path / "started"
    body = {"name": "slow", "seconds": 4, "started": str(started)}
    with daphne(live["env"]) as base, ThreadPoolExecutor(1) as pool:
        httpx.get(f"{base}/api/health", timeout=30)  # a warm server answers the first at once
        send = lambda: httpx.post(f"{base}/api/v1/_probe/keys", json=body, headers=auth,  # noqa: E731
                                  timeout=30)
        first = pool.submit(send)
        assert _until(started.exists, timeout=20)  # the first is running, its key claimed
        duplicate = send()
        original = first.result()
        assert original.status_code == 201, original.text
        assert duplicate.status_code == 409, duplicate.text
        assert duplicate.json()["error"]["code"] == "conflict"
        replay = send()
        assert replay.status_code == 201 and replay.headers["Idempotent-Replayed"] == "true"
        assert replay.json() == original.json()


def _room_in_this_minute(seconds: float = 15.0) -> None:
    """Waits for the next minute if the current one ends too soon for a whole minute's budget."""
    left = 60 - time.time() % 60
    if left < seconds:
        time.sleep(left + 0.1)


@NEEDS_REDIS
def test_two_servers_count_one_budget(live):
    auth = _auth(live, "read")
    with daphne(live["env"]) as a, daphne(live["env"]) as b:
        _room_in_this_minute()
        for n in range(1, 61):
            r = httpx.get(f"{(a, b)[n % 2]}/api/v1/users", headers=auth)
            assert r.status_code == 200, (n, r.text)
            assert r.headers["X-RateLimit-Remaining"] == str(60 - n), n
        for base in (a, b):
            r = httpx.get(f"{base}/api/v1/users", headers=auth)
            assert r.status_code == 429 and r.json()["limit"] == 60
            assert r.headers["X-RateLimit-Policy"] == "minute"


@NEEDS_REDIS
def test_slots_of_a_killed_server_come_back_after_their_lease(live):
    auth = _auth(live, "write", keys="crash_keys")
    with daphne(live["env"]) as a, daphne(live["env"]) as b:
        with _open_streams(a, auth, 5):
            assert httpx.get(f"{b}/api/v1/users", headers=auth).status_code == 429
            a.process.send_signal(signal.SIGKILL)  # a crash: nobody releases anything
            a.process.wait(timeout=10)
            killed_at = time.monotonic()
        assert httpx.get(f"{b}/api/v1/users", headers=auth).status_code == 429
        assert _until(lambda: httpx.get(f"{b}/api/v1/users", headers=auth).status_code == 200,
                      timeout=LEASE + 5)
        assert time.monotonic() - killed_at <= LEASE + 5
