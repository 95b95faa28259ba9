"""Project-wide middleware. Every middleware here is async-capable, so that requests under
daphne pass through without thread hops.

A request to a sync view runs the whole chain synchronously, in one call on its request thread
(``config/handlers.py``). The async chain serves async views and streams; there Django's own
middleware, ``MiddlewareMixin`` classes, would run each hook on a worker thread: two thread
hops per middleware and request. Two wrappers remove the hops that do no work
(docs/performance.md):

- ``InlineMiddleware`` runs hooks that only read the request and set headers (security headers,
  the trailing slash, X-Frame-Options) on the event loop itself;
- ``PagesOnlyMiddleware`` keeps the middleware that serve the browser pages (sessions, CSRF,
  sign-in, messages, the Content-Security-Policy) off the REST API, on both chains: its views
  authenticate with keys, are exempt from CSRF (DRF's views are ``csrf_exempt``), never touch a
  session and answer JSON, which no browser renders as a page. One of them whose hooks only set
  headers (``inline = True``) runs them on the event loop as well.
"""

from __future__ import annotations

import contextvars
import logging
import re
import time
import uuid

from asgiref.sync import iscoroutinefunction, markcoroutinefunction, sync_to_async
from django.utils.module_loading import import_string

from config import logs

request_log = logging.getLogger("salesagent.requests")

_INBOUND_ID = re.compile(r"^[A-Za-z0-9._-]{8,64}$")


def new_request_id() -> str:
    return f"req_{uuid.uuid4().hex}"


class RequestIdMiddleware:
    """Gives every request an id, in the logs and in the ``X-Request-Id`` response header, and
    opens the request's log scope (``config.logs``): each line logged while it runs carries the
    id, the surface, the route template once the URL is resolved and the tenant once it is known.

    A well-formed inbound ``X-Request-Id`` (from a load balancer) is kept so that one id follows
    the request across hops. It is the id that a 500's envelope quotes (``requestId``) and that
    the Celery tasks the request queues carry (``config/celery.py``). With ``LOG_FORMAT=json``
    the request ends with one line of its own (``salesagent.requests``: method, route, status,
    duration), in place of daphne's access line (``config.serving``).
    """

    sync_capable = True
    async_capable = True

    def __init__(self, get_response):
        self.get_response = get_response
        self.is_async = iscoroutinefunction(get_response)
        if self.is_async:
            markcoroutinefunction(self)
            # Django collects view hooks from the instance; an async one costs no thread hop.
            self.process_view = self._aprocess_view
        from django.conf import settings

        self.log_requests = settings.LOG_FORMAT == "json"

    def _start(self, request) -> contextvars.Token:
        inbound = request.headers.get("X-Request-Id", "")
        request.request_id = inbound if _INBOUND_ID.match(inbound) else new_request_id()
        request.surface = logs.surface_of(request.path_info)  # the metrics' label too
        request._log_started = time.perf_counter()
        return logs.open_scope(request_id=request.request_id, surface=request.surface)

    def _finish(self, request, response, token) -> None:
        try:
            response["X-Request-Id"] = request.request_id
            if self.log_requests:
                request_log.info(
                    "%s %s %s", request.method, logs.current("route") or "-",
                    response.status_code, extra={
                        "method": request.method, "status": response.status_code,
                        "duration_ms": round((time.perf_counter() - request._log_started) * 1000,
                                             1)})
        finally:
            # A stream's body is made after this returns, by code that logs too: its scope stays
            # open in the request's own context (a task of its own under daphne).
            if not response.streaming:
                logs.close_scope(token)

    def __call__(self, request):
        if self.is_async:
            return self.__acall__(request)
        token = self._start(request)
        try:
            response = self.get_response(request)
        except BaseException:
            logs.close_scope(token)
            raise
        self._finish(request, response, token)
        return response

    async def __acall__(self, request):
        token = self._start(request)
        try:
            response = await self.get_response(request)
        except BaseException:
            logs.close_scope(token)
            raise
        self._finish(request, response, token)
        return response

    def process_view(self, request, view_func, view_args, view_kwargs):
        _bind_route(request)

    async def _aprocess_view(self, request, view_func, view_args, view_kwargs):
        # Not self.process_view: on the async path that name is this coroutine function.
        _bind_route(request)


def _bind_route(request) -> None:
    if request.resolver_match is not None:
        logs.bind(route=logs.route_template(request.resolver_match))


# --- Django's middleware without needless thread hops -----------------------------------------

API_PREFIX = "/api/"


