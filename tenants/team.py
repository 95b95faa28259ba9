"""The team's services (docs/dashboard.md, "Team" and "Accounts"): invitations, roles, who is
active, and the tenant's two-factor rule. Every change emits a ``team.*`` event that names the
person who acted (``actor``): a member of the staff, or None for the admin token.

**An invitation's link** carries a token signed with the service's key (``django.core.signing``,
its own salt) that names the invitation and a random nonce; the invitation keeps only its hash.
So a link is checked in two steps: the signature (a made-up or altered link is refused before
any lookup), then the hash (a resent invitation's older link no longer matches). It works once:
accepting sets ``accepted_at`` under a row lock.
"""

from __future__ import annotations

import hmac
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from django.contrib.auth import password_validation
from django.core import signing
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from core import crypto, events
from core.emails import EmailRefused, normalise_email
from core.errors import Conflict, FieldError, NotFound, Unprocessable
from core.models import EventType
from core.text import CONTROL_MESSAGE, has_control

from .models import INVITATION_DAYS, Invitation, Tenant, User, UserRole

TOKEN_SALT = "tenants.invitation"
ADMIN_TOKEN_ACTOR = "Administrator (admin token)"


def actor_facts(actor: User | None) -> dict[str, Any]:
    """Who did it, as the events keep it: the person's id and name at that moment, or the
    admin token."""
    if actor is None:
        return {"id": None, "name": ADMIN_TOKEN_ACTOR}
    return {"id": str(actor.pk), "name": actor.display_name}


def member_facts(user: User) -> dict[str, Any]:
    return {"id": str(user.pk), "email": user.email, "name": user.display_name,
            "role": user.role, "active": user.is_active}


def invitation_facts(invitation: Invitation) -> dict[str, Any]:
    return {"id": str(invitation.pk), "email": invitation.email, "role": invitation.role,
            "expires_at": invitation.expires_at.isoformat()}


def _emit(type: str, tenant: Tenant | Any, description: str, actor: User | None,
          **facts: Any) -> Any:
    # The team belongs to the tenant, not to live or test data: its events are live ones.
    tenant_id = tenant.pk if isinstance(tenant, Tenant) else tenant
    return events.emit(type, tenant_id=tenant_id, livemode=True, description=description,
                       facts={"actor": actor_facts(actor), **facts})


# --- invitations ------------------------------------------------------------------------------

def _new_token(invitation: Invitation) -> str:
    return signing.dumps({"i": invitation.pk.hex, "n": secrets.token_urlsafe(16)},
                         salt=TOKEN_SALT, compress=False)


def _issue(invitation: Invitation, now: datetime) -> str:
    token = _new_token(invitation)
    invitation.token_hash = crypto.digest(token)
    invitation.sent_at = now
    invitation.expires_at = now + timedelta(days=INVITATION_DAYS)
    return token


def staff_email(email: str) -> str:
    """A staff member's address as kept (their user name): the form every address takes
    (``core.emails``: NFKC, the domain IDNA-encoded), in lower case. Raises ``EmailRefused``."""
    return normalise_email(email).lower()


def name_problems(**names: str) -> list[FieldError]:
    """The names (``first_name=…``) that hold a line break or another control character: they
    go into email subjects and invitations (``core.text``)."""
    return [FieldError(field, "invalid_format", CONTROL_MESSAGE)
            for field, value in names.items() if has_control(value)]


def _email_problem(tenant: Tenant, email: str) -> FieldError | None:
    existing = User.objects.filter(username=email).first()
    if existing is not None and existing.tenant_id == tenant.pk:
        return FieldError("email", "taken", "This person already has an account in your team.")
    if existing is not None:
        return FieldError("email", "taken", "This address already has an account of the "
                                            "service: invite another address.")
    if Invitation.objects.filter(tenant=tenant, email=email, accepted_at__isnull=True,
                                 revoked_at__isnull=True, expires_at__gt=timezone.now()).exists():
        return FieldError("email", "taken", "This address has an invitation waiting: resend it "
                                            "from the list below.")
    return None


@transaction.atomic
def invitation_create(*, tenant: Tenant, actor: User | None, email: str, role: str
                      ) -> tuple[Invitation, str, Any]:
    """Invites ``email`` to the team as ``role``; returns the invitation, its token (shown
    once, and sent by email) and the event, which the email refers to."""
    details = []
    if role not in UserRole.values:
        details.append(FieldError("role", "invalid_enum", ", ".join(UserRole.values)))
    try:
        email = staff_email(email)
    except EmailRefused as refused:
        details.append(FieldError("email", refused.code, refused.message))
    else:
        problem = _email_problem(tenant, email)
        if problem is not None:
            details.append(problem)
    if details:
        raise Unprocessable("The invitation was not sent.", details=details)
    now = timezone.now()
    invitation = Invitation(tenant=tenant, email=email, role=role, invited_by=actor,
                            created_at=now)
    token = _issue(invitation, now)
    invitation.save()
    event = _emit(EventType.TEAM_MEMBER_INVITED, tenant,
                  f"{actor_facts(actor)['name']} invited {email} as "
                  f"{UserRole(role).label.lower()}", actor, invitation=invitation_facts(invitation))
    return invitation, token, event


