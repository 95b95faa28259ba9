"""Query parameters, validated like bodies so that a bad value is a 400 with field details.

Each endpoint's query serializer is also what its OpenAPI parameters are generated from
(``extend_schema(parameters=[TheQuery])``): a field's limits, choices, default and ``help_text``
are the parameter's ``minimum``/``maximum``, ``enum``, ``default`` and description, so the
schema states exactly what the code accepts."""

from __future__ import annotations

import functools
import re
from datetime import UTC, date, datetime, time
from typing import Any

from django.http import QueryDict
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.exceptions import ErrorDetail, ValidationError

EMPTY_MESSAGE = "Must not be empty: leave the parameter out for its default."


def parse_query(request, serializer_class: type[serializers.Serializer]) -> dict[str, Any]:
    """The validated query parameters, or a ValidationError (400 with details).

    A parameter given with an empty value (``?startDate=``) is a 400, not its default: an empty
    string is no date, number or choice, which is what the schema says of it. Only a field that
    allows blanks (``allow_blank=True``) takes one.

    The answer is a function of the serializer and the query string alone (no query serializer
    reads the request, the tenant or the clock), so a valid query string's answer is kept: a
    client that asks for the same page again skips DRF's validation, a tenth of a lead list's
    time (docs/performance.md, "The serving path"). A refused one is validated each time."""
    raw = request.META.get("QUERY_STRING", "")
    if len(raw) > _REMEMBERED_LENGTH:
        return _validated(serializer_class, request.query_params)
    return dict(_remembered(serializer_class, raw, request.encoding))


# A query string longer than this is validated each time, not kept.
_REMEMBERED_LENGTH = 512


@functools.lru_cache(maxsize=2048)
def _remembered(serializer_class: type[serializers.Serializer], raw: str,
                encoding: str | None) -> dict[str, Any]:
    return _validated(serializer_class, QueryDict(raw, encoding=encoding))


def _validated(serializer_class: type[serializers.Serializer], params) -> dict[str, Any]:
    serializer = serializer_class(data=params)
    errors = {} if serializer.is_valid() else dict(serializer.errors)
    errors.update({
        name: [ErrorDetail(EMPTY_MESSAGE, code="invalid_format")]
        for name, field in serializer.fields.items()
        if params.get(name) == "" and not field.required and not getattr(field, "allow_blank", False)
    })
    if errors:
        raise ValidationError(errors)
    return serializer.validated_data


class PageQuery(serializers.Serializer):
    page = serializers.IntegerField(default=1, min_value=1, max_value=1_000_000,
                                    help_text="Page number, from 1.")
    limit = serializers.IntegerField(default=25, min_value=1, max_value=100,
                                     help_text="Items per page, 1 to 100.")


# The days a date or date-time parameter may name, on every endpoint: wide enough for any real
# query, narrow enough that the service's arithmetic on them (the day after an end, a year
# earlier, a period's length before it) stays inside Python's and the databases' calendars.
FIRST_DAY, LAST_DAY = date(1900, 1, 1), date(9998, 12, 31)
RANGE_HELP = f"From {FIRST_DAY.isoformat()} to {LAST_DAY.isoformat()}, UTC."
_OUT_OF_RANGE = f"Must be between {FIRST_DAY.isoformat()} and {LAST_DAY.isoformat()}."

# What the parsers read, written once for the code and the schema. The code reads any four-digit
# year and answers a year outside the range ``out_of_range``; the schema's patterns name only the
# years of the range (1900 to 9998), so that a fuzzer never takes a refused year for a valid one.
_DAY = r"[0-9]{4}-[0-9]{2}-[0-9]{2}"
_TIME = r"T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]{1,9})?(?:Z|[+-][0-9]{2}:[0-9]{2})"
DAY_SHAPE, MOMENT_SHAPE = re.compile(_DAY), re.compile(_DAY + _TIME)
_YEAR_IN_RANGE = r"(?:19[0-9]{2}|[2-8][0-9]{3}|9[0-8][0-9]{2}|99[0-8][0-9]|999[0-8])"
_MONTH_DAY = r"-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12][0-9]|3[01])"
_CLOCK = (r"T(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\.[0-9]{1,9})?"
          r"(?:Z|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])")
DAY_SCHEMA = {"type": "string", "format": "date",
              "pattern": f"^{_YEAR_IN_RANGE}{_MONTH_DAY}$", "example": "2026-11-21"}
MOMENT_SCHEMA = {"type": "string", "format": "date-time",
                 "pattern": f"^{_YEAR_IN_RANGE}{_MONTH_DAY}{_CLOCK}$",
                 "example": "2026-11-21T10:00:00Z"}


def _in_range(field: serializers.Field, day: date) -> None:
    if not FIRST_DAY <= day <= LAST_DAY:
        field.fail("out_of_range")


def _parsed(shape: re.Pattern, parse, text) -> Any:
    """``parse(text)`` when ``text`` has the shape (and names a real day and time), else None."""
    if not isinstance(text, str) or not shape.fullmatch(text):
        return None
    try:
        return parse(text)
    except ValueError:
        return None


@extend_schema_field(DAY_SCHEMA)
class DayField(serializers.DateField):
    """An ISO 8601 date (``2026-11-21``, nothing else) within the supported days
    (``RANGE_HELP``)."""

    default_error_messages = {
        "invalid": "Expected an ISO 8601 date (YYYY-MM-DD).",
        "out_of_range": _OUT_OF_RANGE,
    }

    def __init__(self, **kwargs):
        kwargs.setdefault("help_text", f"ISO 8601 date. {RANGE_HELP}")
        super().__init__(**kwargs)

    def to_internal_value(self, value) -> date:
        day = _parsed(DAY_SHAPE, date.fromisoformat, value)
        if day is None:
            self.fail("invalid")
        _in_range(self, day)
        return day


@extend_schema_field({"anyOf": [DAY_SCHEMA, MOMENT_SCHEMA]})
class DateOrDateTimeField(serializers.Field):
    """An ISO 8601 date (``2026-11-21``) or an RFC 3339 date-time (``2026-11-21T10:00:00Z``,
    with seconds and an offset), as an aware UTC datetime, within the supported days
    (``RANGE_HELP``; a date-time's own day counts). A bare date means its first instant, or
    its last with ``end_of_day=True``."""

    default_error_messages = {
        "invalid": "Expected an ISO 8601 date (YYYY-MM-DD) or date-time "
                   "(YYYY-MM-DDTHH:MM:SS with Z or an offset such as +01:00).",
        "out_of_range": _OUT_OF_RANGE,
    }

    def __init__(self, *, end_of_day: bool = False, **kwargs):
        kwargs.setdefault("help_text", f"ISO 8601 date or date-time. {RANGE_HELP}")
        self.end_of_day = end_of_day
        super().__init__(**kwargs)

    def to_internal_value(self, data) -> datetime:
        day = _parsed(DAY_SHAPE, date.fromisoformat, data)
        if day is not None:
            _in_range(self, day)
            return combine_utc(day, end_of_day=self.end_of_day)
        moment = _parsed(MOMENT_SHAPE, datetime.fromisoformat, data)
        if moment is None:
            self.fail("invalid")
        _in_range(self, moment.date())
        return moment.astimezone(UTC)

    def to_representation(self, value):
        return value.isoformat()


def combine_utc(day: date, *, end_of_day: bool = False) -> datetime:
    return datetime.combine(day, time.max if end_of_day else time.min, tzinfo=UTC)
