"""Domain exceptions: what services raise when a request cannot be carried out.

Services know nothing of HTTP. Each surface's exception handler (``config/api/errors.py``)
turns these into its own envelope and status code, so no view builds an error body by hand.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class FieldError:
    """One field-level problem, as the v1 ``details`` array shows it."""

    field: str
    code: str  # required, invalid_format, too_long, too_short, out_of_range, invalid_enum
    message: str

    def as_dict(self) -> dict[str, str]:
        return {"field": self.field, "code": self.code, "message": self.message}


class ServiceError(Exception):
    """Base of every domain error. ``kind`` names the v1 error code it maps to."""

    kind = "internal_error"
    default_message = "The request could not be completed."

    def __init__(self, message: str | None = None, *, details: list[FieldError] | None = None,
                 extra: dict[str, Any] | None = None):
        self.message = message or self.default_message
        self.details = details or []
        self.extra = extra or {}
        super().__init__(self.message)


class NotFound(ServiceError):
    kind = "not_found"
    default_message = "The requested resource does not exist."


class Conflict(ServiceError):
    kind = "conflict"
    default_message = "The request conflicts with existing data."


class InvalidRequest(ServiceError):
    """Malformed input: missing fields, bad formats (v1 400, legacy 400)."""

    kind = "invalid_request"
    default_message = "The request is invalid."


class Unprocessable(ServiceError):
    """Well-formed input that fails a semantic rule (v1 422, legacy 400)."""

    kind = "unprocessable"
    default_message = "The request is well formed but cannot be processed."


class Forbidden(ServiceError):
    kind = "forbidden"
    default_message = "You do not have permission to perform this action."


class ProviderNotConfigured(ServiceError):
    """The tenant chose a language-model provider but gave it no key (legacy 503)."""

    kind = "service_unavailable"
    default_message = "The language-model provider is not configured for this tenant."


class ProviderUnavailable(ServiceError):
    """The language-model provider failed (v1 502, legacy 503)."""

    kind = "bad_gateway"
    default_message = "The language-model provider is temporarily unavailable."


class ProviderTimeout(ServiceError):
    """The language-model provider did not answer in time (v1 504, legacy 503)."""

    kind = "gateway_timeout"
    default_message = "The language-model provider did not answer in time."


class RateLimited(ServiceError):
    kind = "rate_limit_exceeded"
    default_message = "Too many requests."

    def __init__(self, message: str | None = None, *, retry_after: int, limit: int,
                 reset: int | None = None):
        super().__init__(message, extra={"retryAfter": retry_after, "limit": limit})
        self.retry_after = retry_after
        self.limit = limit
        self.reset = reset
