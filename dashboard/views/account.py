"""My profile (docs/dashboard.md, "Accounts"): what a person of the tenant decides for themselves
— name and email, password, the emails they get and whether meetings are booked with them,
two-factor sign-in, their availability for handoffs — and their calendar. The admin token is
nobody in particular: it has none.

The page is a list of sections (``SECTIONS``), each a template include under
``dashboard/profile/`` with a form that posts to its own address and comes back to the page:
another section is one more include and one more view. A refused form shows the page again
(400) with the reasons beside its fields, the other sections as they were."""

from __future__ import annotations

from typing import Any

import segno
from django import forms
from django.contrib import messages
from django.contrib.auth import update_session_auth_hash
from django.contrib.auth.forms import PasswordChangeForm
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST
from django_otp import DEVICE_ID_SESSION_KEY
from django_otp import login as otp_login

from calendars import selectors as calendar_selectors
from core.errors import ServiceError
from tenants import services as tenant_services
from tenants import team as tenant_team
from tenants import two_factor
from tenants.availability import tenant_hours

from ..auth import dashboard_view
from .common import attempt, mark_invalid, refuse_on_form, secret_page, secret_redirect
from .presence import AvailabilityForm, availability_initial, availability_save
from .settings import DAYS

# The page's sections, in order: each an include of dashboard/profile/.
SECTIONS = ["details", "password", "notifications", "availability", "two_factor", "calendar"]
BACKUP_CODES_KIND = "backup-codes"


class DetailsForm(forms.Form):
    first_name = forms.CharField(max_length=150, label="First name")
    last_name = forms.CharField(max_length=150, label="Last name", required=False)
    email = forms.EmailField(max_length=254, label="Email (you sign in with it)")


class PreferencesForm(forms.Form):
    takes_meetings = forms.BooleanField(required=False, label="The agent may book meetings with me")
    email_on_meeting = forms.BooleanField(required=False,
                                          label="Email me when a meeting is booked with me")
    email_on_handoff = forms.BooleanField(
        required=False, label="Email me when a conversation is handed off to me")
    email_on_mention = forms.BooleanField(
        required=False, label="Email me when a teammate mentions me in a note (when I am not "
                              "online: online, a notice shows on my open pages)")


class CodeForm(forms.Form):
    code = forms.CharField(label="Code from your app", max_length=12, widget=forms.TextInput(
        attrs={"autocomplete": "one-time-code", "inputmode": "numeric", "pattern": "[0-9 ]*"}))


class DisableForm(forms.Form):
    password = forms.CharField(label="Your password", strip=False, widget=forms.PasswordInput(
        attrs={"autocomplete": "current-password"}))
    code = forms.CharField(label="A code from your app, or a backup code", max_length=16,
                           widget=forms.TextInput(attrs={"autocomplete": "one-time-code",
                                                         "autocapitalize": "off"}))


class BackupCodesForm(forms.Form):
    password = forms.CharField(label="Your password", strip=False, widget=forms.PasswordInput(
        attrs={"autocomplete": "current-password"}))


def _profile(request: HttpRequest, *, status: int = 200, **forms_given: Any) -> HttpResponse:
    user, tenant = request.actor.user, request.actor.tenant
    setup = two_factor.totp_device(user=user, confirmed=False)
    two_factor_on = two_factor.totp_device(user=user) is not None
    context: dict[str, Any] = {
        "section": "account",
        "user": user,
        "sections": [f"dashboard/profile/_{name}.html" for name in SECTIONS],
        "details_form": DetailsForm(initial={"first_name": user.first_name,
                                             "last_name": user.last_name, "email": user.email}),
        "password_form": PasswordChangeForm(user),
        "preferences_form": PreferencesForm(initial={
            "takes_meetings": user.takes_meetings, "email_on_meeting": user.email_on_meeting,
            "email_on_handoff": user.email_on_handoff,
            "email_on_mention": user.email_on_mention}),
        "availability_form": AvailabilityForm(initial=availability_initial(user, tenant)),
        "tenant_hours": tenant_hours(tenant), "tenant_timezone": tenant.meeting_timezone,
        "day_names": dict(DAYS),
        "code_form": CodeForm(),
        "two_factor_on": two_factor_on,
        "backup_codes_left": two_factor.backup_codes_left(user=user) if two_factor_on else 0,
        "disable_form": DisableForm(),
        "backup_form": BackupCodesForm(prefix="backup"),
        "two_factor_required": tenant.require_two_factor,
        "setup": _setup(setup) if setup else None,
        "calendar": request.actor.read(calendar_selectors.connection_of, both_modes=True,
                                       user=user),
    }
    context.update({name: mark_invalid(form) for name, form in forms_given.items()})
    return render(request, "dashboard/profile.html", context, status=status)


def _setup(device) -> dict[str, str]:
    """What the app needs: the otpauth URI as a QR code (an SVG data URI: the policy allows
    ``data:`` images and no script draws it) and the key to type by hand."""
    import base64

    secret = base64.b32encode(device.bin_key).decode().rstrip("=")
    return {"qr": segno.make(device.config_url, error="m").svg_data_uri(scale=4),
            "secret": " ".join(secret[i:i + 4] for i in range(0, len(secret), 4)),
            "uri": device.config_url}


