"""The ASGI handler's pool of request threads (config/handlers.py)."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from django.core.signals import request_finished, request_started

from config.handlers import get_asgi_application
from config.middleware import RequestIdMiddleware
from tests.conftest import ApiClient
from tests.factories import make_tenant
from tests.live import ROOT, environment
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


class CountingExecutor(ThreadPoolExecutor):
    """A request thread that counts the calls the event loop hands it."""

    def __init__(self):
        super().__init__(max_workers=1, thread_name_prefix="request")
        self.calls = 0

    def submit(self, *args, **kwargs):
        self.calls += 1
        return super().submit(*args, **kwargs)


@pytest.mark.parametrize("path, status", [
    ("/api/v1/leads", 200),           # a DRF view
    ("/api/v1/no-such-thing", 404),   # no view: the 404 comes from the synchronous chain too
    ("/dashboard/login/", 200),       # a page: sessions and CSRF run as well
])
def test_a_sync_view_is_one_call_on_its_request_thread(transactional_db, path, status):
    """``request_started``, middleware, view and rendering together, then
    ``response.close()``: two calls where Django's async path makes four or more."""
    kit = make_tenant("Pool Inc")
    handler = get_asgi_application()
    executor = CountingExecutor()
    handler._idle.append(executor)

    async def get():
        transport = httpx.ASGITransport(app=handler)
        async with httpx.AsyncClient(transport=transport, base_url="https://testserver") as client:
            return await client.get(path, headers=kit.auth("read"))

    with LoopClient() as loop:  # closes each request's connection at its end, as daphne does
        response = loop.run(get())
    executor.shutdown()
    assert response.status_code == status, response.text
    assert executor.calls == 2
    assert handler._idle == [executor]  # lent again to the next request


@pytest.fixture
def middleware_threads(monkeypatch):
    """The thread ``RequestIdMiddleware`` starts each request on."""
    threads: list[threading.Thread] = []
    start = RequestIdMiddleware._start

    def record(self, request):
        threads.append(threading.current_thread())
        return start(self, request)

    monkeypatch.setattr(RequestIdMiddleware, "_start", record)
    return threads


def test_a_stream_keeps_its_middleware_on_the_event_loop(transactional_db, middleware_threads):
    kit = make_tenant("Pool Inc")
    with LoopClient() as client:
        plain = client.post("/api/v1/chat", json={"message": "Hi", "visitorId": "v1"},
                            headers=kit.auth("write"))
        stream = client.post("/api/v1/chat", json={"message": "Hi", "visitorId": "v2",
                                                   "stream": True},
                             headers={**kit.auth("write"), "Accept": "text/event-stream"})
    assert plain.status_code == 200 and stream.status_code == 200
    assert b"event: message_end" in stream.content
    plain_thread, stream_thread = middleware_threads
    assert plain_thread.name.startswith("request")  # the one-call path
    assert stream_thread.name == "asgi-loop"  # Django's async path, on the loop


def test_the_answer_does_not_wait_for_the_close(transactional_db):
    """``response.close()`` (``request_finished``: the connection back to its pool, the rate
    limiter's slot) runs on the request's thread after the answer is sent, and the event loop
    does not wait for it."""
    kit = make_tenant("Pool Inc")
    closed = threading.Event()
    closed_at: list[float] = []

    def slow_close(**kwargs):
        time.sleep(0.5)
        closed_at.append(time.perf_counter())
        closed.set()

    first_closed = threading.Event()

    def first_close(**kwargs):
        first_closed.set()

    with LoopClient() as client:
        request_finished.connect(first_close)
        try:
            assert client.get("/api/v1/leads", headers=kit.auth("read")).status_code == 200
            assert first_closed.wait(5)
        finally:
            request_finished.disconnect(first_close)
        request_finished.connect(slow_close)
        try:
            response = client.get("/api/v1/leads", headers=kit.auth("read"))
            answered_at = time.perf_counter()
            assert closed.wait(5)
        finally:
            request_finished.disconnect(slow_close)
    assert response.status_code == 200
    assert answered_at < closed_at[0]


@pytest.mark.live
def test_the_loaded_application_is_out_of_the_cycle_collectors_reach():
    """Everything alive once the application is loaded (the URL conf and its views included)
    is frozen: the collector's oldest generation no longer walks it at every full collection."""
    script = (
        "import gc, os\n"
        "os.environ['DJANGO_SETTINGS_MODULE'] = 'config.settings'\n"
        "import config.asgi\n"
        "from django.urls import get_resolver\n"
        "print(gc.get_freeze_count(), len(gc.get_objects(2)), get_resolver()._populated)\n"
    )
    result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True,
                            text=True, timeout=60, env=environment({"DATABASE_URL": None}))
    assert result.returncode == 0, result.stderr
    frozen, old, populated = result.stdout.split()
    assert int(frozen) > 100_000
    assert int(old) < int(frozen) // 20
    assert populated == "True"
