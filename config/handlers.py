"""Django's ASGI handler with a pool of request threads.

Django runs each request's sync code (the DRF views, the ORM) on a thread of its own: its
handler enters ``ThreadSensitiveContext()``, which starts a new thread at the request's first
sync call and, at its end, another thread to join the first. On the benchmark machine that is
about a millisecond per request (docs/performance.md). Here each request borrows a
single-thread executor from a pool instead, as a WSGI server's thread pool would: one request
at a time per thread, the thread kept for the next one. Request-scoped state lives in
contextvars and on the request, and each request's database connection goes back to the pool
at ``request_finished`` (``CONN_MAX_AGE`` is 0), so a reused thread carries nothing over.

Inside ``async_to_sync`` (the test suite's in-process client) Django's own behaviour is kept:
sync code then runs on the calling thread, whose database transaction the test owns.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from asgiref.sync import AsyncToSync, ThreadSensitiveContext
from django.core.handlers.asgi import ASGIHandler

# Threads kept for later requests; a burst beyond this many concurrent requests gets threads
# of its own, shut down when it is over.
IDLE_THREADS = 64


class PooledASGIHandler(ASGIHandler):
    def __init__(self) -> None:
        super().__init__()
        self._idle: list[ThreadPoolExecutor] = []

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or getattr(AsyncToSync.executors, "current", None):
            return await super().__call__(scope, receive, send)
        executor = self._idle.pop() if self._idle else ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="request")
        finished = False
        try:
            async with ThreadSensitiveContext(executor=executor):
                await self.handle(scope, receive, send)
            finished = True
        finally:
            if finished and len(self._idle) < IDLE_THREADS:
                self._idle.append(executor)
            else:
                # Cancelled (the client went away): its thread may still be running the
                # request's sync code, so it is not lent again.
                executor.shutdown(wait=False)


def get_asgi_application() -> PooledASGIHandler:
    import django

    django.setup(set_prefix=False)
    return PooledASGIHandler()