def _locked_invitation(invitation: Invitation) -> Invitation:
    return Invitation.objects.select_for_update().select_related("tenant").get(pk=invitation.pk)


@transaction.atomic
def invitation_resend(*, invitation: Invitation, actor: User | None
                      ) -> tuple[Invitation, str, Any]:
    """A new token for a waiting (or expired) invitation, good for another week: the link sent
    before stops working."""
    current = _locked_invitation(invitation)
    if not current.is_pending:
        raise Conflict("This invitation was " + ("accepted." if current.accepted_at else
                                                   "revoked: invite the address again."))
    token = _issue(current, timezone.now())
    current.save(update_fields=["token_hash", "sent_at", "expires_at"])
    event = _emit(EventType.TEAM_INVITATION_RESENT, current.tenant,
                  f"{actor_facts(actor)['name']} resent the invitation of {current.email}",
                  actor, invitation=invitation_facts(current))
    return current, token, event


@transaction.atomic
def invitation_revoke(*, invitation: Invitation, actor: User | None) -> Invitation:
    """The invitation's link stops working. Revoking twice changes nothing."""
    current = _locked_invitation(invitation)
    if current.accepted_at is not None:
        raise Conflict("This invitation was accepted already: deactivate the person instead.")
    if current.revoked_at is None:
        current.revoked_at = timezone.now()
        current.save(update_fields=["revoked_at"])
        _emit(EventType.TEAM_INVITATION_REVOKED, current.tenant,
              f"{actor_facts(actor)['name']} revoked the invitation of {current.email}", actor,
              invitation=invitation_facts(current))
    return current


class LinkState(StrEnum):
    VALID = "valid"
    INVALID = "invalid"  # not a link of the service, or altered
    REPLACED = "replaced"  # resent since: a newer link works
    REVOKED = "revoked"
    USED = "used"
    EXPIRED = "expired"


@dataclass(frozen=True)
class InvitationLink:
    state: LinkState
    invitation: Invitation | None = None


def invitation_by_token(token: str, *, now: datetime | None = None) -> InvitationLink:
    """What the link ``token`` leads to, and whether it still works."""
    try:
        signed = signing.loads(token or "", salt=TOKEN_SALT)
        invitation = (Invitation.objects.select_related("tenant")
                      .filter(pk=signed["i"]).first())
    except (signing.BadSignature, KeyError, TypeError, ValueError, ValidationError):
        return InvitationLink(LinkState.INVALID)
    if invitation is None:
        return InvitationLink(LinkState.INVALID)
    if invitation.accepted_at is not None:
        state = LinkState.USED
    elif invitation.revoked_at is not None:
        state = LinkState.REVOKED
    elif not hmac.compare_digest(invitation.token_hash, crypto.digest(token)):
        state = LinkState.REPLACED
    elif invitation.expires_at <= (now or timezone.now()):
        state = LinkState.EXPIRED
    else:
        state = LinkState.VALID
    return InvitationLink(state, invitation)


LINK_PROBLEMS = {
    LinkState.INVALID: "This invitation link is not valid. Check that it was copied whole.",
    LinkState.REPLACED: "This invitation was sent again: use the link of the newest email.",
    LinkState.REVOKED: "This invitation was revoked. Ask your manager for a new one.",
    LinkState.USED: "This invitation was used already. Sign in with your email and password.",
    LinkState.EXPIRED: f"This invitation has expired (links work for {INVITATION_DAYS} days). "
                       "Ask your manager to send it again.",
}


def _account_problems(user: User, password: str) -> list[FieldError]:
    """What is wrong with a new account: no first name, or a password that Django's
    validators refuse (each of their reasons)."""
    details = [] if user.first_name else [FieldError("first_name", "required", "Your first name.")]
    details += name_problems(first_name=user.first_name, last_name=user.last_name)
    try:
        password_validation.validate_password(password, user)
    except ValidationError as exc:
        details += [FieldError("password", "invalid", message) for message in exc.messages]
    return details


@transaction.atomic
def invitation_accept(*, token: str, first_name: str, last_name: str, password: str) -> User:
    """Makes the invited person's account from a working link: their name and a password that
    Django's validators accept. The link then stops working."""
    link = invitation_by_token(token)
    if link.state != LinkState.VALID:
        raise Conflict(LINK_PROBLEMS[link.state])
    invitation = _locked_invitation(link.invitation)
    if not invitation.is_pending or invitation.token_hash != crypto.digest(token):
        raise Conflict(LINK_PROBLEMS[LinkState.USED])
    first_name, last_name = (first_name or "").strip(), (last_name or "").strip()
    user = User(tenant=invitation.tenant, username=invitation.email, email=invitation.email,
                first_name=first_name[:150], last_name=last_name[:150], role=invitation.role)
    details = _account_problems(user, password)
    if details:
        raise Unprocessable("Your account was not made.", details=details)
    if User.objects.filter(username=invitation.email).exists():
        raise Conflict("This address already has an account: sign in instead.")
    user.set_password(password)
    user.save()
    invitation.accepted_at, invitation.user = timezone.now(), user
    invitation.save(update_fields=["accepted_at", "user"])
    _emit(EventType.TEAM_MEMBER_JOINED, invitation.tenant,
          f"{user.display_name} joined the team as {user.get_role_display().lower()}", user,
          member=member_facts(user), invitation=invitation_facts(invitation))
    return user


