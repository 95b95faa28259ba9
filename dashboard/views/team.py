"""The team (docs/dashboard.md, "Team"): the staff with their role, whether they are active,
when they last signed in and their open handoffs; invitations (sent by email and shown once to
copy, resent, revoked); changing a role; deactivating and reactivating; requiring two-factor
sign-in, and resetting a member's second factor. Managers and the admin token.

An invitation's link is a secret: the form that sends it redirects to a page that shows it
once (``common.secret_redirect``), as a new API key is shown. A refused action shows the team
page again with the reason beside the form or the person it concerns (400; 409 when the
invitation can no longer change), having changed nothing."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_POST

from conversations import selectors as conversation_selectors
from conversations.services import team as team_services
from core.errors import ServiceError
from tenants import selectors as tenant_selectors
from tenants import team as tenant_team
from tenants import two_factor as tenant_two_factor
from tenants.models import UserRole

from ..auth import dashboard_view
from .common import mark_invalid, refuse_on_form, secret_page, secret_redirect

SECRET_KIND = "invitation"
STATUS = {"conflict": 409, "not_found": 404}


class InviteForm(forms.Form):
    email = forms.EmailField(max_length=254, label="Email",
                             widget=forms.EmailInput(attrs={"placeholder": "rep@example.com",
                                                            "autocomplete": "off"}))
    role = forms.ChoiceField(choices=UserRole.choices, initial=UserRole.REP, label="Role")


class RoleForm(forms.Form):
    role = forms.ChoiceField(choices=UserRole.choices)


class TwoFactorRuleForm(forms.Form):
    required = forms.BooleanField(required=False,
                                  label="Every member signs in with a code from an app (TOTP)")


def _status(exc: ServiceError) -> int:
    return STATUS.get(exc.kind, 400)


def _page(request: HttpRequest, *, status: int = 200, invite_form: InviteForm | None = None,
          problems: dict[str, str] | None = None) -> HttpResponse:
    actor = request.actor
    members = list(actor.read(conversation_selectors.staff_with_open_handoffs))
    context: dict[str, Any] = {
        "section": "team",
        "members": members,
        "problems": problems or {},
        "invitations": actor.read(tenant_selectors.team_invitations, both_modes=True),
        "activity": actor.read(tenant_selectors.team_events, both_modes=True),
        "invite_form": mark_invalid(invite_form) if invite_form is not None else InviteForm(),
        "two_factor_form": TwoFactorRuleForm(initial={"required": actor.tenant.require_two_factor}),
        "two_factor_members": actor.read(tenant_selectors.team_two_factor_members, both_modes=True),
        "roles": UserRole.choices,
        "now": timezone.now(),
    }
    return render(request, "dashboard/team.html", context, status=status)


@dashboard_view(manage=True)
def team_page(request: HttpRequest) -> HttpResponse:
    return _page(request)


@require_POST
@dashboard_view(manage=True)
def team_invite(request: HttpRequest) -> HttpResponse:
    form = InviteForm(request.POST)
    if not form.is_valid():
        return _page(request, status=400, invite_form=form)
    try:
        invitation, token = request.actor.write(
            team_services.member_invite, both_modes=True, actor=request.actor.user,
            email=form.cleaned_data["email"], role=form.cleaned_data["role"])
    except ServiceError as exc:
        refuse_on_form(form, exc)
        return _page(request, status=_status(exc), invite_form=form)
    messages.success(request, f"Invitation sent to {invitation.email}.")
    return _shown_once(request, invitation, token)


def _shown_once(request: HttpRequest, invitation, token: str) -> HttpResponse:
    link = request.build_absolute_uri(reverse("dashboard:invitation", args=[token]))
    return secret_redirect(request, kind=SECRET_KIND, object_id=invitation.pk, secret=link,
                           to=reverse("dashboard:team-invitation-sent", args=[invitation.pk]))


@dashboard_view(manage=True)
def team_invitation_sent(request: HttpRequest, invitation_id) -> HttpResponse:
    invitation = request.actor.get(tenant_selectors.team_invitation_get, both_modes=True,
                                   invitation_id=invitation_id)
    return secret_page(request, "dashboard/invitation_sent.html",
                       {"invitation": invitation, "section": "team"},
                       kind=SECRET_KIND, object_id=invitation.pk)


@require_POST
@dashboard_view(manage=True)
def team_invitation_resend(request: HttpRequest, invitation_id) -> HttpResponse:
    invitation = request.actor.get(tenant_selectors.team_invitation_get, both_modes=True,
                                   invitation_id=invitation_id)
    try:
        invitation, token = team_services.member_invitation_resend(
            invitation=invitation, actor=request.actor.user)
    except ServiceError as exc:
        return _page(request, status=_status(exc), problems={str(invitation.pk): exc.message})
    messages.success(request, f"Invitation sent again to {invitation.email}; the earlier link "
                              "no longer works.")
    return _shown_once(request, invitation, token)


@require_POST
@dashboard_view(manage=True)
def team_invitation_revoke(request: HttpRequest, invitation_id) -> HttpResponse:
    invitation = request.actor.get(tenant_selectors.team_invitation_get, both_modes=True,
                                   invitation_id=invitation_id)
    try:
        tenant_team.invitation_revoke(invitation=invitation, actor=request.actor.user)
    except ServiceError as exc:
        return _page(request, status=_status(exc), problems={str(invitation.pk): exc.message})
    messages.success(request, f"Invitation of {invitation.email} revoked: its link no longer "
                              "works.")
    return redirect("dashboard:team")


def _member(request: HttpRequest, user_id):
    return request.actor.get(tenant_selectors.team_member_get, both_modes=True, user_id=user_id)


@require_POST
@dashboard_view(manage=True)
def team_member_role(request: HttpRequest, user_id) -> HttpResponse:
    member = _member(request, user_id)
    form = RoleForm(request.POST)
    if not form.is_valid():
        return _page(request, status=400, problems={str(member.pk): "Choose a role."})
    try:
        member = tenant_team.member_set_role(user=member, role=form.cleaned_data["role"],
                                             actor=request.actor.user)
    except ServiceError as exc:
        return _page(request, status=_status(exc), problems={str(member.pk): exc.message})
    messages.success(request, f"{member.display_name} is now a "
                              f"{member.get_role_display().lower()}.")
    return redirect("dashboard:team")


@require_POST
@dashboard_view(manage=True)
def team_member_deactivate(request: HttpRequest, user_id) -> HttpResponse:
    member = _member(request, user_id)
    try:
        member, moved = team_services.member_deactivate(user=member, actor=request.actor.user)
    except ServiceError as exc:
        return _page(request, status=_status(exc), problems={str(member.pk): exc.message})
    handoffs = (f" {moved} open handoff{'s' if moved != 1 else ''} went to the next person in "
                "the rotation." if moved else "")
    messages.success(request, f"{member.display_name} is deactivated and can no longer sign "
                              f"in.{handoffs}")
    return redirect("dashboard:team")


@require_POST
@dashboard_view(manage=True)
def team_member_reactivate(request: HttpRequest, user_id) -> HttpResponse:
    member = _member(request, user_id)
    member = team_services.member_reactivate(user=member, actor=request.actor.user)
    messages.success(request, f"{member.display_name} can sign in again.")
    return redirect("dashboard:team")


@require_POST
@dashboard_view(manage=True)
def team_two_factor(request: HttpRequest) -> HttpResponse:
    form = TwoFactorRuleForm(request.POST)
    form.is_valid()  # a checkbox: always valid
    required = bool(form.cleaned_data.get("required"))
    request.actor.write(tenant_team.tenant_set_two_factor, both_modes=True, required=required,
                        actor=request.actor.user)
    messages.success(request, "Two-factor sign-in is now required for the whole team: members "
                              "without it set it up at their next page." if required else
                     "Two-factor sign-in is now optional.")
    return redirect("dashboard:team")


@require_POST
@dashboard_view(manage=True)
def team_member_two_factor_reset(request: HttpRequest, user_id) -> HttpResponse:
    """Removes a member's second factor (their app and backup codes), for a member who lost
    both: they sign in with their password again."""
    member = _member(request, user_id)
    try:
        had = tenant_two_factor.member_two_factor_reset(user=member, actor=request.actor.user)
    except ServiceError as exc:
        return _page(request, status=_status(exc), problems={str(member.pk): exc.message})
    messages.success(request, f"{member.display_name}'s two-factor sign-in is reset: they sign "
                              "in with their password, then set it up again." if had else
                     f"{member.display_name} has no two-factor sign-in to reset.")
    return redirect("dashboard:team")
