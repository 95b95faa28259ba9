"""Serializer fields shared by both surfaces."""

from __future__ import annotations

from django.core import validators as django_validators
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from core import ids
from core.timestamps import format_timestamp


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


# Validators that enforce a domain rule rather than a shape: lengths, ranges, email validity.
_RULE_VALIDATORS = (django_validators.MaxLengthValidator, django_validators.MinLengthValidator,
                    django_validators.MaxValueValidator, django_validators.MinValueValidator,
                    django_validators.EmailValidator)


class StatedRules:
    """Mixed into a serializer field: the field checks only type and shape. The limits it is
    built with (``max_length``, ``min_value``, an email format) stay in its validators, which
    drf-spectacular reads for the OpenAPI schema, but are not run: the service behind the
    endpoint, which owns those rules for every caller, enforces them (docs/decisions.md,
    "Validation is written once")."""

    def run_validators(self, value):
        stated = self.validators
        self.validators = [v for v in stated if not isinstance(v, _RULE_VALIDATORS)]
        try:
            super().run_validators(value)
        finally:
            self.validators = stated


class StatedCharField(StatedRules, serializers.CharField):
    pass


class StatedEmailField(StatedRules, serializers.EmailField):
    pass


class StatedIntegerField(StatedRules, serializers.IntegerField):
    pass


class StatedListField(StatedRules, serializers.ListField):
    pass
