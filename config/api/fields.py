"""Serializer fields shared by both surfaces."""

from __future__ import annotations

from datetime import UTC, datetime

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from . import ids


def format_timestamp(value: datetime | None) -> str | None:
    """ISO 8601, UTC, milliseconds, ``Z``: ``2026-11-21T09:30:00.000Z``."""
    if value is None:
        return None
    return value.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@extend_schema_field({"type": "string", "format": "date-time", "example": "2026-11-21T09:30:00.000Z"})
class TimestampField(serializers.DateTimeField):
    def to_representation(self, value):
        return format_timestamp(value)


@extend_schema_field(OpenApiTypes.STR)
class PrefixedIdField(serializers.Field):
    """A UUID shown as ``<prefix>_<hex>`` (read), or parsed from it (write)."""

    default_error_messages = {"invalid": "Expected an id of the form {prefix}_<32 hex digits>."}

    def __init__(self, prefix: str, **kwargs):
        self.prefix = prefix
        super().__init__(**kwargs)

    def to_representation(self, value):
        return ids.encode(self.prefix, value)

    def to_internal_value(self, data):
        found = ids.decode(self.prefix, data) if isinstance(data, str) else None
        if found is None:
            self.fail("invalid", prefix=self.prefix)
        return found
