"""Chat speed (``make bench``): the service's own time per turn, the time to the first SSE byte,
and 200 concurrent streaming chats on one daphne process.

"Own time" is measured with providers that answer at once: the builtin agent (no network at
all), and the OpenAI provider against the fake server answering immediately (two loopback HTTP
round trips included, reported separately).
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import time
from pathlib import Path

import httpx
import pytest

from tenants.services import tenant_set_agent
from tests.factories import make_tenant
from tests.fakes.openai_server import FakeOpenAI
from tests.live import daphne, manage, scratch_database
from tests.loop_client import LoopClient

TURNS = 200
WARMUP_TURNS = 24  # not timed: the first requests of a process compile and cache
# The aim (issue 20): the builtin agent's turn, own time, p95 under 25 ms. Held through the real
# server by test_chat_turn_bench.py; here, in-process, a diagnostic.
P95_AIM_MS = 25.0


@pytest.fixture(autouse=True)
def _no_rate_limits(settings):
    # A load test of the chat, not of the plan's budget (docs/rate-limits.md).
    settings.RATE_LIMIT_ENABLED = False


def _report(name: str, samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    figures = {
        "median_ms": round(statistics.median(ordered) * 1000, 2),
        "p95_ms": round(ordered[int(len(ordered) * 0.95) - 1] * 1000, 2),
        "n": len(ordered),
    }
    print(f"\n{name}: {figures}")
    return figures


@pytest.fixture
def api(transactional_db):
    """Requests on one long-lived event loop, as daphne serves them (tests/benchmarks/asgi.py);
    the data is committed, since each request runs on a thread of its own."""
    with LoopClient() as client:
        yield client


@pytest.fixture
def kit(transactional_db):
    return make_tenant("Bench Inc", plan="enterprise")


def test_own_time_per_turn_builtin(api, kit):
    session = None
    samples = []
    messages = ["Hi", "How much does it cost?", "We need it this quarter", "I'm the CTO",
                "Can we book a demo?", "What integrations do you have?"]
    for i in range(WARMUP_TURNS + TURNS):
        body = {"message": messages[i % len(messages)], "visitorId": f"bench-{i // 6}"}
        if session and i % 6:
            body["sessionId"] = session
        started = time.perf_counter()
        r = api.post("/api/v1/chat", json=body, headers=kit.auth("write"))
        if i >= WARMUP_TURNS:
            samples.append(time.perf_counter() - started)
        assert r.status_code == 200
        session = r.json()["sessionId"]
    load = os.getloadavg()[0]
    figures = _report(f"chat turn, builtin agent (in-process ASGI), load average {load:.2f}",
                      samples)
    # A diagnostic: the aim is held through the real server (test_chat_turn_bench.py).
    print(f"p95 against the aim of {P95_AIM_MS:.0f} ms: {figures['p95_ms']:.1f} ms")


def test_own_time_per_turn_openai_fake(api, kit, settings):
    fake = FakeOpenAI()
    try:
        settings.AGENT_MAX_RETRIES = 0
        tenant_set_agent(tenant=kit.tenant, provider="openai", model="m", api_key="k",
                         base_url=fake.base_url)
        fake.reply = "Sure, happy to help with that."
        samples = []
        for i in range(TURNS // 2):
            started = time.perf_counter()
            r = api.post("/api/v1/chat", json={"message": "Hi", "visitorId": f"v{i}"},
                         headers=kit.auth("write"))
            samples.append(time.perf_counter() - started)
            assert r.status_code == 200
        _report("chat turn, OpenAI provider on a fake answering at once (2 loopback calls)", samples)
    finally:
        fake.close()


EMBEDDED = {"DATABASE_URL": None, "REDIS_URL": None, "DEBUG": "1", "SECRET_KEY": None,
            "ALLOWED_HOSTS": None, "V1_REQUIRE_HTTPS": "0", "RATE_LIMIT_ENABLED": "0"}


@pytest.fixture
def server_database():
    """PostgreSQL when the run has it (a scratch database: the run's own is inside a test
    transaction), else the embedded SQLite file, whose single writer lock is the bottleneck of
    200 concurrent turns on a loaded machine."""
    import os

    if os.environ.get("DATABASE_URL", "").startswith("postgres"):
        with scratch_database(f"salesagent_chat_bench_{os.getpid()}") as url:
            yield url
    else:
        yield None


def test_first_byte_and_200_concurrent_streams(tmp_path, server_database):
    """Through one daphne process, builtin agent."""
    env = {**EMBEDDED, "VAR_DIR": str(tmp_path), "DATABASE_URL": server_database}
    if server_database:
        env.update({"DEBUG": "0", "SECRET_KEY": "bench", "ALLOWED_HOSTS": "127.0.0.1"})
    manage("migrate", "--noinput", env=env)
    created = json.loads(manage("create_tenant", "Bench", "--plan", "enterprise", "--json", env=env))
    key = created["keys"]["live"]["write"]
    with daphne(env) as base:
        headers = {"Authorization": f"Bearer {key}", "Accept": "text/event-stream"}

        async def one(client: httpx.AsyncClient, i: int) -> tuple[float, float]:
            started = time.perf_counter()
            first = None
            async with client.stream("POST", f"{base}/api/v1/chat", headers=headers, json={
                    "message": "Hi, how much does it cost?", "visitorId": f"s{i}",
                    "stream": True}) as r:
                if r.status_code != 200:
                    await r.aread()
                    raise AssertionError(f"{r.status_code}: {r.text[:300]}\n"
                                         + Path(base.log).read_text()[-3000:])
                body = b""
                async for chunk in r.aiter_bytes():
                    if first is None:
                        first = time.perf_counter() - started
                    body += chunk
            assert b"event: message_end" in body
            return first, time.perf_counter() - started

        async def sequential() -> list[float]:
            async with httpx.AsyncClient(timeout=60) as client:
                return [(await one(client, i))[0] for i in range(50)]

        async def concurrent(n: int) -> tuple[list[tuple[float, float]], float]:
            limits = httpx.Limits(max_connections=n, max_keepalive_connections=n)
            async with httpx.AsyncClient(timeout=120, limits=limits) as client:
                started = time.perf_counter()
                results = await asyncio.gather(*(one(client, 1000 + i) for i in range(n)))
                return results, time.perf_counter() - started

        _report("time to first SSE byte (sequential, daphne, builtin)", asyncio.run(sequential()))
        results, wall = asyncio.run(concurrent(200))
        assert len(results) == 200
        _report("200 concurrent streams: time to first byte", [r[0] for r in results])
        _report("200 concurrent streams: time to completion", [r[1] for r in results])
        print(f"200 concurrent streams: all completed in {wall:.2f} s")
