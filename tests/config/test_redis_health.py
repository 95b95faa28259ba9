"""The Redis clients check and replace their connections (issue 28, "Dead pooled connections
after an outage"; docs/security.md, "Under faults").

Each client the project builds (the cache, which also holds the rate limits; the channel layer;
the Celery broker) carries a health check (a PING before a connection idle for
``REDIS_HEALTH_CHECK_SECONDS`` is used) and TCP keepalives. And each one's next use succeeds
right after Redis ended its connection (``CLIENT KILL``, as a restart or an idle timeout of the
server does): the connection is found closed and made again, not handed to the caller.
"""

from __future__ import annotations

import asyncio
import os
import uuid

import pytest
import redis
from django.conf import settings

pytestmark = pytest.mark.skipif(
    not os.environ.get("REDIS_URL"),
    reason="set REDIS_URL: these are the Redis clients (CI runs the suite on Redis too; the "
           "embedded default has none)",
)


@pytest.fixture
def server():
    """A connection of the test's own, to end the clients' connections with."""
    admin = redis.Redis.from_url(os.environ["REDIS_URL"])
    yield admin
    admin.close()


def _assert_checked_and_kept_alive(kwargs: dict) -> None:
    assert kwargs["health_check_interval"] == settings.REDIS_HEALTH_CHECK_SECONDS > 0
    assert kwargs["socket_keepalive"] is True
    assert kwargs["socket_keepalive_options"]  # probes after seconds, not the kernel's 2 hours


def test_the_cache(server):
    from django.core.cache import cache

    client = cache._cache.get_client(write=True)  # the client the rate limiter uses too
    _assert_checked_and_kept_alive(client.connection_pool.connection_kwargs)
    key = f"health-{uuid.uuid4().hex}"
    cache.set(key, "kept", 60)
    assert server.client_kill_filter(_id=client.client_id()) == 1
    assert cache.get(key) == "kept"
    cache.delete(key)


def test_the_channel_layer(server):
    from channels.layers import get_channel_layer

    layer = get_channel_layer()
    channel = f"health.{uuid.uuid4().hex}"

    async def scenario() -> None:
        await layer.send(channel, {"type": "health.first"})
        assert (await layer.receive(channel))["type"] == "health.first"
        connection = layer.connection(layer.consistent_hash(channel))
        _assert_checked_and_kept_alive(connection.connection_pool.connection_kwargs)
        assert server.client_kill_filter(_id=await connection.client_id()) == 1
        # At once: the event loop has not even read the server's goodbye yet.
        await layer.send(channel, {"type": "health.second"})
        assert (await layer.receive(channel))["type"] == "health.second"
        await layer.flush()

    asyncio.run(scenario())


def test_the_broker(server):
    from config.celery import app

    with app.connection_for_write() as connection:
        client = connection.default_channel.client  # what a publish from a request uses
        _assert_checked_and_kept_alive(client.connection_pool.connection_kwargs)
        assert server.client_kill_filter(_id=client.client_id()) == 1
        assert client.ping() is True
