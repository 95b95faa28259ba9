"""Password reset by email (docs/dashboard.md, "Accounts"): Django's own views, forms and
tokens (``PasswordResetView`` … ``PasswordResetCompleteView``) with the dashboard's templates.
The email goes through Django's ``send_mail`` on the configured transport (``EMAIL_URL``):
the service's queued emails are for what events call for, and a reset link is wanted now, by
the person waiting on the page. The link works once and for ``PASSWORD_RESET_TIMEOUT``.

Only the tenants' active staff get an email; the page says the same whatever the address, so it
tells nobody who has an account. Asking is rate-limited per client address."""

from __future__ import annotations

from django.contrib.auth import views as auth_views
from django.contrib.auth.forms import PasswordResetForm
from django.urls import reverse_lazy

from tenants import selectors as tenant_selectors

from ..limits import refused_page, sign_in_refused


class StaffPasswordResetForm(PasswordResetForm):
    def get_users(self, email):
        return tenant_selectors.staff_for_password_reset(email=email)


class ResetView(auth_views.PasswordResetView):
    template_name = "dashboard/password_reset.html"
    email_template_name = "emails/password_reset.txt"
    html_email_template_name = "emails/password_reset.html"
    subject_template_name = "emails/password_reset_subject.txt"
    form_class = StaffPasswordResetForm
    success_url = reverse_lazy("dashboard:password-reset-done")

    def post(self, request, *args, **kwargs):
        refusal = sign_in_refused(request, kind="reset")
        if refusal is not None:
            return refused_page(request, self.template_name, refusal,
                                {"form": self.form_class()})
        return super().post(request, *args, **kwargs)


class ResetDoneView(auth_views.PasswordResetDoneView):
    template_name = "dashboard/password_reset_done.html"


class ResetConfirmView(auth_views.PasswordResetConfirmView):
    template_name = "dashboard/password_reset_confirm.html"
    success_url = reverse_lazy("dashboard:password-reset-complete")


class ResetCompleteView(auth_views.PasswordResetCompleteView):
    template_name = "dashboard/password_reset_complete.html"
