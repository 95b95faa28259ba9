"""OpenAPI pieces shared by the endpoints: the error envelopes and the security schemes."""

from __future__ import annotations

from drf_spectacular.extensions import (
    OpenApiAuthenticationExtension,
    OpenApiSerializerFieldExtension,
)
from drf_spectacular.openapi import AutoSchema as SpectacularAutoSchema
from drf_spectacular.plumbing import force_instance
from drf_spectacular.utils import OpenApiResponse, PolymorphicProxySerializer, inline_serializer
from rest_framework import serializers

from core.text import CONTROL_CLASS

from .errors import V1_STATUS
from .fields import (
    EMAIL_PATTERN,
    NOT_WHITESPACE,
    WHITESPACE,
    StatedLineField,
)


class AutoSchema(SpectacularAutoSchema):
    """Our list endpoints return envelopes (``{data, pagination}``, ``{leads: [...]}``) that each
    view documents whole, so a list action's response is never wrapped in an array.

    What the code checks and drf-spectacular does not state in a request's schema, stated here
    so that the schema never calls valid what the field refuses, nor the reverse: a text field
    that trims its input (DRF's default) counts its characters after trimming and takes
    whitespace alone as blank (``state_trimming``); a list with ``allow_empty=False`` needs an
    item; a line of text holds no control character once trimmed (``state_one_line``). And in
    both directions an email address is one the service takes (``EMAIL_PATTERN``)."""

    def _is_list_view(self, serializer=None) -> bool:
        return False

    def _get_request_for_media_type(self, serializer, direction="request"):
        schema, required = super()._get_request_for_media_type(serializer, direction)
        if isinstance(serializer, PolymorphicProxySerializer):
            # One of several shapes (drf-spectacular counts none as required): the body is
            # required when each shape has a field it requires.
            shapes = serializer.serializers
            shapes = shapes.values() if isinstance(shapes, dict) else shapes
            required = all(any(f.required for f in force_instance(s).fields.values())
                           for s in shapes)
        return schema, required

    def _map_basic_serializer(self, serializer, direction):
        schema = super()._map_basic_serializer(serializer, direction)
        for field in force_instance(serializer).fields.values():
            stated = schema["properties"].get(field.field_name)
            if not isinstance(stated, dict):
                continue
            if isinstance(field, serializers.EmailField):
                state_email(stated)
            if direction != "request":
                continue
            _state_request_field(field, stated)
            if isinstance(field, serializers.ListField) and isinstance(stated.get("items"), dict):
                _state_request_field(field.child, stated["items"])
        return schema


_BLANK = {"type": "string", "maxLength": 0}  # drf-spectacular's "or blank" branch


def _state_request_field(field: serializers.Field, schema: dict) -> None:
    if isinstance(field, serializers.CharField) and field.trim_whitespace:
        state_trimming(field, schema)
    if isinstance(field, StatedLineField):
        state_one_line(field, schema)
    if isinstance(field, serializers.ListField) and not field.allow_empty:
        schema["minItems"] = max(schema.get("minItems", 0), 1)


def state_email(schema: dict) -> None:
    """An address is one the service takes (``core.emails``: Django's validator, printable
    ASCII in a quoted local part, no IP literal), which neither ``email`` (ASCII only) nor
    ``idn-email`` (valid punycode only) describes: the format gives way to ``EMAIL_PATTERN``
    (in the first branch of an "or blank")."""
    inner = schema["oneOf"][0] if "oneOf" in schema else schema
    if inner.get("format") == "email":
        del inner["format"]
        inner["pattern"] = EMAIL_PATTERN


def state_trimming(field: serializers.CharField, schema: dict) -> None:
    """Makes the request schema of a trimming text field say what it takes: at least
    ``min_length`` (or 1) characters once trimmed; and, when it allows blanks, whitespace alone,
    which it reads as blank (drf-spectacular's blank branch takes only ""). Whitespace is
    Python's, which ``str.strip`` trims (``WHITESPACE``)."""
    branches = schema.get("oneOf")
    blank = isinstance(branches, list) and branches[1:] == [_BLANK]
    inner = branches[0] if blank else schema
    if _counts_characters(field, inner):
        inner["pattern"] = _trimmed_length_pattern(max(field.min_length or 0, 1))
    if blank:
        del schema["oneOf"]
        schema["anyOf"] = [inner, {"type": "string", "pattern": f"^{WHITESPACE}*$"}]


