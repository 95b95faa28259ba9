"""The admin site (``/admin/``), with the sign-in rules of the dashboard (docs/dashboard.md,
"The admin"; docs/security.md, "Accounts").

Django's admin signs a person in with the password alone. Here its login page counts attempts
like the dashboard's (``dashboard/limits.py``), and the right password of a person with
two-factor sign-in leads to the dashboard's code step (``views.session.code_step``), which signs
them in only with a code and then comes back to the admin. And the site accepts no session that
skipped the code: a person with a confirmed device whose session gave only the password (signed
in before the device existed, or by any other door) is asked to sign in again."""

from __future__ import annotations

from django.contrib import admin
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth import REDIRECT_FIELD_NAME
from django.contrib.auth.views import LoginView
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.utils.decorators import method_decorator
from django.views.decorators.cache import never_cache

from .auth import SecondFactor, second_factor
from .limits import SignInAttempt, refused_page, sign_in_attempt
from .views.session import PasswordThenCode


class AdminLoginView(PasswordThenCode, LoginView):
    """Django's admin login, with the sign-in limits and the second step."""

    form_class = AdminAuthenticationForm
    template_name = "admin/login.html"
    attempt: SignInAttempt

    def post(self, request, *args, **kwargs):
        self.attempt = sign_in_attempt(request, account=request.POST.get("username") or "")
        if self.attempt.refusal is not None:
            return refused_page(request, self.template_name, self.attempt.refusal,
                                self.get_context_data(form=self.get_form_class()(request)))
        return super().post(request, *args, **kwargs)



class AdminSite(admin.AdminSite):
    """Django's admin site; a session counts only once it passed the person's second factor."""

    def has_permission(self, request: HttpRequest) -> bool:
        return (super().has_permission(request)
                and second_factor(request) != SecondFactor.MISSING)

    @method_decorator(never_cache)
    def login(self, request: HttpRequest, extra_context=None) -> HttpResponse:
        """Django's ``AdminSite.login`` with ``AdminLoginView`` in place of its view."""
        if request.method == "GET" and self.has_permission(request):
            return HttpResponseRedirect(reverse("admin:index", current_app=self.name))
        context = {
            **self.each_context(request),
            "title": "Log in",
            "subtitle": None,
            "app_path": request.get_full_path(),
            "username": request.user.get_username(),
        }
        if REDIRECT_FIELD_NAME not in request.GET and REDIRECT_FIELD_NAME not in request.POST:
            context[REDIRECT_FIELD_NAME] = reverse("admin:index", current_app=self.name)
        context.update(extra_context or {})
        request.current_app = self.name
        return AdminLoginView.as_view(extra_context=context)(request)
