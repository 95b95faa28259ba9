"""My settings: what a person of the tenant decides for themselves (whether meetings are booked
with them, which emails they get). The admin token is nobody in particular: it has none."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from calendars import selectors as calendar_selectors
from tenants import services as tenant_services

from ..auth import dashboard_view
from .common import attempt


class PreferencesForm(forms.Form):
    takes_meetings = forms.BooleanField(required=False, label="The agent may book meetings with me")
    email_on_meeting = forms.BooleanField(required=False,
                                          label="Email me when a meeting is booked with me")
    email_on_handoff = forms.BooleanField(
        required=False, label="Email me when a conversation is handed off to me")


@dashboard_view()
def account_page(request: HttpRequest) -> HttpResponse:
    user = request.actor.user
    if user is None:
        messages.error(request, "Signed in with the admin token: sign in as a person to set "
                                "your own settings.")
        return redirect("dashboard:home")
    if request.method == "POST":
        form = PreferencesForm(request.POST)
        if form.is_valid():
            attempt(request, lambda: tenant_services.user_set_preferences(
                user=user, **form.cleaned_data), "Your settings are saved.")
            return redirect("dashboard:account")
    else:
        form = PreferencesForm(initial={"takes_meetings": user.takes_meetings,
                                        "email_on_meeting": user.email_on_meeting,
                                        "email_on_handoff": user.email_on_handoff})
    calendar = request.actor.read(calendar_selectors.connection_of, both_modes=True, user=user)
    return render(request, "dashboard/account.html", {"form": form, "user": user,
                                                      "calendar": calendar, "section": "account"})
