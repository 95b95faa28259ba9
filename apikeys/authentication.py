"""Who is calling: an API key (both surfaces) or the legacy admin cookie.

Both resolve to a :class:`Caller` carrying the tenant, the live/test mode and the scope. Views
take tenant and mode from it and from nowhere else.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.core import signing
from rest_framework import authentication, exceptions

from config import logs
from tenants.models import Tenant
from tenants.selectors import admin_session_mark, tenant_by_admin_session

from .models import ApiKey, Scope, scope_allows
from .services import api_key_authenticate

ADMIN_COOKIE_NAME = "sa_admin_session"
ADMIN_COOKIE_MAX_AGE = 7 * 24 * 3600
_COOKIE_SALT = "legacy-admin-session"


@dataclass(frozen=True)
class Caller:
    tenant: Tenant
    livemode: bool
    scope: str
    api_key: ApiKey | None = None  # None for a cookie session
    via: str = "api_key"  # "api_key" or "admin_cookie"

    is_authenticated = True
    is_anonymous = False

    def allows(self, scope: str) -> bool:
        return scope_allows(self.scope, scope)

    @property
    def identity(self) -> str:
        return f"key:{self.api_key.pk}" if self.api_key else f"cookie:{self.tenant.pk}"


class BearerKeyAuthentication(authentication.BaseAuthentication):
    """``Authorization: Bearer sk_live_…`` or ``sk_test_…``."""

    def authenticate(self, request):
        header = request.headers.get("Authorization")
        if header is None:
            return None
        scheme, _, raw = header.strip().partition(" ")
        if scheme.lower() != "bearer" or not raw.strip() or " " in raw.strip():
            raise exceptions.AuthenticationFailed(
                "Malformed Authorization header: expected 'Bearer <API key>'."
            )
        key = api_key_authenticate(raw.strip())
        if key is None:
            raise exceptions.AuthenticationFailed("Invalid, revoked or expired API key.")
        logs.bind_tenant(key.tenant)
        return Caller(tenant=key.tenant, livemode=key.livemode, scope=key.scope, api_key=key), key

    def authenticate_header(self, request) -> str:
        # A header makes DRF answer 401 (not 403) when credentials are missing.
        return 'Bearer realm="api"'


def admin_cookie_value(tenant: Tenant) -> str:
    # The token hash fragment ties the cookie to the current admin token: resetting the token
    # ends every session it opened.
    return signing.dumps(admin_session_mark(tenant), salt=_COOKIE_SALT)


def tenant_from_admin_cookie(value: str) -> Tenant | None:
    try:
        mark = signing.loads(value, salt=_COOKIE_SALT, max_age=ADMIN_COOKIE_MAX_AGE)
    except signing.BadSignature:
        return None
    return tenant_by_admin_session(mark)


class AdminCookieAuthentication(authentication.BaseAuthentication):
    """The legacy session cookie from ``POST /api/admin/auth``: admin rights on live data.

    The cookie is SameSite=Lax, so browsers do not send it on cross-site POST, PATCH or DELETE;
    that is this surface's protection against cross-site request forgery.
    """

    def authenticate(self, request):
        value = request.COOKIES.get(ADMIN_COOKIE_NAME)
        if not value:
            return None
        tenant = tenant_from_admin_cookie(value)
        if tenant is None:
            raise exceptions.AuthenticationFailed("The session has expired; sign in again.")
        logs.bind_tenant(tenant)
        return Caller(tenant=tenant, livemode=True, scope=Scope.ADMIN, via="admin_cookie"), None

    def authenticate_header(self, request) -> str:
        return 'Bearer realm="api"'
