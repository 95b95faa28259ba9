"""The error envelope of each surface, produced in one place.

Every exception first becomes a :class:`Problem` (status, v1 code, message, field details); then
each surface renders it: v1 as ``{"error": {code, message, details?, doc_url}}``, legacy as
``{"error": "<description>"}``. Views and services never build error bodies.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig, SuspiciousOperation
from django.db import InterfaceError, OperationalError
from django.http import Http404, JsonResponse
from kombu.exceptions import OperationalError as BrokerError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError
from rest_framework import exceptions as drf
from rest_framework.response import Response

from config import logs
from core import errors as domain

logger = logging.getLogger("salesagent.api")

# v1 code -> v1 status, from the specification's error table.
V1_STATUS = {
    "invalid_request": 400,
    "unauthorized": 401,
    "forbidden": 403,
    "not_found": 404,
    "conflict": 409,
    "unprocessable": 422,
    "rate_limit_exceeded": 429,
    "internal_error": 500,
    "bad_gateway": 502,
    "service_unavailable": 503,
    "gateway_timeout": 504,
}

# The legacy surface knows fewer statuses: semantic failures are 400, provider failures 503.
LEGACY_STATUS = {**V1_STATUS, "unprocessable": 400, "bad_gateway": 503, "gateway_timeout": 503}

# DRF validation codes -> the specification's validation codes.
_DETAIL_CODES = {
    "required": "required",
    "null": "required",
    "blank": "required",
    "empty": "required",
    "max_length": "too_long",
    "min_length": "too_short",
    "max_value": "out_of_range",
    "min_value": "out_of_range",
    "max_digits": "out_of_range",
    "max_whole_digits": "out_of_range",
    "max_decimal_places": "out_of_range",
    "invalid_choice": "invalid_enum",
    "too_long": "too_long",
    "too_short": "too_short",
    "out_of_range": "out_of_range",
    "invalid_enum": "invalid_enum",
    "invalid_format": "invalid_format",
}


@dataclass
class Problem:
    status: int
    code: str
    message: str
    details: list[dict[str, str]] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)


def flatten_validation(detail: Any, prefix: str = "") -> list[dict[str, str]]:
    """DRF's nested error structure as ``[{field, code, message}]`` with dotted field paths."""
    if isinstance(detail, dict):
        return _flatten_fields(detail, prefix)
    if isinstance(detail, list):
        return _flatten_items(detail, prefix)
    code = getattr(detail, "code", None) or "invalid_format"
    return [{
        "field": prefix or "body",
        "code": _DETAIL_CODES.get(code, "invalid_format"),
        "message": str(detail),
    }]


def _flatten_fields(detail: dict, prefix: str) -> list[dict[str, str]]:
    """The errors of each field, under ``prefix.field`` (errors of the whole object under
    ``prefix``)."""
    out: list[dict[str, str]] = []
    for key, value in detail.items():
        name = "" if key in ("non_field_errors", "__all__") else str(key)
        path = f"{prefix}.{name}" if prefix and name else (prefix or name)
        out.extend(flatten_validation(value, path))
    return out


def _flatten_items(detail: list, prefix: str) -> list[dict[str, str]]:
    """A list of errors of ``prefix``, or the errors of the items of a list, under
    ``prefix[index]``."""
    out: list[dict[str, str]] = []
    for index, value in enumerate(detail):
        path = f"{prefix}[{index}]" if isinstance(value, (dict, list)) else prefix
        out.extend(flatten_validation(value, path))
    return out


def _summary(details: list[dict[str, str]], fallback: str) -> str:
    if not details:
        return fallback
    parts = [f"{d['field']}: {d['message']}" for d in details[:3]]
    more = len(details) - 3
    return "; ".join(parts) + (f" (and {more} more)" if more > 0 else "")


