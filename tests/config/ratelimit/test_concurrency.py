"""Concurrent connections per v1 key: streams hold a slot while open (renewing its lease), slots
of crashed holders expire, and no slot is given beyond the plan's."""

import asyncio
import time

import httpx
import pytest
from asgiref.sync import async_to_sync

from config import ratelimit
from config.ratelimit import concurrency, policy
from core.errors import RateLimited
from tests import urls_limits
from tests.limits import assert_v1_429, caller, v1_identity

CHAT = "/api/v1/_probe/chat"
STREAM = {"stream": True}


@pytest.fixture
def probes(settings):
    settings.ROOT_URLCONF = "tests.urls_limits"
    urls_limits.GATE.clear()
    yield
    urls_limits.GATE.set()


async def _until(predicate, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.01)


def test_open_streams_hold_slots_until_they_end(kit, probes):
    """Starter: 5 concurrent connections. Five open streams fill them; a sixth request of the
    same key is refused until a stream ends; other keys are unaffected."""
    from config.asgi import application

    auth = kit.auth("write")

    async def scenario():
        transport = httpx.ASGITransport(app=application)
        async with httpx.AsyncClient(transport=transport, base_url="https://testserver") as client:
            streams = [asyncio.create_task(client.post(CHAT, json=STREAM, headers=auth))
                       for _ in range(5)]
            await _until(lambda: urls_limits.OPEN_STREAMS[0] == 5)
            refused = await client.get("/api/v1/_probe/default", headers=auth)
            other_key = await client.get("/api/v1/_probe/default", headers=kit.auth("read"))
            held_while_open = ratelimit.holders(v1_identity(kit, "write"))
            urls_limits.GATE.set()
            finished = await asyncio.gather(*streams)
            after = await client.get("/api/v1/_probe/default", headers=auth)
            return refused, other_key, held_while_open, finished, after

    refused, other_key, held, finished, after = async_to_sync(scenario)()
    assert held == 5
    assert_v1_429(refused, limit=5, policy_name="concurrency", retry_after=1)
    assert "5 concurrent requests per API key on the Starter plan" in refused.json()["error"]["message"]
    assert other_key.status_code == 200
    for r in finished:
        assert r.status_code == 200 and "message_end" in r.text
        assert r.headers["content-type"] == "text/event-stream"
        assert r.headers["X-RateLimit-Policy"] == "endpoint.chat_stream"
    assert after.status_code == 200
    assert ratelimit.holders(v1_identity(kit, "write")) == 0


def test_an_ordinary_request_gives_its_slot_back_when_it_ends(api, kit):
    for _ in range(10):
        assert api.get("/api/v1/users", headers=kit.auth("read")).status_code == 200
    assert ratelimit.holders(v1_identity(kit)) == 0


def test_slots_of_a_crashed_holder_expire_with_their_lease(api, kit, clock, settings):
    # Five requests of a process that died without giving their slots back.
    for _ in range(5):
        ratelimit.acquire(policy.v1_slots(caller(kit)))
    assert_v1_429(api.get("/api/v1/users", headers=kit.auth("read")), limit=5,
                  policy_name="concurrency", retry_after=1)
    clock.advance(settings.RATE_LIMIT_SLOT_LEASE_SECONDS - 1)
    assert api.get("/api/v1/users", headers=kit.auth("read")).status_code == 429
    clock.advance(1.01)
    r = api.get("/api/v1/users", headers=kit.auth("read"))
    assert r.status_code == 200
    # A refused request takes nothing: 59 of the minute's 60 remain after the one admitted.
    assert r.headers["X-RateLimit-Remaining"] == "59"


def test_a_guarded_stream_renews_its_slot_while_it_runs(kit, settings):
    """``guard_stream``, which every streaming response of the v1 views goes through: with a
    lease of 0.6 s, a stream of 1.5 s keeps its slot only because the lease is renewed."""
    settings.RATE_LIMIT_SLOT_LEASE_SECONDS = 0.6
    who = caller(kit, "write")

    async def slow_stream():
        for _ in range(3):
            await asyncio.sleep(0.5)
            yield await asyncio.to_thread(ratelimit.holders, v1_identity(kit, "write"))

    async def scenario():
        slot = await ratelimit.aacquire(policy.v1_slots(who))
        assert slot.lease == pytest.approx(0.6)  # unrenewed, gone before the second chunk
        return [held async for held in concurrency.guard_stream(slot, slow_stream())]

    assert async_to_sync(scenario)() == [1, 1, 1]
    assert ratelimit.holders(v1_identity(kit, "write")) == 0


def test_no_slot_is_given_when_every_slot_is_taken(kit):
    who = caller(kit, "write")
    slots = [ratelimit.acquire(policy.v1_slots(who)) for _ in range(5)]

    with pytest.raises(RateLimited) as refused:
        async_to_sync(ratelimit.aacquire)(policy.v1_slots(who))
    assert refused.value.limit == 5 and refused.value.retry_after == 1
    slots[0].release()
    async_to_sync(ratelimit.aacquire)(policy.v1_slots(who))
    assert ratelimit.holders(v1_identity(kit, "write")) == 5


def test_a_long_stream_keeps_its_slot_beyond_the_lease(kit, probes, settings):
    settings.RATE_LIMIT_SLOT_LEASE_SECONDS = 0.6
    from config.asgi import application

    async def scenario():
        transport = httpx.ASGITransport(app=application)
        async with httpx.AsyncClient(transport=transport, base_url="https://testserver") as client:
            stream = asyncio.create_task(client.post(CHAT, json=STREAM, headers=kit.auth("write")))
            await _until(lambda: urls_limits.OPEN_STREAMS[0] == 1)
            await asyncio.sleep(1.5)
            held = await asyncio.to_thread(ratelimit.holders, v1_identity(kit, "write"))
            urls_limits.GATE.set()
            await stream
            return held

    assert async_to_sync(scenario)() == 1
    assert ratelimit.holders(v1_identity(kit, "write")) == 0
