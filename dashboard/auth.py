"""Who is using the dashboard, and the one way its pages reach data.

The user is a member of a tenant's staff (Django login) or whoever holds the tenant's admin token
(the same token as ``POST /api/admin/auth``). ``resolve_actor`` makes an ``Actor`` of them: the
tenant, taken from here and from nowhere else, and the mode shown (live or test data). Pages read
and write only through the actor, which passes its tenant and mode to the apps' selectors and
services (``docs/dashboard.md``, "Scoping")."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from functools import wraps
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth import logout
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django_otp import DEVICE_ID_SESSION_KEY

from config import logs
from tenants import two_factor
from tenants.models import UserRole
from tenants.selectors import (
    admin_session_mark,
    tenant_by_admin_session,
    tenant_by_admin_token,
    user_has_two_factor,
)

if TYPE_CHECKING:
    from tenants.models import Tenant, User

T = TypeVar("T")

TOKEN_SESSION_KEY = "dashboard_admin_token"  # {"t": tenant id, "h": token hash fragment}
MODE_SESSION_KEY = "dashboard_livemode"


@dataclass(frozen=True)
class Actor:
    """The signed-in user, and their only way to the data: ``read`` calls a selector (``write``
    a service) with the actor's tenant and mode, so a page cannot ask for another tenant's or
    mode's rows, nor forget to scope; ``get`` is ``read`` of one row, or 404. What belongs to
    the tenant rather than to a mode (API keys, staff, settings) is read with ``both_modes``:
    the tenant only."""

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

    def read(self, selector: Callable[..., T], /, *, both_modes: bool = False, **kwargs: Any) -> T:
        """``selector(tenant=…, livemode=…, **kwargs)``; without ``livemode`` if ``both_modes``."""
        owner: dict[str, Any] = {"tenant": self.tenant}
        if not both_modes:
            owner["livemode"] = self.livemode
        return selector(**owner, **kwargs)

    def get(self, selector: Callable[..., T | None], /, *, both_modes: bool = False,
            **kwargs: Any) -> T:
        """The one row ``read`` finds; 404 when there is none (another tenant's or mode's)."""
        found = self.read(selector, both_modes=both_modes, **kwargs)
        if found is None:
            raise Http404()
        return found

    def write(self, service: Callable[..., T], /, *, both_modes: bool = False, **kwargs: Any) -> T:
        """A service that creates or changes the tenant's rows, called as ``read`` calls a
        selector. Services that act on a row a page already holds take the row instead."""
        return self.read(service, both_modes=both_modes, **kwargs)


def _token_tenant(request: HttpRequest) -> Tenant | None:
    return tenant_by_admin_session(request.session.get(TOKEN_SESSION_KEY))


class SecondFactor(StrEnum):
    """Where a signed-in session stands with the second factor (``second_factor``)."""

    VERIFIED = "verified"  # signed in with a code of a device the person still has
    NONE = "none"  # the person has no two-factor device, and signed in without a code
    MISSING = "missing"  # the person has a device, and this session never gave its code


def second_factor(request: HttpRequest) -> SecondFactor:
    """Whether the session of the signed-in person passed their second factor. A session that
    only gave the password (whatever page signed it in: the admin's login, a session older than
    the device) of a person with a confirmed device is ``MISSING``, and neither the dashboard
    nor the admin accepts it. One query; kept on the request."""
    known = getattr(request, "_second_factor", None)
    if known is not None:
        return known
    user = request.user
    session = getattr(request, "session", None) or {}
    if two_factor.session_device_valid(user=user,
                                       persistent_id=session.get(DEVICE_ID_SESSION_KEY)):
        state = SecondFactor.VERIFIED
    elif user_has_two_factor(user=user):
        state = SecondFactor.MISSING
    else:
        state = SecondFactor.NONE
    request._second_factor = state
    return state


def resolve_actor(request: HttpRequest) -> Actor | None:
    actor = _actor(request)
    if actor is not None:
        logs.bind_tenant(actor.tenant)
    return actor


def _actor(request: HttpRequest) -> Actor | None:
    livemode = request.session.get(MODE_SESSION_KEY, True) is not False
    user = request.user
    if user.is_authenticated:
        if user.tenant_id is None or not user.is_active:
            return None
        if second_factor(request) == SecondFactor.MISSING:
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
    request.session[TOKEN_SESSION_KEY] = admin_session_mark(tenant)
    return tenant


def two_factor_missing(request: HttpRequest, actor: Actor) -> HttpResponse | None:
    """Where a person goes first when their tenant requires two-factor sign-in and has none
    yet: to set it up. (A person who has a device and whose session did not give its code never
    gets this far: ``resolve_actor`` refuses the session.) None when nothing is missing."""
    if actor.user is None or not actor.tenant.require_two_factor \
            or second_factor(request) == SecondFactor.VERIFIED:
        return None
    messages.warning(request, "Your team requires two-factor sign-in: set it up to continue.")
    return redirect(reverse("dashboard:profile") + "#two-factor")


def dashboard_view(*, manage: bool = False, two_factor_setup: bool = False) -> Callable:
    """Resolves ``request.actor``; sends strangers to the login page, reps away from the pages
    only managers and the admin token may use, and, where the tenant requires two-factor
    sign-in, people without it to set it up (but for the pages where they do: ``two_factor_setup``)."""

    def decorator(view: Callable) -> Callable:
        @wraps(view)
        def wrapped(request: HttpRequest, *args, **kwargs) -> HttpResponse:
            actor = resolve_actor(request)
            if actor is None:
                if request.user.is_authenticated:
                    if request.user.tenant_id is None:
                        messages.error(request, "This account belongs to no tenant: operators of "
                                                "the service use the admin site.")
                    else:
                        messages.info(request, "Sign in again, with the code of your app: this "
                                               "session was not signed in with it.")
                    logout(request)
                login = reverse("dashboard:login")
                return redirect(f"{login}?{urlencode({'next': request.get_full_path()})}")
            if not two_factor_setup:
                missing = two_factor_missing(request, actor)
                if missing is not None:
                    return missing
            if manage and not actor.can_manage:
                messages.error(request, "Only sales managers and the tenant administrator can do "
                                        "that.")
                return redirect("dashboard:home")
            request.actor = actor
            return view(request, *args, **kwargs)

        return wrapped

    return decorator
