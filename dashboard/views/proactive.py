"""Settings → Proactive messages (docs/dashboard.md, "Proactive messages"): the messages the
widget shows by itself, when, and how often they were shown and answered. Managers only."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from django import forms
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from conversations import selectors as conversation_selectors
from conversations import services as conversation_services
from conversations.models import Returning
from conversations.services.proactive import (
    MAX_MESSAGE,
    MAX_PATTERN,
    MAX_PRIORITY,
    MAX_SECONDS,
)
from core.errors import ServiceError

from ..auth import dashboard_view
from .common import attempt, mark_invalid, refuse_on_form

if TYPE_CHECKING:
    from conversations.models import ProactiveMessage


class ProactiveForm(forms.Form):
    """The form's own checks are the types; the service says what is allowed, beside each
    field (``refuse_on_form``)."""

    message = forms.CharField(label="Message", required=False, widget=forms.Textarea(
        attrs={"rows": 3, "maxlength": MAX_MESSAGE}),
        help_text=f"Shown as the agent's first message; at most {MAX_MESSAGE} characters, "
                  "Markdown allowed.")
    url_pattern = forms.CharField(label="Page", required=False, max_length=MAX_PATTERN + 50,
                                  help_text="A path the page's address starts with (/pricing), "
                                            "a pattern where * is anything (/blog/*/pricing), "
                                            "or a whole address (https://shop.example/*). "
                                            "Empty: any page.")
    seconds_on_page = forms.IntegerField(label="Seconds on the page", required=False,
                                         initial=0, help_text=f"0 to {MAX_SECONDS}; 0: at once.",
                                         widget=forms.NumberInput(attrs={"inputmode": "numeric"}))
    returning = forms.ChoiceField(label="Visitors", choices=Returning.choices,
                                  initial=Returning.ANY,
                                  help_text="Returning: this browser had the widget on an "
                                            "earlier visit.")
    priority = forms.IntegerField(label="Order", required=False, initial=100,
                                  help_text=f"0 to {MAX_PRIORITY}: when several match, the "
                                            "lowest is shown (one per page).")
    active = forms.BooleanField(label="On", required=False, initial=True)

    def service_fields(self) -> dict[str, Any]:
        data = dict(self.cleaned_data)
        for name, default in (("seconds_on_page", 0), ("priority", 100)):
            if data.get(name) is None:
                data[name] = default
        return data


def _page(request: HttpRequest, *, status: int = 200, form: ProactiveForm | None = None,
          editing: ProactiveMessage | None = None) -> HttpResponse:
    actor = request.actor
    rows = actor.read(conversation_selectors.proactive_messages, both_modes=True)
    return render(request, "dashboard/proactive.html", {
        "section": "settings",
        "rows": rows,
        "form": mark_invalid(form) if form is not None else ProactiveForm(),
        "editing": editing,
    }, status=status)


def _form_of(row: ProactiveMessage) -> ProactiveForm:
    return ProactiveForm(initial={
        "message": row.message, "url_pattern": row.url_pattern,
        "seconds_on_page": row.seconds_on_page, "returning": row.returning,
        "priority": row.priority, "active": row.active})


def _save(request: HttpRequest, action, *, editing: ProactiveMessage | None,
          success: str) -> HttpResponse:
    form = ProactiveForm(request.POST)
    if form.is_valid():
        try:
            action(form.service_fields())
        except ServiceError as exc:
            refuse_on_form(form, exc)
        else:
            messages.success(request, success)
            return redirect("dashboard:proactive")
    return _page(request, status=400, form=form, editing=editing)


@dashboard_view(manage=True)
def proactive_index(request: HttpRequest) -> HttpResponse:
    if request.method == "POST":
        return _save(request, lambda data: request.actor.write(
            conversation_services.proactive_message_create, both_modes=True, **data),
            editing=None, success="Proactive message saved.")
    return _page(request)


@dashboard_view(manage=True)
def proactive_edit(request: HttpRequest, proactive_id: uuid.UUID) -> HttpResponse:
    row = request.actor.get(conversation_selectors.proactive_message_get, both_modes=True,
                            proactive_id=proactive_id)
    if request.method == "POST":
        return _save(request, lambda data: conversation_services.proactive_message_update(
            proactive=row, **data), editing=row, success="Proactive message saved.")
    return _page(request, form=_form_of(row), editing=row)


@require_POST
@dashboard_view(manage=True)
def proactive_toggle(request: HttpRequest, proactive_id: uuid.UUID) -> HttpResponse:
    row = request.actor.get(conversation_selectors.proactive_message_get, both_modes=True,
                            proactive_id=proactive_id)
    attempt(request, lambda: conversation_services.proactive_message_update(
        proactive=row, message=row.message, url_pattern=row.url_pattern,
        seconds_on_page=row.seconds_on_page, returning=row.returning, priority=row.priority,
        active=not row.active), "Proactive message turned " + ("off." if row.active else "on."))
    return redirect("dashboard:proactive")


@require_POST
@dashboard_view(manage=True)
def proactive_delete(request: HttpRequest, proactive_id: uuid.UUID) -> HttpResponse:
    row = request.actor.get(conversation_selectors.proactive_message_get, both_modes=True,
                            proactive_id=proactive_id)
    attempt(request, lambda: conversation_services.proactive_message_delete(proactive=row),
            "Proactive message deleted.")
    return redirect("dashboard:proactive")
