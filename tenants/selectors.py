"""Reads of tenants and their members: by the references callers hold (public id, admin token,
an admin session's mark) and the staff lists."""

from __future__ import annotations

import re
import uuid
from collections.abc import Collection
from typing import Any

from django.core.exceptions import ValidationError
from django.db.models import QuerySet

from config import logs
from core import crypto
from core.models import Event, EventType

from .models import Invitation, ProviderHealth, StaffAccess, Tenant, User

TEAM_EVENT_TYPES = [t for t in EventType.values if t.startswith("team.")]

ADMIN_TOKEN_PREFIX = "at_"
# What a public id may look like (``tn_`` and 20 hex digits today; room for other forms): the
# check keeps NUL bytes and other junk from a widget's ``?tenant=`` away from the database.
_PUBLIC_ID = re.compile(r"[A-Za-z0-9_-]{1,40}")


def tenant_by_public_id(public_id: Any) -> Tenant | None:
    """The tenant a widget or public chat request names; None for anything else."""
    if not isinstance(public_id, str) or not _PUBLIC_ID.fullmatch(public_id):
        return None
    tenant = Tenant.objects.filter(public_id=public_id).first()
    logs.bind_tenant(tenant)
    return tenant


def tenant_by_admin_token(token: str) -> Tenant | None:
    if not token or not token.startswith(ADMIN_TOKEN_PREFIX) or len(token) > 200:
        return None
    return Tenant.objects.filter(admin_token_hash=crypto.digest(token)).first()


def admin_session_mark(tenant: Tenant) -> dict[str, str]:
    """What a session opened with the admin token keeps (the legacy cookie, the dashboard's
    session): the tenant and a fragment of the token's hash, so that resetting the token ends
    every session it opened."""
    return {"t": str(tenant.pk), "h": tenant.admin_token_hash[:16]}


def tenant_by_admin_session(mark: Any) -> Tenant | None:
    """The tenant of a session's ``admin_session_mark``, while its admin token is unchanged."""
    if not isinstance(mark, dict) or not isinstance(mark.get("t"), str):
        return None
    try:
        tenant = Tenant.objects.filter(pk=mark["t"]).first()
    except ValidationError:
        return None
    if tenant is None or not tenant.admin_token_hash or tenant.admin_token_hash[:16] != mark.get("h"):
        return None
    return tenant


def agent_phrasings(*, tenant: Tenant) -> list[dict[str, str]]:
    """The tenant's own example phrasings of the agent's decisions, oldest first (as added):
    ``{id, decision, text, createdAt}``. From the row the caller holds: no statement."""
    return list(tenant.agent_phrasings or [])


def agent_phrasing_examples(*, tenant: Tenant) -> tuple[tuple[str, str], ...]:
    """(decision, text) of each of the tenant's phrasings, for the chat turn's context."""
    return tuple((p["decision"], p["text"]) for p in tenant.agent_phrasings or ())


def tenant_users(*, tenant: Tenant) -> QuerySet[User]:
    """Active members of the tenant's staff, oldest first (stable: id breaks ties)."""
    return User.objects.filter(tenant=tenant, is_active=True).order_by("date_joined", "id")


def tenant_by_reference(ref: str) -> Tenant | None:
    """The tenant whose id (UUID) or public id (``tn_…``) is ``ref``, as operators type it."""
    try:
        found = Tenant.objects.filter(pk=ref).first()
    except ValidationError:
        found = None
    return found or Tenant.objects.filter(public_id=ref).first()


def tenant_user_names(*, tenant: Tenant, user_ids: Collection[uuid.UUID]) -> dict[uuid.UUID, str]:
    """The display name of each of ``user_ids`` that is a member of the tenant's staff, active
    or not (a history names people who have since left), in one query."""
    if not user_ids:
        return {}
    return {user.pk: user.display_name
            for user in User.objects.filter(tenant=tenant, pk__in=list(user_ids))
            .only("id", "username", "first_name", "last_name")}


def tenant_user_get(*, tenant: Tenant, user_id: uuid.UUID) -> User | None:
    """An active member of the tenant's staff, or None (someone else's, inactive, unknown)."""
    return tenant_users(tenant=tenant).filter(pk=user_id).first()


def team_member_get(*, tenant: Tenant, user_id: uuid.UUID) -> User | None:
    """A member of the tenant's staff, active or not (the Team page acts on both), or None."""
    return User.objects.filter(tenant=tenant, pk=user_id).first()


def team_invitations(*, tenant: Tenant, limit: int = 50) -> list[Invitation]:
    """The invitations not accepted nor revoked (expired ones too: they can be resent), newest
    first, with who sent them."""
    return list(Invitation.objects.filter(tenant=tenant, accepted_at__isnull=True,
                                          revoked_at__isnull=True)
                .select_related("invited_by").order_by("-created_at", "-id")[:limit])


def team_invitation_get(*, tenant: Tenant, invitation_id: uuid.UUID) -> Invitation | None:
    return Invitation.objects.filter(tenant=tenant, pk=invitation_id).first()


def team_events(*, tenant: Tenant, limit: int = 20) -> list[Event]:
    """The team's latest events (``team.*``), newest first: the Team page's activity."""
    return list(Event.objects.filter(tenant=tenant, type__in=TEAM_EVENT_TYPES)
                .order_by("-occurred_at", "-id")[:limit])


def user_has_two_factor(*, user: User) -> bool:
    """Whether the person has a confirmed TOTP device (they sign in with a code)."""
    from django_otp.plugins.otp_totp.models import TOTPDevice

    return TOTPDevice.objects.filter(user=user, confirmed=True).exists()


def user_signing_in(*, user_id: Any) -> User | None:
    """An active account by id, of a tenant's staff or an operator (a sign-in waiting for its
    code names them), or None for anything else."""
    try:
        return User.objects.filter(pk=user_id, is_active=True).first()
    except (ValidationError, ValueError, TypeError):
        return None


def team_two_factor_members(*, tenant: Tenant) -> set[uuid.UUID]:
    """The ids of the tenant's staff who sign in with a code (a confirmed TOTP device)."""
    from django_otp.plugins.otp_totp.models import TOTPDevice

    return set(TOTPDevice.objects.filter(user__tenant=tenant, confirmed=True)
               .values_list("user_id", flat=True))


def staff_for_password_reset(*, email: str) -> list[User]:
    """The active staff member whose email is ``email`` and who has a usable password (Django's
    ``PasswordResetForm.get_users`` rule, limited to the tenants' staff)."""
    found = User.objects.filter(email__iexact=(email or "").strip(), is_active=True,
                                tenant__isnull=False)
    return [user for user in found if user.has_usable_password()]


def staff_accesses(*, tenant: Tenant, livemode: bool) -> QuerySet[StaffAccess]:
    """The staff access audit of the tenant's data in one mode, newest first (the Privacy page
    pages through it on the ``staff_access_tenant_at`` index)."""
    return StaffAccess.objects.filter(tenant=tenant, livemode=livemode).order_by("-at", "-id")
def provider_health(*, tenant: Tenant) -> ProviderHealth | None:
    """How the tenant's language-model provider answered lately; None before its first turn
    (or since its settings changed), and for the builtin agent, which cannot fail."""
    if tenant.agent_provider != "openai":
        return None
    return ProviderHealth.objects.filter(tenant=tenant).first()
