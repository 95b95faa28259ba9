"""A rep's own calendar: connect it (CalDAV URL, username, app password: verified at once, the
password never shown again), disconnect it, and see the meetings whose calendar write is pending
or failed. Every user of the tenant has this page; each sees and changes only their own."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from calendars import selectors as calendar_selectors
from calendars import services as calendar_services
from calendars.models import WriteStatus
from core.errors import ServiceError

from ..auth import dashboard_view


class CalendarForm(forms.Form):
    url = forms.CharField(max_length=2048, label="CalDAV URL",
                          widget=forms.URLInput(attrs={"placeholder": "https://caldav.example.com/…"}))
    username = forms.CharField(max_length=255, label="Username")
    password = forms.CharField(max_length=500, required=False, strip=False, label="App password",
                               widget=forms.PasswordInput(render_value=False,
                                                          attrs={"autocomplete": "off"}))


def _page(request: HttpRequest, form: CalendarForm, *, status: int = 200,
          error: str = "") -> HttpResponse:
    actor = request.actor
    connection = actor.read(calendar_selectors.connection_of, both_modes=True, user=actor.user)
    writes = (actor.read(calendar_selectors.host_writes, both_modes=True, user=actor.user)
              if actor.user else [])
    return render(request, "dashboard/calendar.html", {
        "connection": connection, "form": form, "error": error, "writes": writes,
        "section": "calendar"}, status=status)


@dashboard_view()
def calendar_page(request: HttpRequest) -> HttpResponse:
    connection = request.actor.read(calendar_selectors.connection_of, both_modes=True,
                                    user=request.actor.user)
    initial = {"url": connection.url, "username": connection.username} if connection else {}
    return _page(request, CalendarForm(initial=initial))


@require_POST
@dashboard_view()
def calendar_connect(request: HttpRequest) -> HttpResponse:
    actor = request.actor
    if actor.user is None:
        messages.error(request, "Sign in with your own account to connect your calendar.")
        return redirect("dashboard:calendar")
    form = CalendarForm(request.POST)
    if not form.is_valid():
        return _page(request, form, status=400, error="Nothing was saved: check the fields below.")
    data = form.cleaned_data
    try:
        actor.write(calendar_services.calendar_connect, both_modes=True, user=actor.user,
                    url=data["url"], username=data["username"], password=data["password"])
    except ServiceError as exc:
        # The form again (the password is never echoed), with what failed; nothing changed.
        status = 400 if exc.kind == "invalid_request" else 422
        return _page(request, CalendarForm(initial={"url": data["url"], "username": data["username"]}),
                     status=status, error=exc.message)
    messages.success(request, "Calendar connected: offered slots now follow your free/busy, and "
                              "meetings booked with you are written into it.")
    return redirect("dashboard:calendar")


@require_POST
@dashboard_view()
def calendar_disconnect(request: HttpRequest) -> HttpResponse:
    if request.actor.write(calendar_services.calendar_disconnect, both_modes=True,
                           user=request.actor.user):
        messages.success(request, "Calendar disconnected; its password is forgotten.")
    return redirect("dashboard:calendar")


@require_POST
@dashboard_view()
def calendar_write_retry(request: HttpRequest, meeting_id: str) -> HttpResponse:
    """Try a failed calendar write again: its host, or a manager of the tenant."""
    actor = request.actor
    write = actor.get(calendar_selectors.write_get, meeting_id=meeting_id,
                      host=None if actor.can_manage else actor.user)
    if write.status != WriteStatus.FAILED:
        messages.error(request, "Only a failed calendar write can be tried again.")
    else:
        calendar_services.calendar_write_retry(write=write)
        messages.success(request, "The calendar write will be tried again now.")
    if request.POST.get("back") == "lead":
        return redirect("dashboard:lead", lead_id=write.meeting.lead_id)
    return redirect("dashboard:calendar")
