"""Requests through the project's ASGI application as daphne serves them, for benchmarks and
for tests of the serving path itself.

The test suite's ``ApiClient`` runs each request on a fresh event loop (``async_to_sync``) and
validates every response against the OpenAPI schema: right for tests, but both costs land in a
timing. Here one event loop lives in its own thread for the whole benchmark, one HTTP client is
kept on it, and nothing is checked but the status: what is timed is the ASGI application with
every middleware, the sync views on Django's thread-sensitive executor, and nothing else.
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import httpx
from django.core.signals import request_finished, request_started
from django.db import close_old_connections


class LoopClient:
    """Use as a context manager: while it is open, each request closes its database connection
    at its end as under daphne (the test suite turns that off so that a test's transaction
    outlives its requests; Django's ASGI handler runs each request on a thread of its own, so
    without it every request would keep a connection)."""

    def __enter__(self) -> LoopClient:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()
        request_started.disconnect(close_old_connections)
        request_finished.disconnect(close_old_connections)

    def __init__(self, base_url: str = "https://testserver"):
        from config.asgi import application

        self._application = application
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="asgi-loop",
                                        daemon=True)
        self._thread.start()
        self._client = self.run(self._open(application, base_url))

    async def _open(self, application, base_url: str) -> httpx.AsyncClient:
        return httpx.AsyncClient(transport=httpx.ASGITransport(app=application),
                                 base_url=base_url, timeout=120)

    def run(self, coroutine) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result()

    def request(self, method: str, path: str, **kwargs) -> httpx.Response:
        return self.run(self._client.request(method, path, **kwargs))

    def timed(self, method: str, path: str, headers: dict[str, str] | None = None,
              ) -> tuple[int, bytes, float]:
        """Calls the ASGI application as a server calls it, without an HTTP client: (status,
        body, seconds from the call to the response's last byte, measured on the event loop).
        For benchmarks, where an HTTP client's own work (building the request, parsing the
        response: 0.2-0.5 ms on the benchmark machine) is not the service's."""
        raw_path, _, query = path.partition("?")
        scope = {
            "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
            "method": method, "scheme": "https", "path": raw_path,
            "raw_path": raw_path.encode(), "query_string": query.encode(), "root_path": "",
            "headers": [(b"host", b"testserver"),
                        *((k.lower().encode(), v.encode()) for k, v in (headers or {}).items())],
            "client": ("127.0.0.1", 50000), "server": ("testserver", 443),
        }

        async def call() -> tuple[int, bytes, float]:
            request_sent = asyncio.Event()
            messages: list[dict] = []

            async def receive() -> dict:
                if not request_sent.is_set():
                    request_sent.set()
                    return {"type": "http.request", "body": b"", "more_body": False}
                await asyncio.Event().wait()  # the client never leaves
                raise AssertionError("unreachable")

            async def send(message: dict) -> None:
                messages.append(message)

            started = time.perf_counter()
            await self._application(scope, receive, send)
            elapsed = time.perf_counter() - started
            status = next(m["status"] for m in messages if m["type"] == "http.response.start")
            body = b"".join(m.get("body", b"") for m in messages
                            if m["type"] == "http.response.body")
            return status, body, elapsed

        return self.run(call())

    def gather(self, requests: list[tuple[str, str, dict]]) -> list[httpx.Response]:
        """Sends (method, path, keyword arguments) requests at once; their responses in order."""
        async def send_all():
            return await asyncio.gather(*(self._client.request(method, path, **kwargs)
                                          for method, path, kwargs in requests))

        return self.run(send_all())

    def get(self, path: str, **kwargs) -> httpx.Response:
        return self.request("GET", path, **kwargs)

    def post(self, path: str, **kwargs) -> httpx.Response:
        return self.request("POST", path, **kwargs)

    def close(self) -> None:
        self.run(self._client.aclose())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()
