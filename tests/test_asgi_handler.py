"""The ASGI handler's pool of request threads (config/handlers.py)."""

from __future__ import annotations

import threading

import pytest
from django.core.signals import request_started

from tests.conftest import ApiClient
from tests.factories import make_tenant
from tests.loop_client import LoopClient


@pytest.fixture
def request_threads():
    """The thread each request's sync code runs on (``request_started`` is sent there)."""
    threads: list[threading.Thread] = []

    def record(**kwargs):
        threads.append(threading.current_thread())

    request_started.connect(record)
    yield threads
    request_started.disconnect(record)


def test_sequential_requests_reuse_one_pooled_thread(transactional_db, request_threads):
    kit = make_tenant("Pool Inc")
    with LoopClient() as client:
        for _ in range(5):
            r = client.get("/api/v1/leads", headers=kit.auth("read"))
            assert r.status_code == 200
    assert len(request_threads) == 5
    assert len(set(request_threads)) == 1
    assert request_threads[0] is not threading.main_thread()
    assert request_threads[0].name.startswith("request")


def test_concurrent_requests_get_threads_of_their_own(transactional_db, request_threads):
    kit = make_tenant("Pool Inc")
    with LoopClient() as client:
        # Stamps the key's last use first: the concurrent requests then only read (the test
        # database on SQLite is in memory, where a write locks whole tables).
        assert client.get("/api/v1/leads", headers=kit.auth("read")).status_code == 200
        responses = client.gather([("GET", "/api/v1/leads", {"headers": kit.auth("read")})] * 4)
    assert [r.status_code for r in responses] == [200] * 4
    assert len(request_threads) == 5
    assert len(set(request_threads[1:])) == 4


def test_inside_async_to_sync_sync_code_stays_on_the_calling_thread(db, request_threads):
    # The suite's in-process client: the test's transaction lives on this thread.
    ApiClient().get("/api/health")
    assert request_threads == [threading.current_thread()]
