"""Query parameters, validated like bodies so that a bad value is a 400 with field details."""

from __future__ import annotations

from datetime import UTC, date, datetime, time
from typing import Any

from django.utils.dateparse import parse_date, parse_datetime
from rest_framework import serializers


def parse_query(request, serializer_class: type[serializers.Serializer]) -> dict[str, Any]:
    """The validated query parameters, or a ValidationError (400 with details)."""
    serializer = serializer_class(data=request.query_params)
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data


class PageQuery(serializers.Serializer):
    page = serializers.IntegerField(default=1, min_value=1, max_value=1_000_000)
    limit = serializers.IntegerField(default=25, min_value=1, max_value=100)


# The days a date or date-time parameter may name, on every endpoint: wide enough for any real
# query, narrow enough that the service's arithmetic on them (the day after an end, a year
# earlier, a period's length before it) stays inside Python's and the databases' calendars.
FIRST_DAY, LAST_DAY = date(1900, 1, 1), date(9998, 12, 31)
RANGE_HELP = f"From {FIRST_DAY.isoformat()} to {LAST_DAY.isoformat()}, UTC."
_OUT_OF_RANGE = f"Must be between {FIRST_DAY.isoformat()} and {LAST_DAY.isoformat()}."


def _in_range(field: serializers.Field, day: date) -> None:
    if not FIRST_DAY <= day <= LAST_DAY:
        field.fail("out_of_range")


class DayField(serializers.DateField):
    """An ISO 8601 date (``2026-11-21``) within the supported days (``RANGE_HELP``)."""

    default_error_messages = {"out_of_range": _OUT_OF_RANGE}

    def __init__(self, **kwargs):
        kwargs.setdefault("help_text", f"ISO 8601 date. {RANGE_HELP}")
        super().__init__(**kwargs)

    def to_internal_value(self, value) -> date:
        day = super().to_internal_value(value)
        _in_range(self, day)
        return day


class DateOrDateTimeField(serializers.Field):
    """An ISO 8601 date (``2026-11-21``) or date-time (``2026-11-21T10:00:00Z``), as an aware UTC
    datetime, within the supported days (``RANGE_HELP``). A bare date means its first instant,
    or its last with ``end_of_day=True``."""

    default_error_messages = {
        "invalid": "Expected an ISO 8601 date (YYYY-MM-DD) or date-time.",
        "out_of_range": _OUT_OF_RANGE,
    }

    def __init__(self, *, end_of_day: bool = False, dates_only: bool = False, **kwargs):
        kwargs.setdefault("help_text", f"ISO 8601 date or date-time. {RANGE_HELP}")
        self.end_of_day = end_of_day
        self.dates_only = dates_only
        super().__init__(**kwargs)

    def to_internal_value(self, data) -> datetime:
        if not isinstance(data, str) or len(data) > 40:
            self.fail("invalid")
        try:
            day = parse_date(data)
        except ValueError:
            day = None
        if day is not None:
            _in_range(self, day)
            return combine_utc(day, end_of_day=self.end_of_day)
        if self.dates_only:
            self.fail("invalid")
        try:
            moment = parse_datetime(data)
        except ValueError:
            moment = None
        if moment is None:
            self.fail("invalid")
        _in_range(self, moment.date())
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        return moment.astimezone(UTC)

    def to_representation(self, value):
        return value.isoformat()


def combine_utc(day: date, *, end_of_day: bool = False) -> datetime:
    return datetime.combine(day, time.max if end_of_day else time.min, tzinfo=UTC)
