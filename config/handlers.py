"""Django's ASGI handler with a pool of request threads.

Django runs each request's sync code (the DRF views, the ORM) on a thread of its own: its
handler enters ``ThreadSensitiveContext()``, which starts a new thread at the request's first
sync call and, at its end, another thread to join the first: two thread starts per request,
about a millisecond (docs/performance.md). Here each request borrows a
single-thread executor from a pool instead, as a WSGI server's thread pool would: one request
at a time per thread, the thread kept for the next one. Request-scoped state lives in
contextvars and on the request, and each request's database connection goes back to the pool
at ``request_finished`` (``CONN_MAX_AGE`` is 0), so a reused thread carries nothing over.

Inside ``async_to_sync`` (the test suite's in-process client) no thread is lent: sync code
runs on the calling thread, whose database transaction the test owns, as Django would run it.

Every request to a synchronous view (every DRF view, most pages) is answered as a WSGI server
would answer it: ``request_started``, the middleware (loaded a second time, for synchronous
calls; all of them are sync-capable), the view and the rendering in one call on its request
thread, then, once the response is sent, ``response.close()`` (``request_finished``) in a
second, which the event loop hands the thread without waiting for it. Django's async path
makes four round trips or more (the signal, the view, its rendering, each middleware hook that
must not run on the event loop, the close), each between the loop and the thread, about
0.12 ms, more on a contended machine; here there is one. Async views and requests for
a stream (``Accept: text/event-stream``) keep Django's path. A streamed response from a sync
view is sent until it ends or the client leaves, as Django does, and no faster than the client
reads it (``_paced``: daphne would otherwise keep what the socket cannot take in memory).

Whatever its framing, a body is read whole and at most ``DATA_UPLOAD_MAX_MEMORY_SIZE`` of it is
kept: a larger one, with a Content-Length or ``Transfer-Encoding: chunked``, is answered 413 in
its surface's envelope before any view runs, and so is a request that declares a Content-Length
over the limit, whatever body came with it (daphne hands such a request over at the end of its
headers, without its body: config/serving.py). A chunked body gets the Content-Length it arrived
with, since DRF reads no body from a request that states none.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import logging
import tempfile
from concurrent.futures import ThreadPoolExecutor

from asgiref.sync import AsyncToSync, ThreadSensitiveContext, iscoroutinefunction, sync_to_async
from django.conf import settings
from django.core import signals
from django.core.exceptions import RequestAborted, RequestDataTooBig
from django.core.handlers.asgi import ASGIHandler, get_script_prefix
from django.core.handlers.base import BaseHandler
from django.http import FileResponse, HttpResponse
from django.http.response import HttpResponseBase
from django.urls import Resolver404, get_resolver, set_script_prefix

logger = logging.getLogger("django.request")

# The request thread lent to the request being handled.
_executor: contextvars.ContextVar[ThreadPoolExecutor] = contextvars.ContextVar("request_executor")

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
        token = _executor.set(executor)
        try:
            async with ThreadSensitiveContext(executor=executor):
                await self.handle(scope, receive, send)
            finished = True
        finally:
            _executor.reset(token)
            if finished and len(self._idle) < IDLE_THREADS:
                self._idle.append(executor)
            else:
                # Cancelled (the client went away): its thread may still be running the
                # request's sync code, so it is not lent again.
                executor.shutdown(wait=False)

    async def read_body(self, receive):
        """The whole body, kept up to the size limit: past it, the rest is read and dropped and
        the file is marked ``overflowed`` (``create_request`` answers 413)."""
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        body_file = tempfile.SpooledTemporaryFile(  # noqa: SIM115 - the request closes it
            max_size=settings.FILE_UPLOAD_MAX_MEMORY_SIZE, mode="w+b")
        body_file.size, body_file.overflowed = 0, False
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                body_file.close()
                raise RequestAborted()
            chunk = message.get("body", b"")
            body_file.size += len(chunk)
            if body_file.size > limit:
                if not body_file.overflowed:
                    body_file.overflowed = True
                    body_file.truncate(0)
            elif chunk:
                body_file.write(chunk)
            if not message.get("more_body", False):
                break
        body_file.seek(0)
        return body_file

    def create_request(self, scope, body_file):
        request, error_response = super().create_request(scope, body_file)
        if request is None:
            return request, error_response
        if getattr(body_file, "overflowed", False) or _declared_length(request) > \
                settings.DATA_UPLOAD_MAX_MEMORY_SIZE:
            return None, _too_large(request)
        if "CONTENT_LENGTH" not in request.META and getattr(body_file, "size", 0):
            request.META["CONTENT_LENGTH"] = str(body_file.size)
        return request, None

    async def handle(self, scope, receive, send):
        if _async_path(scope):
            return await super().handle(scope, receive, send)
        try:
            body_file = await self.read_body(receive)
        except RequestAborted:
            return
        set_script_prefix(get_script_prefix(scope))
        response = await sync_to_async(self._respond, thread_sensitive=True)(scope, body_file)
        if response.streaming:
            await self._send_until_disconnect(response, send, receive)
        else:
            with contextlib.suppress(OSError):  # the client left: nobody to tell
                await self.send_response(response, send)
        # request_finished (the database connection back to its pool, the rate limiter's
        # slot) on the request's thread, which runs it before the next request lent that
        # thread; nothing here waits for it, so it costs the event loop no wake-up.
        executor = _executor.get(None)
        if executor is None:  # inside async_to_sync: the calling thread, as Django does
            await sync_to_async(_close)(response, body_file)
        else:
            executor.submit(contextvars.copy_context().run, _close, response, body_file)

    def _respond(self, scope, body_file) -> HttpResponseBase:
        """The response to a request for a sync view, in one call on its thread."""
        signals.request_started.send(sender=self.__class__, scope=scope)
        request, error_response = self.create_request(scope, body_file)
        if request is None:
            return error_response
        response = self._sync.get_response(request)
        response._handler_class = self.__class__
        if isinstance(response, FileResponse):
            response.block_size = self.chunk_size
        return response

    async def _send_until_disconnect(self, response, send, receive) -> None:
        """A stream is sent until it ends or the client leaves, as Django's handler does: a
        departure cancels the sending, which closes the stream's generator. It is sent no
        faster than the client reads it (``_paced``)."""
        paced, release = _paced(send)
        sending = asyncio.create_task(self.send_response(response, paced))
        listening = asyncio.create_task(self.listen_for_disconnect(receive))
        try:
            await asyncio.wait([sending, listening], return_when=asyncio.FIRST_COMPLETED)
            for task in (listening, sending):
                if not task.done():
                    task.cancel()
                with contextlib.suppress(asyncio.CancelledError, RequestAborted):
                    await task
        finally:
            release()


class _Pacer:
    """A Twisted push producer (``IPushProducer``) for one streamed response: daphne's HTTP
    channel pauses it while the socket's send buffer is full and resumes it once drained."""

    def __init__(self) -> None:
        self.ready = asyncio.Event()
        self.ready.set()

    def pauseProducing(self) -> None:  # noqa: N802 - Twisted's interface
        self.ready.clear()

    def resumeProducing(self) -> None:  # noqa: N802
        self.ready.set()

    def stopProducing(self) -> None:  # noqa: N802
        self.ready.set()


