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

    def timed(self, method: str, path: str, **kwargs) -> tuple[httpx.Response, float]:
        """A request and its duration in seconds, measured on the event loop: from the client's
        call to the response's last byte, without the wake-up of the thread that waits here."""
        async def send():
            started = time.perf_counter()
            response = await self._client.request(method, path, **kwargs)
            return response, time.perf_counter() - started

        return self.run(send())

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