def to_problem(exc: Exception, *, surface: str) -> Problem:
    """What went wrong, independent of how the surface shows it."""
    if isinstance(exc, domain.ServiceError):
        return _service_problem(exc, surface=surface)
    for kinds, problem in _PROBLEMS:
        if isinstance(exc, kinds):
            return problem(exc)
    return _unexpected_problem(exc)


def _service_problem(exc: domain.ServiceError, *, surface: str) -> Problem:
    status_of = V1_STATUS if surface == "v1" else LEGACY_STATUS
    details = [d.as_dict() for d in exc.details]
    message = exc.message
    if surface == "legacy" and getattr(exc, "legacy_message", None):
        # The legacy envelope is one string: an error that names a record (a duplicate
        # lead's id) says so in the legacy form there.
        message = exc.legacy_message
    if details and isinstance(exc, (domain.InvalidRequest, domain.Unprocessable)):
        message = f"{exc.message} {_summary(details, '')}".strip()
    problem = Problem(status_of[exc.kind], exc.kind, message, details, dict(exc.extra))
    if isinstance(exc, domain.RateLimited):
        problem.headers = {"Retry-After": str(exc.retry_after),
                           "X-RateLimit-RetryAfter": str(exc.retry_after)}
    return problem


def _invalid_problem(exc: drf.ValidationError) -> Problem:
    details = flatten_validation(exc.detail)
    return Problem(400, "invalid_request", _summary(details, "The request is invalid."), details)


def _forbidden_problem(exc: Exception) -> Problem:
    message = str(getattr(exc, "detail", "") or "You do not have permission to do this.")
    return Problem(403, "forbidden", message)


def _throttled_problem(exc: drf.Throttled) -> Problem:
    wait = int(exc.wait or 1)
    return Problem(429, "rate_limit_exceeded", "Too many requests.", extra={"retryAfter": wait},
                   headers={"Retry-After": str(wait), "X-RateLimit-RetryAfter": str(wait)})


def _api_problem(exc: drf.APIException) -> Problem:
    code = "internal_error" if exc.status_code >= 500 else "invalid_request"
    return Problem(exc.status_code, code, str(exc.detail))


# A server the service depends on cannot be reached (docs/security.md, "Under faults"): both
# surfaces answer 503 with Retry-After, never a 500 or a wait for the server.
UNAVAILABLE_RETRY_SECONDS = 5
_DATABASE_DOWN = (OperationalError, InterfaceError)
_REDIS_DOWN = (RedisConnectionError, RedisTimeoutError, BrokerError)


def unreachable(exc: BaseException | None) -> str | None:
    """The server that ``exc`` says cannot be reached, as a page or a message names it; None
    for any other failure. The dashboard's pages answer these with a 503 page of their own
    (``config.views.server_error``)."""
    if isinstance(exc, _DATABASE_DOWN):
        return "database"
    if isinstance(exc, _REDIS_DOWN):
        return "cache or task queue"
    return None


def _unavailable_problem(exc: Exception) -> Problem:
    what = unreachable(exc)
    logger.warning("Answered 503: the %s cannot be reached (%s: %s)", what,
                   type(exc).__name__, exc)
    wait = UNAVAILABLE_RETRY_SECONDS
    return Problem(503, "service_unavailable",
                   f"The service is temporarily unavailable: its {what} cannot be reached. "
                   f"Retry in {wait} seconds.", headers={"Retry-After": str(wait)})


def _unexpected_problem(exc: Exception) -> Problem:
    request_id = logs.current("request_id") or "-"
    logger.error("Unhandled exception (request %s)", request_id, exc_info=exc)
    return Problem(500, "internal_error",
                   "An unexpected error occurred; retry with backoff. "
                   f"Quote request id {request_id} when reporting it.",
                   extra={"requestId": request_id})