def _paced(send):
    """``send``, waiting before each chunk of a body while the client has not taken the last
    ones, and a function that ends the pacing.

    daphne hands a body's chunks to Twisted, which keeps what the socket cannot take yet in
    memory, without a word to the application: a client slower than the database (a phone, a
    long CSV export) would leave the whole stream in the server's memory. Twisted tells a
    producer registered on the request when its buffer is full and when it has drained; daphne
    registers none, so this does, on the request that daphne's ``send`` is bound to (``send``
    is ``functools.partial(server.handle_reply, request)``). Under any other server (the tests'
    in-process client), ``send`` is returned as it is."""
    request = next(iter(getattr(send, "args", ())), None)
    if not callable(getattr(request, "registerProducer", None)) or getattr(
            request, "producer", None) is not None:
        return send, lambda: None
    pacer = _Pacer()
    request.registerProducer(pacer, True)

    def release() -> None:
        # Before the request finishes (Twisted logs a producer left registered), and once the
        # connection is gone (the request has no channel any more).
        if request.producer is pacer and getattr(request, "channel", None) is not None:
            request.unregisterProducer()

    async def paced(message) -> None:
        if message["type"] == "http.response.body":
            await pacer.ready.wait()
            if not message.get("more_body", False):
                release()
        await send(message)

    return paced, release


def _close(response, body_file) -> None:
    try:
        response.close()
    except Exception:
        logger.exception("Closing the response to a request failed")
    finally:
        body_file.close()
        _forget_content(response)


def _forget_content(response) -> None:
    """Lets go of a sent DRF response's data (a page of leads: thousands of objects) now.

    DRF's view, request and response point at each other (``view.response``,
    ``response.renderer_context["view"]``, ``request.parser_context["view"]``), so a request
    is freed by the cycle collector, not when it ends. The data, the most of it, is then
    freed by reference counting at once, and the collector runs far less often
    (docs/performance.md, "The serving path")."""
    if getattr(response, "data", None) is not None:
        response.data = None
    if getattr(response, "renderer_context", None) is not None:
        response.renderer_context = None


def _declared_length(request) -> int:
    """The request's Content-Length; 0 when it states none or none that is a number (as Django
    reads it)."""
    try:
        return int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return 0


def _too_large(request) -> HttpResponse:
    from config.api.errors import json_error, surface_of

    if surface := surface_of(request.path):
        return json_error(request, RequestDataTooBig(), surface)
    return HttpResponse("Request body too large.", status=413, content_type="text/plain")


def _async_path(scope) -> bool:
    """Whether the request goes to an async view, or asks for a stream (Server-Sent Events):
    a stream's middleware run on the event loop, as Django runs them, so that nothing
    synchronous stands between the async generator and the client. Unknown paths are answered
    by the middleware (the trailing-slash redirect) or as 404 on the synchronous path."""
    for name, value in scope.get("headers", ()):
        if name == b"accept" and b"text/event-stream" in value:
            return True
    prefix = get_script_prefix(scope)
    return _async_view(settings.ROOT_URLCONF,
                       scope["path"].removeprefix(prefix) if prefix else scope["path"])


@functools.lru_cache(maxsize=4096)
def _async_view(urlconf: str, path: str) -> bool:
    """Whether ``path`` resolves to an async view: a fact of the URL conf, which does not change
    while the process runs, so each path is resolved on the event loop once."""
    try:
        match = get_resolver(urlconf).resolve(path)
    except Resolver404:
        return False
    return iscoroutinefunction(match.func)


def get_asgi_application() -> PooledASGIHandler:
    import django

    django.setup(set_prefix=False)
    return PooledASGIHandler()

