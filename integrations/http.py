"""JSON requests to a CRM's API through the shared SSRF-checked client (``core.outbound``), and
what their answers mean for a sync: done, try again later (5xx, timeouts, 429 with its
``Retry-After``), refused for good (4xx, with the CRM's own message), or the token refused (401).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from django.conf import settings

from core import outbound

POLICY = outbound.Policy(prefix="INTEGRATIONS", what="CRM requests")
READ_BYTES = 1024 * 1024  # of an answer's body at most: a CRM's JSON is far smaller
DEFAULT_RETRY_AFTER = 10.0  # seconds, when a 429 does not say
MAX_RETRY_AFTER = 3600.0


class CrmError(Exception):
    """A request to the CRM that did not succeed; ``message`` is what the sync log shows."""

    def __init__(self, message: str, *, status_code: int | None = None):
        super().__init__(message)
        self.message = message[:500]
        self.status_code = status_code


class Transient(CrmError):
    """Worth another attempt on the backoff schedule (5xx, timeouts, connection failures)."""


class RateLimited(Transient):
    """429: try again after ``retry_after`` seconds, without spending the schedule."""

    def __init__(self, message: str, *, retry_after: float, status_code: int = 429):
        super().__init__(message, status_code=status_code)
        self.retry_after = retry_after


class Refused(CrmError):
    """Refused for good (4xx other than 401 and 429, or a URL that may not be reached)."""


class AuthRefused(CrmError):
    """401: the token is expired, revoked or wrong."""


def timeout_seconds() -> float:
    return float(getattr(settings, "INTEGRATIONS_TIMEOUT_SECONDS", 10))


@dataclass(frozen=True)
class Answer:
    status_code: int
    data: Any


def request(method: str, url: str, *, token: str = "", json_body: Any = None,
            form: dict[str, str] | None = None, query: dict[str, str] | None = None) -> Answer:
    """One request; the answer's JSON when it is 2xx, else the CrmError that says what to do."""
    headers = {"Accept": "application/json", "User-Agent": "salesagent-integrations/1"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    body = _body(headers, json_body, form)
    if query:
        url = f"{url}?{urlencode(query)}"
    outcome = outbound.send(method, url, body, headers, timeout=timeout_seconds(), policy=POLICY,
                            read_bytes=READ_BYTES)
    return _judged(outcome)


def _body(headers: dict[str, str], json_body: Any, form: dict[str, str] | None) -> bytes | None:
    if json_body is not None:
        headers["Content-Type"] = "application/json"
        return json.dumps(json_body).encode()
    if form is not None:
        headers["Content-Type"] = "application/x-www-form-urlencoded"
        return urlencode(form).encode()
    return None


def _judged(outcome: outbound.Outcome) -> Answer:
    status = outcome.status_code
    if status is None:
        if outcome.permanent:
            raise Refused(outcome.error)
        raise Transient(outcome.error or "No answer.")
    if 200 <= status < 300:
        return Answer(status, _json(outcome.body))
    message = f"{status}: {_vendor_message(outcome.body) or outcome.error}"
    if status == 429:
        raise RateLimited(message, retry_after=_retry_after(outcome.retry_after))
    if status == 401:
        raise AuthRefused(message, status_code=status)
    if status >= 500 or status in (408,):
        raise Transient(message, status_code=status)
    raise Refused(message, status_code=status)


def _json(raw: bytes) -> Any:
    if not raw:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        raise Transient("The CRM answered with a body that is not JSON.") from None


def _vendor_message(raw: bytes) -> str:
    """The CRM's own words: ``message`` of a JSON error body (HubSpot's, Pipedrive's), else the
    start of the body."""
    try:
        data = json.loads(raw)
    except ValueError:
        return raw.decode("utf-8", errors="replace")[:300]
    if isinstance(data, dict):
        for key in ("message", "error_description", "error"):
            if isinstance(data.get(key), str):
                return data[key]
    return json.dumps(data)[:300]


def _retry_after(value: str) -> float:
    """Seconds from a Retry-After header (delta-seconds; an HTTP date or nothing: the default)."""
    try:
        seconds = float(value)
    except ValueError:
        return DEFAULT_RETRY_AFTER
    return min(max(seconds, 0.0), MAX_RETRY_AFTER)