# --- members ----------------------------------------------------------------------------------

def _other_active_managers(user: User) -> bool:
    managers = (User.objects.select_for_update()
                .filter(tenant_id=user.tenant_id, is_active=True, role=UserRole.MANAGER)
                .exclude(pk=user.pk))
    return bool(list(managers.values_list("pk", flat=True)[:1]))


def _locked_member(user: User) -> User:
    current = User.objects.select_for_update().filter(pk=user.pk, tenant_id=user.tenant_id).first()
    if current is None or current.tenant_id is None:
        raise NotFound("No such member of this tenant's staff.")
    return current


@transaction.atomic
def member_set_role(*, user: User, role: str, actor: User | None) -> User:
    """Makes ``user`` a manager or a rep. The tenant always keeps an active manager."""
    if role not in UserRole.values:
        raise Unprocessable(details=[FieldError("role", "invalid_enum", ", ".join(UserRole.values))])
    current = _locked_member(user)
    if current.role == role:
        return current
    if (current.role == UserRole.MANAGER and current.is_active
            and not _other_active_managers(current)):
        raise Unprocessable("The team needs an active manager: make someone else a manager "
                            "first.", details=[FieldError("role", "last_manager",
                                                          "The team's last active manager.")])
    previous, current.role = current.role, role
    current.save(update_fields=["role"])
    _emit(EventType.TEAM_ROLE_CHANGED, current.tenant_id,
          f"{actor_facts(actor)['name']} made {current.display_name} a "
          f"{current.get_role_display().lower()}", actor, member=member_facts(current),
          previous_role=previous)
    return current


@transaction.atomic
def member_set_active(*, user: User, active: bool, actor: User | None) -> User:
    """Deactivates (or reactivates) a member: a deactivated one cannot sign in, and their
    sessions end at their next request; their history stays. The tenant always keeps an active
    manager, and nobody deactivates themselves. Reassigning their open handoffs is the
    caller's (``conversations.services.team.member_deactivate``)."""
    current = _locked_member(user)
    if current.is_active == active:
        return current
    if not active and actor is not None and actor.pk == current.pk:
        raise Unprocessable("You cannot deactivate yourself: ask another manager.",
                            details=[FieldError("user", "self", "Your own account.")])
    if not active and current.role == UserRole.MANAGER and not _other_active_managers(current):
        raise Unprocessable("The team needs an active manager: make someone else a manager "
                            "first.", details=[FieldError("user", "last_manager",
                                                          "The team's last active manager.")])
    current.is_active = active
    current.save(update_fields=["is_active"])
    verb, type = (("reactivated", EventType.TEAM_MEMBER_REACTIVATED) if active else
                  ("deactivated", EventType.TEAM_MEMBER_DEACTIVATED))
    _emit(type, current.tenant_id, f"{actor_facts(actor)['name']} {verb} {current.display_name}",
          actor, member=member_facts(current))
    return current


@transaction.atomic
def user_set_profile(*, user: User, first_name: str, last_name: str, email: str) -> User:
    """A person's own name and email (their sign-in: the email is their user name)."""
    first_name, last_name = (first_name or "").strip(), (last_name or "").strip()
    details = [] if first_name else [FieldError("first_name", "required", "Your first name.")]
    details += name_problems(first_name=first_name, last_name=last_name)
    try:
        email = staff_email(email)
    except EmailRefused as refused:
        details.append(FieldError("email", refused.code, refused.message))
    else:
        if User.objects.filter(username=email).exclude(pk=user.pk).exists():
            details.append(FieldError("email", "taken", "Another account has this address."))
    if details:
        raise Unprocessable("Your profile was not saved.", details=details)
    user.first_name, user.last_name = first_name[:150], last_name[:150]
    user.email = user.username = email
    user.save(update_fields=["first_name", "last_name", "email", "username"])
    return user


@transaction.atomic
def tenant_set_two_factor(*, tenant: Tenant, required: bool, actor: User | None) -> Tenant:
    """Whether every member of the staff must sign in with a TOTP code."""
    if tenant.require_two_factor == required:
        return tenant
    tenant.require_two_factor = required
    tenant.save(update_fields=["require_two_factor", "updated_at"])
    _emit(EventType.TEAM_TWO_FACTOR_REQUIRED, tenant,
          f"{actor_facts(actor)['name']} "
          + ("required two-factor sign-in for the team" if required else
             "made two-factor sign-in optional"), actor, required=required)
    return tenant