# Neither a control character (CONTROL_CLASS) nor whitespace (SPACE_CLASS), the two classes
# merged: what a trimmed line starts and ends with.
_LINE_END = r"[^\u0000-\u0020\u007f-\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"


def state_one_line(field: serializers.CharField, schema: dict) -> None:
    """Makes the request schema of a line of text say that, once trimmed, it holds no control
    character (``core.text``: the services refuse them) and, as ``state_trimming`` stated, has
    at least ``min_length`` (or, when it allows no blank, 1) characters. Anchored: the control
    characters at either end are whitespace the field trims."""
    inner = schema["anyOf"][0] if "anyOf" in schema else schema
    least = max(field.min_length or 0, 0 if field.allow_blank else 1)
    # The trimmed text starts and ends with _LINE_END, which no whitespace matches: one way to
    # match, and no backtracking that grows with the length.
    text = f"{_LINE_END}(?:[^{CONTROL_CLASS}]*{_LINE_END})?"
    line = f"{WHITESPACE}*{text if least else f'(?:{text})?'}{WHITESPACE}*$"
    if least > 1:  # the length, as state_trimming wrote it, looked ahead
        line = f"(?=[\\s\\S]*{_trimmed_length_pattern(least)}){line}"
    inner["pattern"] = f"^{line}"


def _counts_characters(field: serializers.CharField, schema: dict) -> bool:
    """Whether a length pattern is needed: a plain string (no pattern or enum of its own) that
    needs more than one character, or one and allows no blank."""
    if schema.get("type") != "string" or "pattern" in schema or "enum" in schema:
        return False
    return (field.min_length or 0) > 1 or not field.allow_blank


def _trimmed_length_pattern(least: int) -> str:
    """Unanchored, as JSON Schema reads it: a run of ``least`` characters that starts and ends
    with non-whitespace, which a string has when it has ``least`` once trimmed."""
    if least == 1:
        return NOT_WHITESPACE
    return f"{NOT_WHITESPACE}[\\s\\S]{{{least - 2},}}{NOT_WHITESPACE}"


class LanguageFieldSchema(OpenApiSerializerFieldExtension):
    """A ``LanguageField`` is one of the ISO 639-1 codes (or "" or null where it allows them)."""

    target_class = "config.api.fields.LanguageField"

    def map_serializer_field(self, auto_schema, direction):
        from core.languages import ISO_639_1

        codes: list = sorted(ISO_639_1)
        if self.target.allow_blank:
            codes.insert(0, "")
        if self.target.allow_null:
            codes.append(None)
        return {"type": "string", "enum": codes}


class PrefixedIdFieldSchema(OpenApiSerializerFieldExtension):
    """``PrefixedIdField("lead")`` is a string ``lead_`` followed by 32 lowercase hex digits."""

    target_class = "config.api.fields.PrefixedIdField"

    def map_serializer_field(self, auto_schema, direction):
        return {"type": "string", "pattern": f"^{self.target.prefix}_[0-9a-f]{{32}}$",
                "example": f"{self.target.prefix}_{'0' * 32}"}

_V1_CODES = list(V1_STATUS)
_DETAIL_CODES = ["required", "invalid_format", "too_long", "too_short", "out_of_range", "invalid_enum"]


class FieldErrorSerializer(serializers.Serializer):
    field = serializers.CharField()
    code = serializers.ChoiceField(choices=_DETAIL_CODES)
    message = serializers.CharField()


class V1ErrorBodySerializer(serializers.Serializer):
    code = serializers.ChoiceField(choices=_V1_CODES)
    message = serializers.CharField()
    details = FieldErrorSerializer(many=True, required=False)
    doc_url = serializers.CharField()
    existingLeadId = serializers.CharField(required=False)
    retryAfter = serializers.IntegerField(required=False)
    limit = serializers.IntegerField(required=False)
    requestId = serializers.CharField(required=False)


class V1ErrorSerializer(serializers.Serializer):
    error = V1ErrorBodySerializer()
    existingLeadId = serializers.CharField(required=False)
    retryAfter = serializers.IntegerField(required=False)
    limit = serializers.IntegerField(required=False)
    requestId = serializers.CharField(required=False)


class LegacyErrorSerializer(serializers.Serializer):
    error = serializers.CharField()


