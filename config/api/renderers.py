"""JSON responses, written by orjson.

DRF's ``JSONRenderer`` spends about half a millisecond on a page of 100 leads; orjson writes the
same bytes in a twentieth of that (docs/performance.md, "Leads"). Whatever orjson would write
differently goes to DRF's renderer: an indented response (``Accept: application/json;
indent=2``), datetimes and dataclasses (through DRF's encoder, which writes UTC as ``Z``), and
anything orjson refuses (keys that are not strings, integers beyond 64 bits). One difference
is kept: a float that is not finite is written as ``null`` where DRF would fail the response.
"""

from __future__ import annotations

import re

import orjson
from drf_spectacular import renderers as spectacular
from rest_framework import renderers
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.settings import api_settings
from rest_framework.utils.encoders import JSONEncoder

_OPTIONS = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS
_encoder = JSONEncoder()


def _default(value):
    """What DRF's encoder makes of a type orjson leaves to us (Decimal, lazy text, dates...)."""
    return _encoder.default(value)


class JSONRenderer(renderers.JSONRenderer):
    def render(self, data, accepted_media_type=None, renderer_context=None):
        if data is None:
            return b""
        if (self.get_indent(accepted_media_type, renderer_context or {}) is not None
                or not api_settings.COMPACT_JSON or not api_settings.UNICODE_JSON):
            return super().render(data, accepted_media_type, renderer_context)
        try:
            content = orjson.dumps(data, default=_default, option=_OPTIONS)
        except TypeError:
            return super().render(data, accepted_media_type, renderer_context)
        # As DRF does: these two are valid JSON but end a line in JavaScript.
        return content.replace(b"\xe2\x80\xa8", b"\\u2028").replace(b"\xe2\x80\xa9", b"\\u2029")


# What clients send when any JSON will do: nothing, curl's */*, or the JSON type itself.
_PLAIN_ACCEPT = frozenset(("", "*/*", "application/json"))


class ContentNegotiation(DefaultContentNegotiation):
    """DRF's negotiation, answered at once for the commonest request: no format override and an
    ``Accept`` that any JSON satisfies, to a view whose first renderer is JSON. DRF would pick
    the same renderer and media type, after parsing the query string (for ``?format=``) and
    the ``Accept`` header, a twentieth of a lead-list page's time (docs/performance.md)."""

    def select_renderer(self, request, renderers, format_suffix=None):
        first = renderers[0] if renderers else None
        override = self.settings.URL_FORMAT_OVERRIDE
        if (format_suffix is None and first is not None
                and first.media_type == "application/json"
                and request.META.get("HTTP_ACCEPT", "").strip() in _PLAIN_ACCEPT
                and (not override or override not in request.META.get("QUERY_STRING", ""))):
            return first, first.media_type
        return super().select_renderer(request, renderers, format_suffix)


# What a YAML document may not hold raw, which a JSON string may: anything outside YAML's
# printable set (C0 and C1 controls, DEL, surrogates, U+FFFE and U+FFFF), and U+0085, which YAML
# 1.1 parsers (PyYAML) read as a line break and fold. (DRF escapes U+2028 and U+2029 already.)
_NOT_YAML_PRINTABLE = re.compile(
    "[^\t\n\r\x20-\x7e\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _escaped(match: re.Match) -> str:
    return f"\\u{ord(match.group()):04x}"


class OpenApiJsonRenderer(spectacular.OpenApiJsonRenderer):
    """The OpenAPI schema as JSON that is also a valid YAML document, as many OpenAPI tools read
    a schema (JSON being YAML) with a YAML parser: a character YAML forbids raw (the email
    pattern's U+FFFF) is written as its JSON escape, which both read back as the character
    (issue 28). Only a JSON string can hold one, so the escape is always inside a string."""

    def render(self, data, accepted_media_type=None, renderer_context=None):
        content = super().render(data, accepted_media_type, renderer_context)
        text = content.decode("utf-8")
        if _NOT_YAML_PRINTABLE.search(text) is None:
            return content
        return _NOT_YAML_PRINTABLE.sub(_escaped, text).encode("utf-8")


class OpenApiJsonRenderer2(OpenApiJsonRenderer):
    media_type = "application/json"


# The schema as YAML (``?format=yaml``, ``Accept: application/yaml`` or
# ``application/vnd.oai.openapi``): PyYAML's emitter writes a character YAML forbids raw as an
# escape in a double-quoted scalar.
OpenApiYamlRenderer = spectacular.OpenApiYamlRenderer
OpenApiYamlRenderer2 = spectacular.OpenApiYamlRenderer2

SCHEMA_RENDERERS = [OpenApiJsonRenderer, OpenApiJsonRenderer2, OpenApiYamlRenderer,
                    OpenApiYamlRenderer2]
