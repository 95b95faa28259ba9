"""What the team's changes mean for conversations and email (docs/dashboard.md, "Team"): an
invitation is emailed through the service's outbound email, and a deactivated person's open
handoffs go through the availability-aware routing (``conversations.services.routing``) to the
next available person, or wait in the Unassigned queue when nobody is available.

The team's own rows are ``tenants.team``'s; these services call it and add what the tenants app
cannot reach (it is below this one)."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils import timezone

from core.models import EventType
from tenants import team
from tenants.models import Invitation, Tenant, User

from .. import mail
from ..events import emit_conversation_event
from ..models import Conversation, ConversationStatus
from .emails import email_enabled, emails_queue
from .routing import rep_for_handoff


def _send_invitation(event: Any, invitation: Invitation, token: str, actor: User | None) -> None:
    """Emails the link, from the person who invited (the admin token is nobody: the email then
    comes from the tenant)."""
    if email_enabled():
        inviter = actor.display_name if actor is not None else None
        emails_queue(event, [mail.staff_invitation_email(invitation, token, inviter)])


@transaction.atomic
def member_invite(*, tenant: Tenant, actor: User | None, email: str, role: str
                  ) -> tuple[Invitation, str]:
    """Invites ``email`` as ``role`` and emails the link; returns the invitation and its token
    (the page that sent it shows the link once)."""
    invitation, token, event = team.invitation_create(tenant=tenant, actor=actor, email=email,
                                                      role=role)
    _send_invitation(event, invitation, token, actor)
    return invitation, token


@transaction.atomic
def member_invitation_resend(*, invitation: Invitation, actor: User | None
                             ) -> tuple[Invitation, str]:
    """A new link, emailed; the one sent before stops working."""
    invitation, token, event = team.invitation_resend(invitation=invitation, actor=actor)
    _send_invitation(event, invitation, token, actor)
    return invitation, token


@transaction.atomic
def member_deactivate(*, user: User, actor: User | None) -> tuple[User, int]:
    """Deactivates ``user`` (``tenants.team.member_set_active``) and gives each of their open
    handoffs, in both modes, to the next available person (``routing.rep_for_handoff``: active,
    online, within their hours and under capacity; never ``user``, inactive by then), or to
    the Unassigned queue when nobody is available. Returns the user and how many moved."""
    user = team.member_set_active(user=user, active=False, actor=actor)
    ids = list(Conversation.objects.filter(tenant_id=user.tenant_id, assigned_to=user,
                                           status=ConversationStatus.HANDED_OFF)
               .order_by("created_at", "id").values_list("pk", flat=True))
    for pk in ids:
        _reassign(pk, leaving=user, actor=actor)
    return user, len(ids)


def _reassign(pk: Any, *, leaving: User, actor: User | None) -> None:
    current = (Conversation.objects.select_for_update(of=("self",))
               .filter(pk=pk, assigned_to=leaving, status=ConversationStatus.HANDED_OFF).first())
    if current is None:
        return
    now = timezone.now()
    successor = rep_for_handoff(tenant=leaving.tenant, now=now)
    current.assigned_to, current.joined_at = successor, None
    current.save(update_fields=["assigned_to", "joined_at", "updated_at"])
    who = successor.display_name if successor else "the Unassigned queue (nobody available)"
    emit_conversation_event(
        current, EventType.CONVERSATION_ASSIGNED,
        (f"Conversation reassigned to {who}" if successor else
         "Conversation back in the Unassigned queue: nobody available")
        + f": {leaving.display_name} was deactivated",
        actor=team.actor_facts(actor), reason="member_deactivated",
        previous_assigned_to_id=str(leaving.pk))


def member_reactivate(*, user: User, actor: User | None) -> User:
    """Lets a deactivated member sign in again (and be routed handoffs when available)."""
    return team.member_set_active(user=user, active=True, actor=actor)
