"""Signing in and out, and switching between live and test data.

Sign-in attempts are rate-limited (docs/dashboard.md, "Accounts"; ``dashboard/limits.py``):
every attempt, right or wrong, counts against its client address, and the staff form's and the
code step's failures against the account they name, per address; past a budget the page
answers 429 with ``Retry-After`` and says when to try again, and nothing is checked. A person
with two-factor sign-in gives their password, then a code of their app or a backup code
(``login_code``), and is signed in only then: here and at the admin's login
(``dashboard/admin_site.py``), which leads to the same code step."""

from __future__ import annotations

import time

from django import forms
from django.contrib import messages
from django.contrib.auth import login, logout
from django.contrib.auth.forms import AuthenticationForm
from django.contrib.auth.views import LoginView
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_POST

from core.errors import ServiceError
from tenants import selectors as tenant_selectors
from tenants import two_factor

from ..auth import MODE_SESSION_KEY, dashboard_view, sign_in_with_token
from ..limits import SignInAttempt, refused_page, sign_in_attempt, sign_in_refused
from .common import safe_next

PENDING_SESSION_KEY = "dashboard_two_factor_pending"  # {"u": user id, "at": epoch s, "next"}
PENDING_TTL = 300  # seconds between the password and the code


class StaffAuthenticationForm(AuthenticationForm):
    """Tenant staff sign in with their email (their username, stored in lower case)."""

    username = forms.CharField(label="Email", max_length=254,
                               widget=forms.EmailInput(attrs={"autofocus": True,
                                                              "autocomplete": "email"}))
    # Django's own says "a correct username", under a field labelled Email.
    error_messages = {
        **AuthenticationForm.error_messages,
        "invalid_login": "No account has this email and password. Check both and try again.",
    }

    def clean_username(self) -> str:
        return self.cleaned_data["username"].strip().lower()

    def confirm_login_allowed(self, user) -> None:
        super().confirm_login_allowed(user)
        if user.tenant_id is None:
            raise forms.ValidationError("This account belongs to no tenant: operators of the "
                                        "service use the admin site.", code="no_tenant")


class TokenForm(forms.Form):
    token = forms.CharField(label="Admin token", max_length=200,
                            widget=forms.PasswordInput(attrs={"autocomplete": "off"}))


class PasswordThenCode:
    """A ``LoginView`` whose password counts against the sign-in limits (``self.attempt``, set
    by the view's ``post``) and, for a person with two-factor sign-in, leads to the code step
    instead of signing in: the dashboard's sign-in and the admin's share it."""

    attempt: SignInAttempt

    def form_invalid(self, form):
        self.attempt.failed()
        return super().form_invalid(form)

    def form_valid(self, form):
        self.attempt.succeeded()
        user = form.get_user()
        if two_factor.totp_device(user=user) is None:
            return super().form_valid(form)
        return code_step(self.request, user, next_url=self.get_success_url())


class DashboardLoginView(PasswordThenCode, LoginView):
    template_name = "dashboard/login.html"
    authentication_form = StaffAuthenticationForm
    redirect_authenticated_user = False
    attempt: SignInAttempt  # this POST's, counted in ``post``, settled by the form's outcome

    def get_default_redirect_url(self) -> str:
        return reverse("dashboard:home")

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        context.setdefault("token_form", TokenForm())
        return context

    def post(self, request, *args, **kwargs):
        self.attempt = sign_in_attempt(request, account=request.POST.get("username") or "")
        if self.attempt.refusal is not None:
            form = self.get_form_class()(request)
            return refused_page(request, "dashboard/login.html", self.attempt.refusal, {
                "form": form, "token_form": TokenForm(), "next": request.POST.get("next", "")})
        return super().post(request, *args, **kwargs)



def code_step(request: HttpRequest, user, *, next_url: str) -> HttpResponse:
    """After the right password of a person with two-factor sign-in (at the dashboard's or the
    admin's login): nobody is signed in yet; the code step names the person for five minutes,
    and signs them in, then goes to ``next_url``, once the code is right."""
    if request.user.is_authenticated:
        logout(request)  # whoever this browser was signed in as before is no longer
    request.session.cycle_key()
    request.session[PENDING_SESSION_KEY] = {
        "u": str(user.pk), "at": time.time(), "next": next_url, "b": user.backend}
    return redirect("dashboard:login-code")


