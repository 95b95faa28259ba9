"""Legacy surface: the admin-token cookie login, ``/api/admin/auth`` (the cookie is one of the
legacy surface's two ways to authenticate, ``apikeys.authentication``)."""

from __future__ import annotations

from django.utils import timezone
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.permissions import AllowAny
from rest_framework.response import Response

from apikeys.authentication import ADMIN_COOKIE_MAX_AGE, ADMIN_COOKIE_NAME, admin_cookie_value
from apikeys.models import Scope
from config.api.schema import legacy_errors
from config.api.views import LegacyAPIView
from core.errors import ServiceError
from core.timestamps import format_timestamp
from tenants.selectors import tenant_by_admin_token


class InvalidAdminToken(ServiceError):
    kind = "unauthorized"
    default_message = "Invalid admin token."


class LoginSerializer(serializers.Serializer):
    token = serializers.CharField(max_length=200, trim_whitespace=True)


_SessionSerializer = inline_serializer(
    name="LegacyAdminSession",
    fields={
        "authenticated": serializers.BooleanField(),
        "tenant": inline_serializer(
            name="LegacyTenantRef",
            fields={"id": serializers.UUIDField(), "name": serializers.CharField()},
        ),
        "via": serializers.ChoiceField(choices=["admin_cookie", "api_key"]),
        "livemode": serializers.BooleanField(),
        "scope": serializers.ChoiceField(choices=Scope.values),
        "expiresAt": serializers.CharField(allow_null=True),
    },
)


def _session_body(*, tenant, via: str, livemode: bool, scope: str, expires_at) -> dict:
    return {
        "authenticated": True,
        "tenant": {"id": str(tenant.pk), "name": tenant.name},
        "via": via,
        "livemode": livemode,
        "scope": scope,
        "expiresAt": format_timestamp(expires_at),
    }


class AdminAuthView(LegacyAPIView):
    """``POST`` signs in with the admin token and sets the session cookie (HTTP-only, 7 days,
    SameSite=Lax, Secure on HTTPS); ``GET`` tells who the caller is; ``DELETE`` signs out."""

    min_scope = Scope.ADMIN

    def perform_authentication(self, request):
        # Signing in or out must work whatever stale cookie the browser still sends.
        if request.method not in ("POST", "DELETE"):
            super().perform_authentication(request)

    def get_permissions(self):
        if self.request.method in ("POST", "DELETE"):
            return [AllowAny()]
        return super().get_permissions()

    @extend_schema(
        operation_id="legacy_admin_auth_login",
        request=LoginSerializer,
        responses={200: _SessionSerializer, **legacy_errors(401, public=True, body=True)},
        auth=[],
    )
    def post(self, request):
        body = LoginSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        tenant = tenant_by_admin_token(body.validated_data["token"])
        if tenant is None:
            raise InvalidAdminToken()
        expires_at = timezone.now() + timezone.timedelta(seconds=ADMIN_COOKIE_MAX_AGE)
        response = Response(_session_body(tenant=tenant, via="admin_cookie", livemode=True,
                                          scope=Scope.ADMIN, expires_at=expires_at))
        response.set_cookie(
            ADMIN_COOKIE_NAME,
            admin_cookie_value(tenant),
            max_age=ADMIN_COOKIE_MAX_AGE,
            httponly=True,
            secure=request.is_secure(),
            samesite="Lax",
            path="/",
        )
        return response

    @extend_schema(operation_id="legacy_admin_auth_session",
                   responses={200: _SessionSerializer, **legacy_errors()})
    def get(self, request):
        caller = request.user
        return Response(_session_body(tenant=caller.tenant, via=caller.via,
                                      livemode=caller.livemode, scope=caller.scope,
                                      expires_at=None))

    @extend_schema(operation_id="legacy_admin_auth_logout", request=None,
                   responses={204: None}, auth=[])
    def delete(self, request):
        response = Response(status=204)
        response.delete_cookie(ADMIN_COOKIE_NAME, path="/", samesite="Lax")
        return response
