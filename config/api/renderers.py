"""JSON responses, written by orjson.

DRF's ``JSONRenderer`` spends about half a millisecond on a page of 100 leads; orjson writes the
same bytes in a twentieth of that (docs/performance.md, "Leads"). Whatever orjson would write
differently goes to DRF's renderer: an indented response (``Accept: application/json;
indent=2``), datetimes and dataclasses (through DRF's encoder, which writes UTC as ``Z``), and
anything orjson refuses (keys that are not strings, integers beyond 64 bits). One difference
is kept: a float that is not finite is written as ``null`` where DRF would fail the response.
"""

from __future__ import annotations

import orjson
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
