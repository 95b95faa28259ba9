"""Timestamps as text: the API's form (ISO 8601, UTC, milliseconds, ``Z``) and the form events
store (ISO 8601, UTC, to the microsecond, so that durations computed from facts are exact)."""

from __future__ import annotations

from datetime import UTC, datetime


def format_timestamp(value: datetime | None) -> str | None:
    """``2026-11-21T09:30:00.000Z``; None stays None."""
    if value is None:
        return None
    return value.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def stored_timestamp(value: datetime | None) -> str | None:
    """``2026-11-21T09:30:00.123456+00:00``; None stays None."""
    if value is None:
        return None
    return value.astimezone(UTC).isoformat()


def parse_timestamp(value: str | None) -> datetime | None:
    """The datetime of either form; None stays None."""
    if value is None:
        return None
    return datetime.fromisoformat(value)
