"""Writes to tenants and their users."""

from __future__ import annotations

import secrets

from django.db import transaction

from config.errors import FieldError, Unprocessable

from . import crypto
from .models import AgentProvider, Plan, Tenant, User, UserRole

ADMIN_TOKEN_PREFIX = "at_"


def _new_admin_token() -> str:
    return ADMIN_TOKEN_PREFIX + secrets.token_urlsafe(32)


@transaction.atomic
def tenant_create(
    *,
    name: str,
    plan: str = Plan.STARTER,
    agent_provider: str = AgentProvider.BUILTIN,
    agent_model: str | None = None,
) -> tuple[Tenant, str]:
    """Creates a tenant; returns it with its admin token, which is shown only this once."""
    name = (name or "").strip()
    if not name or len(name) > 200:
        raise Unprocessable(
            "A tenant needs a name of 1 to 200 characters.",
            details=[FieldError("name", "too_long" if name else "required", "1 to 200 characters")],
        )
    if plan not in Plan.values:
        raise Unprocessable(f"Unknown plan {plan!r}.",
                            details=[FieldError("plan", "invalid_enum", ", ".join(Plan.values))])
    if agent_provider not in AgentProvider.values:
        raise Unprocessable(
            f"Unknown agent provider {agent_provider!r}.",
            details=[FieldError("agent", "invalid_enum", ", ".join(AgentProvider.values))],
        )
    tenant = Tenant(name=name, plan=plan, agent_provider=agent_provider)
    if agent_model:
        tenant.agent_model = agent_model
    token = _new_admin_token()
    tenant.admin_token_hash = crypto.digest(token)
    tenant.save()
    return tenant, token


def tenant_reset_admin_token(*, tenant: Tenant) -> str:
    """Issues a new admin token; the old one and every cookie session it opened stop working."""
    token = _new_admin_token()
    Tenant.objects.filter(pk=tenant.pk).update(admin_token_hash=crypto.digest(token))
    tenant.admin_token_hash = crypto.digest(token)
    return token


def tenant_by_admin_token(token: str) -> Tenant | None:
    if not token or not token.startswith(ADMIN_TOKEN_PREFIX) or len(token) > 200:
        return None
    return Tenant.objects.filter(admin_token_hash=crypto.digest(token)).first()


def tenant_set_agent(
    *,
    tenant: Tenant,
    provider: str | None = None,
    model: str | None = None,
    api_key: str | None = None,
    base_url: str | None = None,
    booking_url: str | None = None,
) -> Tenant:
    """Changes the agent settings; ``api_key=""`` clears the key, ``None`` leaves it alone."""
    if provider is not None:
        if provider not in AgentProvider.values:
            raise Unprocessable(f"Unknown agent provider {provider!r}.")
        tenant.agent_provider = provider
    if model is not None:
        tenant.agent_model = model.strip()
    if base_url is not None:
        tenant.agent_base_url = base_url.strip()
    if api_key is not None:
        tenant.agent_api_key_encrypted = crypto.encrypt(api_key.strip())
    if booking_url is not None:
        tenant.booking_url = booking_url.strip()
    for field, value in (("agent_base_url", tenant.agent_base_url), ("booking_url", tenant.booking_url)):
        if value and not value.startswith(("http://", "https://")):
            raise Unprocessable("URLs must start with http:// or https://.",
                                details=[FieldError(field, "invalid_format", "An http(s) URL.")])
    tenant.save()
    return tenant


def user_create(
    *,
    tenant: Tenant,
    email: str,
    first_name: str = "",
    last_name: str = "",
    role: str = UserRole.REP,
    password: str | None = None,
) -> User:
    """Adds a member of a tenant's sales staff; they sign in to the dashboard with ``email``."""
    user = User(
        tenant=tenant,
        username=email.lower(),
        email=email.lower(),
        first_name=first_name,
        last_name=last_name,
        role=role,
    )
    if password:
        user.set_password(password)
    else:
        user.set_unusable_password()
    user.save()
    return user
