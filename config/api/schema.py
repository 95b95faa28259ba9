"""OpenAPI pieces shared by the endpoints: the error envelopes and the security schemes."""

from __future__ import annotations

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.openapi import AutoSchema as SpectacularAutoSchema
from drf_spectacular.utils import OpenApiResponse, inline_serializer
from rest_framework import serializers

from .errors import V1_STATUS


class AutoSchema(SpectacularAutoSchema):
    """Our list endpoints return envelopes (``{data, pagination}``, ``{leads: [...]}``) that each
    view documents whole, so a list action's response is never wrapped in an array."""

    def _is_list_view(self, serializer=None) -> bool:
        return False

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
