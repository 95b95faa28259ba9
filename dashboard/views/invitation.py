"""The page an invitation's link opens (docs/dashboard.md, "Accounts"): the invited person
chooses their name and a password (Django's validators apply) and is signed in. A link that no
longer works says why, on a page of its own: expired, revoked, used, or replaced by a newer
email (410), or not a link of the service at all (404)."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth import login, logout, password_validation
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache

from core.errors import ServiceError
from tenants import team as tenant_team
from tenants.team import LinkState

from .common import mark_invalid, refuse_on_form

BACKEND = "django.contrib.auth.backends.ModelBackend"


class AcceptForm(forms.Form):
    first_name = forms.CharField(max_length=150, label="First name",
                                 widget=forms.TextInput(attrs={"autocomplete": "given-name"}))
    last_name = forms.CharField(max_length=150, label="Last name", required=False,
                                widget=forms.TextInput(attrs={"autocomplete": "family-name"}))
    password1 = forms.CharField(label="Password", strip=False,
                                widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}),
                                help_text=password_validation.password_validators_help_text_html())
    password2 = forms.CharField(label="Password again", strip=False,
                                widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}))

    def clean(self):
        data = super().clean()
        if data.get("password1") and data.get("password2") and \
                data["password1"] != data["password2"]:
            self.add_error("password2", "The two passwords differ.")
        return data


@never_cache
def invitation_page(request: HttpRequest, token: str) -> HttpResponse:
    link = tenant_team.invitation_by_token(token)
    if link.state != LinkState.VALID:
        return render(request, "dashboard/invitation.html",
                      {"problem": tenant_team.LINK_PROBLEMS[link.state], "state": link.state},
                      status=404 if link.state == LinkState.INVALID else 410)
    if request.method != "POST":
        return render(request, "dashboard/invitation.html",
                      {"invitation": link.invitation, "form": AcceptForm()})
    form = AcceptForm(request.POST)
    if form.is_valid():
        signed_in = _accept(request, token, form)
        if signed_in is not None:
            messages.success(request, f"Welcome to {link.invitation.tenant.name}, "
                                      f"{signed_in.display_name}.")
            return redirect("dashboard:home")
    return render(request, "dashboard/invitation.html",
                  {"invitation": link.invitation, "form": mark_invalid(form)}, status=400)


def _accept(request: HttpRequest, token: str, form: AcceptForm):
    """The new account, signed in (whoever this browser was signed in as before); None when
    the service refused (the reasons on the form)."""
    try:
        user = tenant_team.invitation_accept(
            token=token, first_name=form.cleaned_data["first_name"],
            last_name=form.cleaned_data["last_name"], password=form.cleaned_data["password1"])
    except ServiceError as exc:
        refuse_on_form(form, exc, fields={"password": "password1"})
        return None
    if request.user.is_authenticated:
        logout(request)
    login(request, user, backend=BACKEND)
    return user