_V1_DESCRIPTIONS = {
    400: "invalid_request: malformed body, missing field, bad query parameter",
    401: "unauthorized: key missing, invalid, revoked or past its grace period",
    403: "forbidden: the key's scope lacks the operation, or plain HTTP",
    404: "not_found",
    405: "invalid_request: method not allowed",
    409: "conflict",
    413: "invalid_request: body too large",
    415: "invalid_request: unsupported media type",
    422: "unprocessable: valid JSON failing a semantic rule",
    429: "rate_limit_exceeded",
    500: "internal_error",
    502: "bad_gateway",
    503: "service_unavailable",
    504: "gateway_timeout",
}


_BODY_ERRORS = {400, 413, 415}


def v1_errors(*statuses: int, body: bool = False) -> dict[int, OpenApiResponse]:
    """Error responses for ``extend_schema(responses=...)``: 401, 403, 429 and 500 always, and
    with ``body=True`` those of an endpoint that reads a body (400, 413, 415)."""
    wanted = sorted({*statuses, 401, 403, 429, 500, *(_BODY_ERRORS if body else ())})
    return {s: OpenApiResponse(V1ErrorSerializer, description=_V1_DESCRIPTIONS[s]) for s in wanted}


def legacy_errors(*statuses: int, public: bool = False, body: bool = False,
                  ) -> dict[int, OpenApiResponse]:
    base = {429, 500} if public else {401, 403, 429, 500}
    wanted = sorted({*statuses, *base, *(_BODY_ERRORS if body else ())})
    return {s: OpenApiResponse(LegacyErrorSerializer, description="{error: description}")
            for s in wanted}


class PaginationSerializer(serializers.Serializer):
    """One component shared by every list (a new inline class per list would collide)."""

    page = serializers.IntegerField()
    limit = serializers.IntegerField()
    total = serializers.IntegerField()
    totalPages = serializers.IntegerField()
    hasMore = serializers.BooleanField()

    class Meta:
        ref_name = "Pagination"


def paginated(name: str, item: serializers.Serializer | type[serializers.Serializer]):
    return inline_serializer(
        name=name,
        fields={
            "data": item(many=True) if isinstance(item, type) else item,
            "pagination": PaginationSerializer(),
        },
    )


class BearerKeyScheme(OpenApiAuthenticationExtension):
    target_class = "apikeys.authentication.BearerKeyAuthentication"
    name = "apiKey"

    def get_security_definition(self, auto_schema):
        return {
            "type": "http",
            "scheme": "bearer",
            "bearerFormat": "sk_live_… or sk_test_…",
            "description": "An API key. sk_test_ keys see and change only test data.",
        }


class AdminCookieScheme(OpenApiAuthenticationExtension):
    target_class = "apikeys.authentication.AdminCookieAuthentication"
    name = "adminCookie"

    def get_security_definition(self, auto_schema):
        return {
            "type": "apiKey",
            "in": "cookie",
            "name": "sa_admin_session",
            "description": "Session cookie set by POST /api/admin/auth (legacy surface, 7 days).",
        }


# --- Rate limits and idempotency, added to every operation by a postprocessing hook ----------

