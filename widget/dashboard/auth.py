"""Who is using the dashboard: a member of a tenant's staff (Django login) or whoever holds the
tenant's admin token (the same token as ``POST /api/admin/auth``). Every page works for one
tenant, taken from here and from nowhere else, and for one mode (live or test data)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import wraps
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth import logout
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse

from tenants.models import Tenant, User, UserRole
from tenants.services import tenant_by_admin_token

TOKEN_SESSION_KEY = "dashboard_admin_token"  # {"t": tenant id, "h": token hash fragment}
MODE_SESSION_KEY = "dashboard_livemode"


@dataclass(frozen=True)
class Actor:
    tenant: Tenant
    user: User | None  # None: signed in with the admin token
    livemode: bool

    @property
    def can_manage(self) -> bool:
        """Keys and settings: the admin token and sales managers; reps work leads and chats."""
        return self.user is None or self.user.role == UserRole.MANAGER

    @property
    def name(self) -> str:
        return self.user.display_name if self.user else "Administrator (admin token)"

    @property
    def scope(self) -> dict:
        """Filter keywords for the tenant's live or test rows."""
        return {"tenant": self.tenant, "livemode": self.livemode}


def _token_tenant(request: HttpRequest) -> Tenant | None:
    data = request.session.get(TOKEN_SESSION_KEY)
    if not isinstance(data, dict):
        return None
    tenant = Tenant.objects.filter(pk=data.get("t")).first()
    # A reset of the admin token ends the dashboard sessions it opened, as it does the cookie's.
    if tenant is None or not tenant.admin_token_hash or tenant.admin_token_hash[:16] != data.get("h"):
        return None
    return tenant


def resolve_actor(request: HttpRequest) -> Actor | None:
    livemode = request.session.get(MODE_SESSION_KEY, True) is not False
    user = request.user
    if user.is_authenticated:
        if user.tenant_id is None or not user.is_active:
            return None
        return Actor(tenant=user.tenant, user=user, livemode=livemode)
    tenant = _token_tenant(request)
    return Actor(tenant=tenant, user=None, livemode=livemode) if tenant else None


def sign_in_with_token(request: HttpRequest, token: str) -> Tenant | None:
    tenant = tenant_by_admin_token(token.strip())
    if tenant is None:
        return None
    if request.user.is_authenticated:
        logout(request)
    request.session.cycle_key()  # no session fixation across the sign-in
    request.session[TOKEN_SESSION_KEY] = {"t": str(tenant.pk), "h": tenant.admin_token_hash[:16]}
    return tenant


def dashboard_view(*, manage: bool = False) -> Callable:
    """Resolves ``request.actor``; sends strangers to the login page, and reps away from the
    pages only managers and the admin token may use."""

    def decorator(view: Callable) -> Callable:
        @wraps(view)
        def wrapped(request: HttpRequest, *args, **kwargs) -> HttpResponse:
            actor = resolve_actor(request)
            if actor is None:
                if request.user.is_authenticated:
                    messages.error(request, "This account belongs to no tenant: operators of the "
                                            "service use the admin site.")
                    logout(request)
                login = reverse("dashboard:login")
                return redirect(f"{login}?{urlencode({'next': request.get_full_path()})}")
            if manage and not actor.can_manage:
                messages.error(request, "Only sales managers and the tenant administrator can do "
                                        "that.")
                return redirect("dashboard:home")
            request.actor = actor
            return view(request, *args, **kwargs)

        return wrapped

    return decorator
