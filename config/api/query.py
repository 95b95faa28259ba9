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


class DateOrDateTimeField(serializers.Field):
    """An ISO 8601 date (``2026-11-21``) or date-time (``2026-11-21T10:00:00Z``), as an aware UTC
    datetime. A bare date means its first instant, or its last with ``end_of_day=True``."""

    default_error_messages = {
        "invalid": "Expected an ISO 8601 date (YYYY-MM-DD) or date-time.",
    }

    def __init__(self, *, end_of_day: bool = False, dates_only: bool = False, **kwargs):
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
            return combine_utc(day, end_of_day=self.end_of_day)
        if self.dates_only:
            self.fail("invalid")
        try:
            moment = parse_datetime(data)
        except ValueError:
            moment = None
        if moment is None:
            self.fail("invalid")
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        return moment.astimezone(UTC)

    def to_representation(self, value):
        return value.isoformat()


def combine_utc(day: date, *, end_of_day: bool = False) -> datetime:
    return datetime.combine(day, time.max if end_of_day else time.min, tzinfo=UTC)
