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

Every request to a synchronous view (every DRF view, most pages) is answered in one call on
its request thread, as under WSGI: the middleware (loaded a second time, for synchronous
calls; all of them are sync-capable), the view and the rendering together. Django's async
path would make that three calls or more (the view, its rendering, any middleware hook that
must not run on the event loop), each a round trip between the loop and the thread of about
0.12 ms. Async views and requests for a stream (``Accept: text/event-stream``) keep Django's
path. Either way the response is sent, a disconnect watched for and ``response.close()``
called by Django's handler as before.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from asgiref.sync import AsyncToSync, ThreadSensitiveContext, iscoroutinefunction, sync_to_async
from django.core.handlers.asgi import ASGIHandler
from django.core.handlers.base import BaseHandler
from django.http import FileResponse
from django.urls import Resolver404, get_resolver

# Threads kept for later requests; a burst beyond this many concurrent requests gets threads
# of its own, shut down when it is over.
IDLE_THREADS = 64


class PooledASGIHandler(ASGIHandler):
    def __init__(self) -> None:
        super().__init__()
        self._idle: list[ThreadPoolExecutor] = []
        self._sync = BaseHandler()
        self._sync.load_middleware(is_async=False)

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

    async def run_get_response(self, request):
        if _async_view(request):
            return await super().run_get_response(request)
        response = await sync_to_async(self._sync.get_response, thread_sensitive=True)(request)
        response._handler_class = self.__class__
        if isinstance(response, FileResponse):
            response.block_size = self.chunk_size
        return response


def _async_view(request) -> bool:
    """Whether the request goes to an async view, or asks for a stream (Server-Sent Events):
    a stream's middleware run on the event loop, as Django runs them, so that nothing
    synchronous stands between the async generator and the client. Unknown paths are answered
    by the middleware (the trailing-slash redirect) or as 404 on the synchronous path."""
    if "text/event-stream" in request.headers.get("Accept", ""):
        return True
    try:
        match = get_resolver(getattr(request, "urlconf", None)).resolve(request.path_info)
    except Resolver404:
        return False
    return iscoroutinefunction(match.func)


def get_asgi_application() -> PooledASGIHandler:
    import django

    django.setup(set_prefix=False)
    return PooledASGIHandler()

