"""Pages the service serves itself: the home page, the error reference, and the error handlers
that keep the surface's envelope even when a failure happens outside the API views."""

from __future__ import annotations

import functools
import logging
import sys

from django.conf import settings
from django.core.exceptions import PermissionDenied, SuspiciousOperation
from django.http import Http404, HttpResponse
from django.shortcuts import render
from django.template.loader import render_to_string
from django.views import defaults

from config.api.errors import UNAVAILABLE_RETRY_SECONDS, json_error, surface_of, unreachable
from config.demo import demo_tenant
from tenants.selectors import tenant_by_public_id

logger = logging.getLogger("salesagent.outages")

ERROR_CODES = [
    ("invalid_request", 400, "The body is malformed JSON, a required field is missing, or a field "
     "or query parameter has a bad format. Also used with 405 (method not allowed), 413 (body too "
     "large) and 415 (unsupported media type). details lists each field."),
    ("unauthorized", 401, "The API key is missing, malformed, unknown, revoked, or past the 24-hour "
     "grace period that follows a rotation."),
    ("forbidden", 403, "The key's scope lacks the operation (read: GET; write: GET, POST, PATCH; "
     "admin: all), or a v1 request came over plain HTTP."),
    ("not_found", 404, "The resource does not exist, belongs to another tenant or to the other "
     "mode (live/test), or the id has the wrong prefix or shape. Also unknown paths."),
    ("conflict", 409, "The request conflicts with existing data, for example a lead email already "
     "in use (the body carries existingLeadId), or a request with the same Idempotency-Key is "
     "still being processed."),
    ("unprocessable", 422, "Valid JSON that fails a semantic rule: a reference to a user that is "
     "not in the tenant, an analytics range over 365 days or a start after the end; or an "
     "Idempotency-Key reused with a different request."),
    ("rate_limit_exceeded", 429, "A rate limit was reached (per minute, per day, per endpoint, per "
     "scope or concurrent requests of the API key; the message names it). The body carries "
     "retryAfter (seconds) and limit; the X-RateLimit-RetryAfter and Retry-After headers repeat "
     "retryAfter, and X-RateLimit-Limit, -Remaining, -Reset and -Policy describe the limit."),
    ("internal_error", 500, "An unexpected failure. Retry with backoff; the body and the "
     "X-Request-Id header carry the request id to quote."),
    ("bad_gateway", 502, "The language-model provider answered with an error."),
    ("service_unavailable", 503, "The service or one of its components is down (the database, "
     "the cache or the task queue: the Retry-After header says when to try again, the message "
     "which one), or the tenant chose a language-model provider without configuring its key."),
    ("gateway_timeout", 504, "The language-model provider did not answer in time."),
]


# Browsers ask every site for /favicon.ico: a day in their cache, and every page has its icon.
FAVICON_CACHE_CONTROL = "public, max-age=86400"


def home(request):
    """``/``: where a person goes next (the dashboard; the demo page where ``make run`` made its
    tenant) and the developers' references."""
    return render(request, "home.html", {"demo": demo_tenant() is not None})


@functools.cache
def _favicon() -> bytes:
    return (settings.BASE_DIR / "static" / "site" / "favicon.ico").read_bytes()


def favicon(request):
    """``/favicon.ico``: the service's icon (a chat bubble, 32×32), cached for a day."""
    response = HttpResponse(_favicon(), content_type="image/x-icon")
    response["Cache-Control"] = FAVICON_CACHE_CONTROL
    return response


def demo(request):
    """``/demo/``: the widget of the demo tenant (or of ``?tenant=<public id>``) on an ordinary
    page, embedded as a customer's site embeds it. The page is the service's own origin, which
    needs no allowed origin. No such tenant: a 404 page that says what to do, never the debug
    page."""
    public_id = request.GET.get("tenant")
    tenant = tenant_by_public_id(public_id) if public_id is not None else demo_tenant()
    if tenant is None:
        return render(request, "demo.html", {"asked": public_id}, status=404)
    return render(request, "demo.html", {
        "tenant": tenant, "base_url": request.build_absolute_uri("/").rstrip("/")})


def error_reference(request):
    return render(request, "docs/errors.html", {"codes": ERROR_CODES})


def bad_request(request, exception=None):
    if surface := surface_of(request.path):
        return json_error(request, exception or SuspiciousOperation(), surface)
    return defaults.bad_request(request, exception)


def permission_denied(request, exception=None):
    if surface := surface_of(request.path):
        return json_error(request, PermissionDenied(), surface)
    return defaults.permission_denied(request, exception)


def page_not_found(request, exception=None):
    if surface := surface_of(request.path):
        return json_error(request, Http404(), surface)
    return defaults.page_not_found(request, exception)


def server_error(request):
    # Django calls this while handling the exception: the answer is that exception's (a
    # database that cannot be reached is a 503, whatever raised it).
    failure = sys.exception()
    if surface := surface_of(request.path):
        return json_error(request, failure or RuntimeError("unhandled error outside a view"),
                          surface)
    if what := unreachable(failure):
        return unavailable_page(what, failure)
    return defaults.server_error(request)


def unavailable_page(what: str, failure: BaseException) -> HttpResponse:
    """The dashboard's (and every page's) answer while a server it needs cannot be reached: 503
    with ``Retry-After``, a page in the dashboard's style that says to try again, never
    Django's plain 500 (docs/security.md, "Under faults"). Rendered from the template alone:
    neither the request's session, user nor anything else that reads the database."""
    logger.warning("Answered the 503 page: the %s cannot be reached (%s: %s)", what,
                   type(failure).__name__, failure)
    wait = UNAVAILABLE_RETRY_SECONDS
    response = HttpResponse(render_to_string("dashboard/unavailable.html",
                                             {"what": what, "retry_after": wait}), status=503)
    response["Retry-After"] = str(wait)
    # Logged above, as the API logs its 503s: Django would log it again as an error, with
    # the traceback of an outage that the breaker has reported already.
    response._has_been_logged = True
    return response
