"""Serializer fields shared by both surfaces."""

from __future__ import annotations

from django.core import validators as django_validators
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from core import ids
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


# An address Django's ``validate_email`` takes (which the lead services use), for the schemas:
# a dot-atom or quoted local part; a host name whose last label is letters (or punycode), or
# localhost. (Django also takes a bracketed IP address, which the schemas leave unsaid.)
_LETTER = "a-zA-Z\u00a1-\uffff"
_LABEL = f"[{_LETTER}0-9](?:[{_LETTER}0-9-]{{0,61}}[{_LETTER}0-9])?"
_ATOM = r"[-!#$%&'*+/=?^_`{}|~0-9A-Za-z]+"
EMAIL_PATTERN = (
    rf'^(?:{_ATOM}(?:\.{_ATOM})*'
    r'|"(?:[\u0001-\u0008\u000b\u000c\u000e-\u001f!#-\[\]-\u007f]'
    r'|\\[\u0001-\u0009\u000b\u000c\u000e-\u007f])*")'
    rf"@(?:{_LABEL}(?:\.{_LABEL})*\.(?:[{_LETTER}][{_LETTER}-]{{0,61}}[{_LETTER}]"
    r"|xn--[a-zA-Z0-9]{1,59})|localhost)$"
)


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


class StatedEmailField(StatedRules, serializers.EmailField):
    pass


class StatedIntegerField(StatedRules, serializers.IntegerField):
    pass


class StatedListField(StatedRules, serializers.ListField):
    pass


class StatedDictField(StatedRules, serializers.DictField):
    """An object whose key count is stated (``validators=[MaxLengthValidator(n)]``, which the
    schema shows as ``maxProperties``) and checked by the endpoint's service."""

