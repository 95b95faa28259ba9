"""Leads: search, filters, and one lead with its conversations, score reasons and history."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from analytics.models import Event
from conversations.models import Conversation, Meeting
from leads.models import Lead
from leads.presenters import COLUMNS
from leads.selectors import LEGACY_SEARCH_FIELDS, LeadFilters, lead_list, lead_search
from leads.services import lead_update
from leads.vocabulary import V1_STATUSES, LeadSource, LeadStatus

from ..auth import dashboard_view
from .common import attempt, get_scoped_or_404, query_without_page

PAGE_SIZE = 25


class LeadFilterForm(forms.Form):
    q = forms.CharField(required=False, max_length=200, label="Search")
    status = forms.ChoiceField(required=False, choices=[("", "Any status")] +
                               [(s, s.capitalize()) for s in V1_STATUSES])
    source = forms.ChoiceField(required=False, choices=[("", "Any source")] + LeadSource.choices)


class _CountedPage:
    """A page of selector rows that Django's pagination template tags can read."""

    def __init__(self, rows, number: int, total: int):
        self.object_list = rows
        self.paginator = Paginator(range(total), PAGE_SIZE)
        self.page = self.paginator.get_page(number)

    def __getattr__(self, name):
        return getattr(self.page, name)

    def __iter__(self):
        return iter(self.object_list)

    def __len__(self) -> int:
        return len(self.object_list)


@dashboard_view()
def lead_index(request: HttpRequest) -> HttpResponse:
    actor = request.actor
    form = LeadFilterForm(request.GET or None)
    data = form.cleaned_data if form.is_valid() else {}
    try:
        number = max(1, int(request.GET.get("page", 1)))
    except ValueError:
        number = 1
    leads = Lead.objects.filter(**actor.scope)
    q = (data.get("q") or "").strip()
    if q:
        page = lead_search(leads=leads, q=q, fields=LEGACY_SEARCH_FIELDS + ("custom_fields_text",),
                           status=data.get("status") or None, columns=COLUMNS, page=number,
                           limit=PAGE_SIZE, order_by=("-created_at", "-id"))
        rows = [r for r in page.items if not data.get("source") or r["source"] == data["source"]]
    else:
        page = lead_list(tenant=actor.tenant, livemode=actor.livemode,
                         filters=LeadFilters(status=data.get("status") or None,
                                             source=data.get("source") or None),
                         page=number, limit=PAGE_SIZE)
        rows = page.items
    labels = dict(LeadStatus.choices)
    for row in rows:
        row["status_label"] = labels[row["status"]]
    return render(request, "dashboard/leads.html", {
        "form": form, "page": _CountedPage(rows, page.page, page.total), "total": page.total,
        "query": query_without_page(request), "section": "leads",
    })


class LeadStatusForm(forms.Form):
    status = forms.ChoiceField(choices=LeadStatus.choices)


@dashboard_view()
def lead_detail(request: HttpRequest, lead_id: str) -> HttpResponse:
    actor = request.actor
    lead = get_scoped_or_404(Lead.objects.filter(**actor.scope).select_related("assigned_to"),
                             lead_id)
    conversations = (Conversation.objects.filter(**actor.scope, lead=lead)
                     .select_related("assigned_to").order_by("-last_message_at", "-id")[:20])
    return render(request, "dashboard/lead_detail.html", {
        "lead": lead,
        "status_form": LeadStatusForm(initial={"status": lead.status}),
        "conversations": conversations,
        "meetings": Meeting.objects.filter(**actor.scope, lead=lead).order_by("-starts_at", "-id")[:10],
        "events": Event.objects.filter(**actor.scope, lead=lead).order_by("-occurred_at", "-id")[:25],
        "section": "leads",
    })


@require_POST
@dashboard_view()
def lead_set_status(request: HttpRequest, lead_id: str) -> HttpResponse:
    actor = request.actor
    lead = get_scoped_or_404(Lead.objects.filter(**actor.scope), lead_id)
    form = LeadStatusForm(request.POST)
    if form.is_valid():
        label = dict(LeadStatus.choices)[form.cleaned_data["status"]]
        attempt(request, lambda: lead_update(lead=lead, changes={"status": form.cleaned_data["status"]}),
                f"Status set to {label}.")
    else:
        messages.error(request, "Choose one of the listed statuses.")
    return redirect("dashboard:lead", lead_id=lead.pk)
