"""Serializer fields shared by both surfaces, and the strict typing of v1 request bodies."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.core import validators as django_validators
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.exceptions import ErrorDetail, ValidationError
from rest_framework.utils import html

from core import emails, ids
from core.timestamps import format_timestamp


@extend_schema_field({"type": "string", "format": "date-time", "example": "2026-11-21T09:30:00.000Z"})
class TimestampField(serializers.DateTimeField):
    def to_representation(self, value):
        return format_timestamp(value)


class PrefixedIdField(serializers.Field):
    """A UUID shown as ``<prefix>_<hex>`` (read), or parsed from it (write). Its OpenAPI schema
    (a string with the pattern of its prefix) is ``config.api.schema.PrefixedIdFieldSchema``."""

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


# Whitespace as Python (``str.isspace``, ``str.strip``, ``re``'s ``\s``) reads it, spelled out
# for patterns that other engines read too: an OpenAPI pattern is an ECMAScript one, whose ``\s``
# leaves out U+001C to U+001F and U+0085 and takes U+FEFF.
_SPACES = (r"\t\n\u000b\u000c\r\u001c-\u0020\u0085\u00a0\u1680\u2000-\u200a\u2028\u2029"
           r"\u202f\u205f\u3000")
WHITESPACE, NOT_WHITESPACE = f"[{_SPACES}]", f"[^{_SPACES}]"
# Text that is not blank once a leading byte-order mark is dropped (as UTF-8-with-BOM decoding
# does) and whitespace is trimmed.
NOT_BLANK_TEXT = (f"^(?:\\ufeff{WHITESPACE}*{NOT_WHITESPACE}|[^\\ufeff{_SPACES}]"
                  f"|{WHITESPACE}+{NOT_WHITESPACE})")


# The email addresses the schemas state (``config.api.schema.state_email``): those the service
# takes (``core.emails``).
EMAIL_PATTERN = emails.EMAIL_PATTERN


class LanguageField(serializers.CharField):
    """An ISO 639-1 language code (two letters; the endpoint checks it is one, in any case).
    Its schema lists the codes (``config.api.schema.LanguageFieldSchema``)."""

    def __init__(self, **kwargs):
        kwargs.setdefault("max_length", 2)
        kwargs.setdefault("trim_whitespace", False)
        super().__init__(**kwargs)


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


class StatedLineField(StatedCharField):
    """One line of text (a name, a company, a tag): the service behind the endpoint refuses
    control characters inside it (``core.text``), which its schema states
    (``config.api.schema.state_one_line``)."""


class StatedEmailField(StatedRules, serializers.EmailField):
    pass


class StatedIntegerField(StatedRules, serializers.IntegerField):
    pass


class StatedListField(StatedRules, serializers.ListField):
    pass


class StatedDictField(StatedRules, serializers.DictField):
    """An object whose key count is stated (``validators=[MaxLengthValidator(n)]``, which the
    schema shows as ``maxProperties``) and checked by the endpoint's service."""


# --- v1 request bodies: JSON types, not DRF's coercions ----------------------------------------
#
# DRF coerces: a BooleanField takes "yes", "on", 1 and "true"; a CharField takes 42 and 3.5; an
# IntegerField takes "12". A v1 body is JSON, whose values carry their type: a boolean field takes
# true or false, a string field a string, a number field a number, and anything else is a 400
# naming the field (docs/decisions.md, "v1 bodies are typed strictly"). Query parameters are
# text by nature and keep DRF's parsing (``?includeMessages=true``); so do form and multipart
# bodies and the legacy surface.

# (field class, the Python types of the JSON values it takes, their name); a subclass first.
_JSON_TYPES: tuple[tuple[type[serializers.Field], tuple[type, ...], str], ...] = (
    (serializers.BooleanField, (bool,), "a boolean"),
    (serializers.CharField, (str,), "a string"),
    (serializers.IntegerField, (int,), "an integer"),
    (serializers.FloatField, (int, float), "a number"),
)
_JSON_NAMES = ((bool, "a boolean"), (str, "a string"), ((int, float), "a number"),
               (list, "an array"), (dict, "an object"))


def _json_name(value: Any) -> str:
    return next(name for kind, name in _JSON_NAMES if isinstance(value, kind))


def json_type_error(field: serializers.Field, value: Any) -> list | None:
    """The error of ``value`` when it is not of the JSON type ``field`` takes, else None. A
    list's items are checked against its child (``[[], [error]]``: the error of ``tags[1]``).
    ``null`` is the field's own business (``allow_null``)."""
    if value is None:
        return None
    if isinstance(field, serializers.ListField) and isinstance(value, list):
        items = [json_type_error(field.child, item) or [] for item in value]
        return items if any(items) else None
    expected = _expected_type(field)
    if expected is None or _is_of(value, expected[0]):
        return None
    return [ErrorDetail(f"Expected {expected[1]}, not {_json_name(value)}.",
                        code="invalid_format")]


def _expected_type(field: serializers.Field) -> tuple[tuple[type, ...], str] | None:
    for kind, types, name in _JSON_TYPES:
        if isinstance(field, kind):
            return types, name
    return None


def _is_of(value: Any, types: tuple[type, ...]) -> bool:
    """``isinstance``, where a boolean (a Python int) is no number."""
    return isinstance(value, types) and (bool in types or not isinstance(value, bool))


class V1Input(serializers.Serializer):
    """The base of every v1 request body's serializer: a value of the wrong JSON type is refused
    (400 ``invalid_format`` naming the field, with the other fields' errors) before DRF would
    coerce it. A form or multipart body (text by nature) is read as DRF reads it."""

    def to_internal_value(self, data):
        problems = json_type_errors(self._writable_fields, data)
        try:
            value = super().to_internal_value(data)
        except ValidationError as exc:
            if not problems:
                raise
            raise ValidationError(_merged(exc.detail, problems)) from None
        if problems:
            raise ValidationError(problems)
        return value


def json_type_errors(fields, data: Any) -> dict[str, list]:
    """The type errors of a JSON object's values, by field name."""
    if not isinstance(data, Mapping) or html.is_html_input(data):
        return {}
    errors = ((field.field_name, json_type_error(field, data.get(field.field_name)))
              for field in fields)
    return {name: error for name, error in errors if error is not None}


def _merged(detail: Any, problems: dict[str, list]) -> Any:
    """DRF's errors with the type errors in place of a field's own."""
    if not isinstance(detail, Mapping):
        return detail
    return {**detail, **{name: _with_item_errors(error, detail.get(name))
                         for name, error in problems.items()}}


def _with_item_errors(strict: list, other: Any) -> list:
    """A list's type errors by item (``[[], [error]]``), with the other errors of the items
    that have none (DRF's ``{0: [...]}`` or a validator's list of lists)."""
    if not strict or not isinstance(strict[0], list):
        return strict
    theirs = _by_item(other, len(strict))
    return [mine or theirs[index] for index, mine in enumerate(strict)]


def _by_item(errors: Any, count: int) -> list[list]:
    """Errors of a list's items as a list of ``count`` lists, whichever way they came."""
    if isinstance(errors, Mapping):
        return [errors.get(index, []) for index in range(count)]
    if isinstance(errors, list) and len(errors) == count:
        return [item if isinstance(item, list) else [item] for item in errors]
    return [[] for _ in range(count)]
