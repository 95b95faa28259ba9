"""Signing in and out, and switching between live and test data."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth import logout
from django.contrib.auth.forms import AuthenticationForm
from django.contrib.auth.views import LoginView
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from ..auth import MODE_SESSION_KEY, dashboard_view, sign_in_with_token
from .common import safe_next


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


class DashboardLoginView(LoginView):
    template_name = "dashboard/login.html"
    authentication_form = StaffAuthenticationForm
    redirect_authenticated_user = False

    def get_default_redirect_url(self) -> str:
        return reverse("dashboard:home")

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        context.setdefault("token_form", TokenForm())
        return context


@require_POST
def token_login(request: HttpRequest) -> HttpResponse:
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