def _person(view):
    """The page is a person's: the admin token is sent home."""

    def wrapped(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        if request.actor.user is None:
            messages.error(request, "Signed in with the admin token: sign in as a person to set "
                                    "your own profile.")
            return redirect("dashboard:home")
        return view(request, *args, **kwargs)

    wrapped.__name__ = view.__name__
    wrapped.__doc__ = view.__doc__
    return wrapped


@dashboard_view()
def account_page(request: HttpRequest) -> HttpResponse:
    """The former address of My settings."""
    return redirect("dashboard:profile")


@dashboard_view(two_factor_setup=True)
@_person
def profile_page(request: HttpRequest) -> HttpResponse:
    return _profile(request)


@require_POST
@dashboard_view()
@_person
def profile_details(request: HttpRequest) -> HttpResponse:
    form = DetailsForm(request.POST)
    if form.is_valid():
        try:
            tenant_team.user_set_profile(user=request.actor.user, **form.cleaned_data)
        except ServiceError as exc:
            refuse_on_form(form, exc)
        else:
            messages.success(request, "Your name and email are saved.")
            return redirect("dashboard:profile")
    return _profile(request, status=400, details_form=form)


@require_POST
@dashboard_view()
@_person
def profile_password(request: HttpRequest) -> HttpResponse:
    form = PasswordChangeForm(request.actor.user, request.POST)
    if form.is_valid():
        user = form.save()
        update_session_auth_hash(request, user)  # this session stays; the others end
        messages.success(request, "Your password is changed. Your other sessions are signed out.")
        return redirect("dashboard:profile")
    return _profile(request, status=400, password_form=form)


@require_POST
@dashboard_view()
@_person
def profile_notifications(request: HttpRequest) -> HttpResponse:
    form = PreferencesForm(request.POST)
    form.is_valid()  # checkboxes: always valid
    attempt(request, lambda: tenant_services.user_set_preferences(
        user=request.actor.user, **form.cleaned_data), "Your settings are saved.")
    return redirect(reverse("dashboard:profile") + "#notifications")


@dashboard_view()
def profile_availability(request: HttpRequest) -> HttpResponse:
    """My availability, a section of the page: its form posts here; a visit (its former page's
    address) leads to the section."""
    if request.actor.user is None:
        messages.error(request, "Signed in with the admin token: sign in as a person to set "
                                "your availability.")
        return redirect("dashboard:home")
    if request.method == "POST":
        form = AvailabilityForm(request.POST)
        if not (form.is_valid() and availability_save(request, form, request.actor.user)):
            return _profile(request, status=400, availability_form=form)
    return redirect(reverse("dashboard:profile") + "#availability")


@require_POST
@dashboard_view(two_factor_setup=True)
@_person
def profile_two_factor_start(request: HttpRequest) -> HttpResponse:
    two_factor.totp_setup_start(user=request.actor.user)
    return redirect(reverse("dashboard:profile") + "#two-factor")


@require_POST
@dashboard_view(two_factor_setup=True)
@_person
def profile_two_factor_confirm(request: HttpRequest) -> HttpResponse:
    form = CodeForm(request.POST)
    if form.is_valid():
        try:
            device, codes = two_factor.totp_setup_confirm(user=request.actor.user,
                                                          code=form.cleaned_data["code"])
        except ServiceError as exc:
            refuse_on_form(form, exc)
        else:
            otp_login(request, device)  # this session is signed in with it from now on
            messages.success(request, "Two-factor sign-in is on: from now on, sign-in asks for "
                                      "a code of your app after the password.")
            return _backup_codes_shown_once(request, codes)
    return _profile(request, status=400, code_form=form)


def _backup_codes_shown_once(request: HttpRequest, codes: list[str]) -> HttpResponse:
    """The new backup codes, on the page that shows them once (``common.secret_redirect``)."""
    return secret_redirect(request, kind=BACKUP_CODES_KIND, object_id=request.actor.user.pk,
                           secret="\n".join(codes), to=reverse("dashboard:profile-backup-codes"))


@dashboard_view()
@_person
def profile_backup_codes(request: HttpRequest) -> HttpResponse:
    """The backup codes just made, once; then only how many are left and how to make new ones."""
    user = request.actor.user
    return secret_page(request, "dashboard/backup_codes.html", {
        "section": "account", "backup_form": BackupCodesForm(prefix="backup"),
        "two_factor_on": two_factor.totp_device(user=user) is not None,
        "backup_codes_left": two_factor.backup_codes_left(user=user)},
        kind=BACKUP_CODES_KIND, object_id=user.pk)


@require_POST
@dashboard_view()
@_person
def profile_backup_codes_new(request: HttpRequest) -> HttpResponse:
    """New backup codes, after the password: the old ones stop working."""
    form = BackupCodesForm(request.POST, prefix="backup")
    if form.is_valid():
        try:
            codes = two_factor.backup_codes_regenerate(user=request.actor.user,
                                                       password=form.cleaned_data["password"])
        except ServiceError as exc:
            refuse_on_form(form, exc)
        else:
            messages.success(request, "New backup codes: the old ones no longer work.")
            return _backup_codes_shown_once(request, codes)
    return _profile(request, status=400, backup_form=form)


@require_POST
@dashboard_view()
@_person
def profile_two_factor_disable(request: HttpRequest) -> HttpResponse:
    """Turns two-factor sign-in off, after the password and a current code."""
    form = DisableForm(request.POST)
    if form.is_valid():
        try:
            two_factor.totp_disable(user=request.actor.user, **form.cleaned_data)
        except ServiceError as exc:
            refuse_on_form(form, exc)
        else:
            request.session.pop(DEVICE_ID_SESSION_KEY, None)
            if request.actor.tenant.require_two_factor:
                messages.warning(request, "Two-factor sign-in is off, but your team requires "
                                          "it: set it up again to continue.")
            else:
                messages.success(request, "Two-factor sign-in is off: sign-in asks for your "
                                          "password only.")
            return redirect(reverse("dashboard:profile") + "#two-factor")
    return _profile(request, status=400, disable_form=form)