# The exceptions of DRF and Django and the problem each one is, tried in this order: a
# subclass comes before its base (RequestDataTooBig is a SuspiciousOperation, and every DRF
# exception an APIException).
_PROBLEMS: tuple[tuple[type | tuple[type, ...], Callable[[Any], Problem]], ...] = (
    (_DATABASE_DOWN + _REDIS_DOWN, _unavailable_problem),
    (drf.ValidationError, _invalid_problem),
    (drf.ParseError,
     lambda exc: Problem(400, "invalid_request", f"Malformed request body: {exc.detail}")),
    ((drf.NotAuthenticated, drf.AuthenticationFailed),
     lambda exc: Problem(401, "unauthorized", str(exc.detail),
                         headers={"WWW-Authenticate": 'Bearer realm="api"'})),
    ((drf.PermissionDenied, DjangoPermissionDenied), _forbidden_problem),
    ((drf.NotFound, Http404),
     lambda exc: Problem(404, "not_found", "The requested resource does not exist.")),
    (drf.MethodNotAllowed, lambda exc: Problem(405, "invalid_request", str(exc.detail))),
    (drf.NotAcceptable, lambda exc: Problem(406, "invalid_request", str(exc.detail))),
    (drf.UnsupportedMediaType,
     lambda exc: Problem(415, "invalid_request", f"{exc.detail} Send the body as application/json.")),
    (RequestDataTooBig, lambda exc: Problem(413, "invalid_request", "The request body is too large.")),
    (SuspiciousOperation,
     lambda exc: Problem(400, "invalid_request", "The request was rejected as malformed.")),
    (drf.Throttled, _throttled_problem),
    (drf.APIException, _api_problem),
)


def doc_url(request, code: str) -> str:
    path = f"/docs/errors#{code}"
    if request is None:
        return path
    try:
        return request.build_absolute_uri("/docs/errors") + f"#{code}"
    except Exception:  # a request with a disallowed host still deserves an answer
        return path


def v1_body(problem: Problem, request) -> dict[str, Any]:
    error: dict[str, Any] = {"code": problem.code, "message": problem.message}
    if problem.details or problem.status in (400, 422):
        error["details"] = problem.details
    error["doc_url"] = doc_url(request, problem.code)
    error.update(problem.extra)
    # Fields such as existingLeadId and retryAfter are also given at the top level, where the
    # specification says "the body also carries" them.
    return {"error": error, **problem.extra}


def legacy_body(problem: Problem, request) -> dict[str, Any]:
    return {"error": problem.message}


def _response(problem: Problem, body: dict[str, Any]) -> Response:
    return Response(body, status=problem.status, headers=problem.headers)


def _in_view_terms(exc: Exception, view: Any) -> Exception:
    """A service's field errors under the names the view's surface gives those fields
    (``custom_fields`` is v1's ``customFields`` and legacy's ``metadata``)."""
    names = getattr(view, "field_names", None)
    if names and isinstance(exc, domain.ServiceError):
        exc.details = [replace(d, field=_renamed(d.field, names)) for d in exc.details]
    return exc


def _renamed(path: str, names: dict[str, str]) -> str:
    head, sep, rest = path.partition(".")
    return names.get(head, head) + sep + rest


def v1_exception_handler(exc: Exception, context: dict[str, Any]) -> Response:
    problem = to_problem(_in_view_terms(exc, context.get("view")), surface="v1")
    return _response(problem, v1_body(problem, context.get("request")))


def legacy_exception_handler(exc: Exception, context: dict[str, Any]) -> Response:
    problem = to_problem(_in_view_terms(exc, context.get("view")), surface="legacy")
    return _response(problem, legacy_body(problem, context.get("request")))


def surface_of(path: str) -> str | None:
    if path.startswith("/api/v1/") or path == "/api/v1":
        return "v1"
    if path.startswith("/api/"):
        return "legacy"
    return None


def json_error(request, exc: Exception, surface: str) -> JsonResponse:
    """The envelope outside DRF (Django's handler400/404/500, middleware failures)."""
    problem = to_problem(exc, surface=surface)
    body = v1_body(problem, request) if surface == "v1" else legacy_body(problem, request)
    response = JsonResponse(body, status=problem.status)
    for name, value in problem.headers.items():
        response[name] = value
    return response