class _Wrapper:
    """A middleware built around one of Django's (``wrapped``, a dotted path: this module is
    imported by the logging settings, before the apps are loaded), on the same
    ``get_response``."""

    sync_capable = True
    async_capable = True
    wrapped: str

    def __init__(self, get_response):
        self.get_response = get_response
        self.inner = import_string(self.wrapped)(get_response)
        self.is_async = iscoroutinefunction(get_response)
        if self.is_async:
            markcoroutinefunction(self)

    def _refuse_hooks(self, *names: str) -> None:
        found = [name for name in names if hasattr(self.inner, name)]
        if found:
            raise TypeError(f"{self.wrapped} has {', '.join(found)}, which "
                            f"{type(self).__name__} does not run")

    async def _run_inline(self, request):
        """The wrapped middleware's request and response hooks, called on the event loop."""
        response = None
        if hasattr(self.inner, "process_request"):
            response = self.inner.process_request(request)
        response = response or await self.get_response(request)
        if hasattr(self.inner, "process_response"):
            response = self.inner.process_response(request, response)
        return response


class InlineMiddleware(_Wrapper):
    """Runs a middleware's ``process_request`` and ``process_response`` on the event loop.

    Only for hooks that do no I/O: they read the request and settings and set headers. Were one
    to touch the database, Django would raise ``SynchronousOnlyOperation`` rather than block the
    loop. Under WSGI (tests with Django's client) the wrapped middleware runs as it is.
    """

    def __init__(self, get_response):
        super().__init__(get_response)
        self._refuse_hooks("process_view", "process_exception", "process_template_response")

    def __call__(self, request):
        if self.is_async:
            return self.__acall__(request)
        return self.inner(request)

    async def __acall__(self, request):
        return await self._run_inline(request)


class PagesOnlyMiddleware(_Wrapper):
    """Runs a middleware for every path but the REST API's (``/api/``), where it costs one
    prefix test. With ``inline``, its hooks run on the event loop, under
    ``InlineMiddleware``'s rule: they do no I/O (and it may have no view hook)."""

    inline = False

    def __init__(self, get_response):
        super().__init__(get_response)
        self._refuse_hooks("process_exception", "process_template_response")
        if self.inline:
            self._refuse_hooks("process_view")
        if hasattr(self.inner, "process_view"):
            # Django collects view hooks from the instance: skip them on the API too.
            self.process_view = self._aprocess_view if self.is_async else self._process_view

    def __call__(self, request):
        if self.is_async:
            return self.__acall__(request)
        if request.path_info.startswith(API_PREFIX):
            return self.get_response(request)
        return self.inner(request)

    async def __acall__(self, request):
        if request.path_info.startswith(API_PREFIX):
            return await self.get_response(request)
        if self.inline:
            return await self._run_inline(request)
        return await self.inner(request)

    def _process_view(self, request, view_func, view_args, view_kwargs):
        if request.path_info.startswith(API_PREFIX):
            return None
        return self.inner.process_view(request, view_func, view_args, view_kwargs)

    async def _aprocess_view(self, request, view_func, view_args, view_kwargs):
        if request.path_info.startswith(API_PREFIX):
            return None
        return await sync_to_async(self.inner.process_view, thread_sensitive=True)(
            request, view_func, view_args, view_kwargs)


class SecurityHeadersMiddleware(InlineMiddleware):
    wrapped = "django.middleware.security.SecurityMiddleware"


class TrailingSlashMiddleware(InlineMiddleware):
    wrapped = "django.middleware.common.CommonMiddleware"


class FrameOptionsMiddleware(InlineMiddleware):
    wrapped = "django.middleware.clickjacking.XFrameOptionsMiddleware"


class PagesSessionMiddleware(PagesOnlyMiddleware):
    wrapped = "django.contrib.sessions.middleware.SessionMiddleware"


class PagesCsrfMiddleware(PagesOnlyMiddleware):
    wrapped = "django.middleware.csrf.CsrfViewMiddleware"


class PagesAuthenticationMiddleware(PagesOnlyMiddleware):
    wrapped = "django.contrib.auth.middleware.AuthenticationMiddleware"


class PagesMessageMiddleware(PagesOnlyMiddleware):
    wrapped = "django.contrib.messages.middleware.MessageMiddleware"


class PagesContentSecurityPolicyMiddleware(PagesOnlyMiddleware):
    """django-csp's header on the pages (config/settings/csp.py); none on the JSON API, which
    then does no CSP work at all. Its hooks make a nonce lazily and write one header."""

    wrapped = "csp.middleware.CSPMiddleware"
    inline = True