class CodeForm(forms.Form):
    code = forms.CharField(label="Code from your app, or a backup code", max_length=16,
                           widget=forms.TextInput(attrs={
                               "autocomplete": "one-time-code", "autofocus": True,
                               "autocapitalize": "off", "spellcheck": "false"}))


def _pending(request: HttpRequest):
    pending = request.session.get(PENDING_SESSION_KEY)
    if not isinstance(pending, dict) or time.time() - pending.get("at", 0) > PENDING_TTL:
        return None, None
    user = tenant_selectors.user_signing_in(user_id=pending.get("u"))
    return (pending, user) if user is not None else (None, None)


@never_cache
def login_code(request: HttpRequest) -> HttpResponse:
    """The second step of a sign-in with two-factor: the code of the person's app, or one of
    their backup codes."""
    pending, user = _pending(request)
    if user is None:
        request.session.pop(PENDING_SESSION_KEY, None)
        messages.error(request, "Sign in again: the code was not typed within five minutes.")
        return redirect("dashboard:login")
    form = CodeForm(request.POST if request.method == "POST" else None)
    if request.method != "POST":
        return render(request, "dashboard/login_code.html", {"form": form})
    attempt = sign_in_attempt(request, account=user.username)
    if attempt.refusal is not None:
        return refused_page(request, "dashboard/login_code.html", attempt.refusal,
                            {"form": CodeForm()})
    if form.is_valid():
        try:
            device = two_factor.code_verify(user=user, code=form.cleaned_data["code"])
        except ServiceError as exc:
            form.add_error("code", exc.message)
        else:
            attempt.succeeded()
            del request.session[PENDING_SESSION_KEY]
            user.otp_device = device  # django-otp marks the session verified at login
            login(request, user, backend=pending["b"])
            if two_factor.is_backup_device(device):
                left = two_factor.backup_codes_left(user=user)
                messages.warning(request, f"Signed in with a backup code: {left} left. Make new "
                                          "ones on My profile." if left else "Signed in with "
                                          "your last backup code: make new ones on My profile.")
            return redirect(safe_next(request, pending.get("next") or reverse("dashboard:home")))
    attempt.failed()
    form.fields["code"].widget.attrs["aria-invalid"] = "true"
    return render(request, "dashboard/login_code.html", {"form": form}, status=400)


@require_POST
def token_login(request: HttpRequest) -> HttpResponse:
    refusal = sign_in_refused(request)
    if refusal is not None:
        return refused_page(request, "dashboard/login.html", refusal, {
            "form": StaffAuthenticationForm(request), "token_form": TokenForm(),
            "next": request.POST.get("next", "")})
    form = TokenForm(request.POST)
    if form.is_valid() and sign_in_with_token(request, form.cleaned_data["token"]):
        messages.success(request, "Signed in with the admin token.")
        return redirect(safe_next(request, reverse("dashboard:home")))
    if form.is_valid():
        form.add_error("token", "This admin token is not valid.")
    # The cursor stays in the field that was wrong, not in the staff form's Email.
    staff_form = StaffAuthenticationForm(request)
    staff_form.fields["username"].widget.attrs.pop("autofocus", None)
    form.fields["token"].widget.attrs["autofocus"] = True
    return render(request, "dashboard/login.html", {
        "form": staff_form, "token_form": form, "next": request.POST.get("next", "")},
        status=400)


@require_POST
def sign_out(request: HttpRequest) -> HttpResponse:
    logout(request)  # flushes the session: the admin-token sign-in too
    messages.info(request, "Signed out.")
    return redirect("dashboard:login")


@require_POST
@dashboard_view()
def switch_mode(request: HttpRequest) -> HttpResponse:
    livemode = request.POST.get("mode") != "test"
    request.session[MODE_SESSION_KEY] = livemode
    messages.info(request, "Showing live data." if livemode else
                  "Showing test data (what sk_test_ keys create).")
    return redirect(safe_next(request, reverse("dashboard:home")))