_INT = {"type": "integer"}
_HEADERS = {
    "X-RateLimit-Limit": {
        "description": "Requests allowed in the current window of the binding limit (the "
                       "limit with the fewest requests remaining). See docs/rate-limits.md.",
        "schema": _INT,
    },
    "X-RateLimit-Remaining": {
        "description": "Requests left in that window after this one.",
        "schema": _INT,
    },
    "X-RateLimit-Reset": {
        "description": "Unix time, in seconds, at which that window resets.",
        "schema": _INT,
    },
    "X-RateLimit-Policy": {
        "description": "Which limit binds: minute, day, endpoint.<bucket>, scope.<scope> or "
                       "concurrency (v1 keys); minute (legacy keys and sessions); address or "
                       "tenant (public endpoints and requests without valid credentials).",
        "schema": {"type": "string"},
    },
    "X-RateLimit-RetryAfter": {
        "description": "On 429: seconds to wait before retrying.",
        "schema": _INT,
    },
    "Retry-After": {
        "description": "On 429: seconds to wait before retrying (same value). On 503: seconds "
                       "to wait before trying again, when a server the service depends on "
                       "cannot be reached (docs/security.md, \"Under faults\").",
        "schema": _INT,
    },
    "Idempotent-Replayed": {
        "description": "`true` when this is the stored response of an earlier request with the "
                       "same Idempotency-Key (the request did not run again).",
        "schema": {"type": "string", "enum": ["true"]},
    },
}
_ALWAYS = ("X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset", "X-RateLimit-Policy")
_ON_429 = ("X-RateLimit-RetryAfter", "Retry-After")
_IDEMPOTENCY_KEY = {
    "name": "Idempotency-Key",
    "in": "header",
    "required": False,
    "description": "Makes the POST safe to retry: the same key with the same body within 24 hours "
                   "returns the first response without doing the work again; with another body "
                   "it is 422; while the first request still runs, 409. Keys are per API key. "
                   "See docs/idempotency.md.",
    "schema": {"type": "string", "minLength": 1, "maxLength": 255},
}
_V1_POST_ERRORS = {
    400: "invalid_request: also an Idempotency-Key that is empty or over 255 characters",
    409: "conflict: also a request whose Idempotency-Key is still being processed",
    422: "unprocessable: also an Idempotency-Key reused with a different request",
}
# Answers every operation may give: an Accept header no JSON satisfies, a rate limit, and a
# server it depends on that is gone.
_V1_EVERYWHERE = {
    "406": "invalid_request: the Accept header admits no JSON",
    "429": "rate_limit_exceeded",
    "503": "service_unavailable: the database, the cache or the task queue cannot be reached",
}
_LEGACY_EVERYWHERE = {"406": "{error: description}", "429": "{error: description}",
                      "503": "{error: description}"}
_METHODS = ("get", "put", "post", "patch", "delete", "head", "options")


def _ref(name: str) -> dict:
    return {"$ref": f"#/components/headers/{name}"}


def _error_response(schema: str, description: str) -> dict:
    return {"description": description,
            "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{schema}"}}}}


def document_limits(result: dict, generator, request, public) -> dict:
    """drf-spectacular postprocessing hook: every API operation may answer 429 and carries the
    X-RateLimit-* headers (docs/rate-limits.md), and may answer 503 with Retry-After when a
    server it depends on is gone (docs/security.md, "Under faults"); v1 POSTs take an
    Idempotency-Key and may answer its 400/409/422 (docs/idempotency.md). Done here once so no
    endpoint has to remember it."""
    components = result.setdefault("components", {})
    headers = components.setdefault("headers", {})
    used: set[str] = set()
    for path, item in result.get("paths", {}).items():
        v1 = path.startswith("/api/v1/")
        for method, operation in item.items():
            if method in _METHODS:
                used |= _document_operation(operation, v1=v1, post=method == "post")
    for name in sorted(used):
        headers[name] = _HEADERS[name]
    return result


def _document_operation(operation: dict, *, v1: bool, post: bool) -> set[str]:
    """Adds the 429 answer, on v1 POSTs the Idempotency-Key, and the headers of each answer;
    returns the names of the headers it refers to."""
    responses = operation.setdefault("responses", {})
    for status, description in (_V1_EVERYWHERE if v1 else _LEGACY_EVERYWHERE).items():
        responses.setdefault(status, _error_response("V1Error" if v1 else "LegacyError",
                                                     description))
    idempotent = v1 and post
    if idempotent:
        params = operation.setdefault("parameters", [])
        if not any(p.get("name") == "Idempotency-Key" for p in params):
            params.append(dict(_IDEMPOTENCY_KEY))
        for status, description in _V1_POST_ERRORS.items():
            responses.setdefault(str(status), _error_response("V1Error", description))
    used: set[str] = set()
    for status, response in responses.items():
        used |= _document_headers(response, status=status, idempotent=idempotent)
    return used


def _document_headers(response: dict, *, status: str, idempotent: bool) -> set[str]:
    """Adds the headers an answer with ``status`` carries; returns the names it refers to."""
    response_headers = response.setdefault("headers", {})
    names = list(_ALWAYS)
    if status == "429":
        names += _ON_429
    elif status == "503":
        names.append("Retry-After")
    if idempotent and status != "429" and not status.startswith("5"):
        names.append("Idempotent-Replayed")
    used: set[str] = set()
    for name in names:
        if status == "429" and name != "X-RateLimit-Policy":
            # A refusal always says which limit and when to come back.
            response_headers[name] = {**_HEADERS[name], "required": True}
        else:
            response_headers.setdefault(name, _ref(name))
            used.add(name)
    return used
