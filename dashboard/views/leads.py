"""Leads: search, filters, and one lead with its conversations, score reasons, meetings (which
staff reschedule or cancel here), the emails sent about it, and its history."""

from __future__ import annotations

import json

from django import forms
from django.contrib import messages
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from django.views.decorators.http import require_POST

from analytics import selectors as analytics_selectors
from calendars import selectors as calendar_selectors
from conversations import scheduling
from conversations import selectors as conversation_selectors
from conversations.models import MeetingStatus
from conversations.services import meetings as meeting_services
from leads import selectors as lead_selectors
from leads import services as lead_services
from leads.vocabulary import LeadSource, LeadStatus
from privacy import services as privacy_services
from privacy.models import SubjectKind
from tenants import selectors as tenant_selectors
from tenants.models import StaffAccessAction
from tenants.services import record_staff_access

from ..auth import dashboard_view
from ..history import HISTORY_TYPES, lead_history, people
from .common import PAGE_SIZE, attempt, query_without_page
from .inbox import note_rows, team_handles

STATUS_LABELS = dict(LeadStatus.choices)
RESCHEDULE_CHOICES = 5
HISTORY_EVENTS = 50  # the newest events shown in a lead's history


class LeadFilterForm(forms.Form):
    q = forms.CharField(required=False, max_length=200, label="Search")
    # Staff see the stored statuses (each with its label), not one surface's vocabulary.
    status = forms.ChoiceField(required=False, choices=[("", "Any status")] + LeadStatus.choices)
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


def _page_number(request: HttpRequest) -> int:
    try:
        return max(1, int(request.GET.get("page", 1)))
    except ValueError:
        return 1


@dashboard_view()
def lead_index(request: HttpRequest) -> HttpResponse:
    form = LeadFilterForm(request.GET or None)
    data = form.cleaned_data if form.is_valid() else {}
    page = request.actor.read(lead_selectors.lead_find, q=data.get("q") or "",
                              stored_status=data.get("status") or None,
                              source=data.get("source") or None,
                              page=_page_number(request), limit=PAGE_SIZE)
    for row in page.items:
        row["status_label"] = STATUS_LABELS[row["status"]]
        # The selector's rows carry the API's formatted timestamp; the template formats its own.
        row["created_at"] = parse_datetime(row["createdAt"])
    return render(request, "dashboard/leads.html", {
        "form": form, "page": _CountedPage(page.items, page.page, page.total), "total": page.total,
        "query": query_without_page(request), "section": "leads",
    })


class LeadStatusForm(forms.Form):
    status = forms.ChoiceField(choices=LeadStatus.choices)


@dashboard_view()
def lead_detail(request: HttpRequest, lead_id: str) -> HttpResponse:
    actor = request.actor
    lead = actor.get(lead_selectors.lead_get, lead_id=lead_id)
    # The staff access audit (the Privacy page): this page shows the person's data.
    actor.write(record_staff_access, user=actor.user, action=StaffAccessAction.VIEWED,
                lead_id=lead.pk)
    meetings = actor.read(conversation_selectors.lead_meetings, lead_id=lead.pk, limit=10)
    return render(request, "dashboard/lead_detail.html", {
        "lead": lead,
        "status_form": LeadStatusForm(initial={"status": lead.status}),
        "conversations": actor.read(conversation_selectors.lead_conversation_list, lead_id=lead.pk,
                                    limit=20),
        "meetings": _with_calendar_writes(actor, meetings),
        "free_slots": _free_slots(actor, meetings),
        "emails": actor.read(conversation_selectors.lead_emails, lead_id=lead.pk, limit=20),
        **_notes(actor, lead),
        **_history(actor, lead),
        "section": "leads",
    })


def _notes(actor, lead) -> dict:
    """The notes on the lead and its conversations, and whom a new one may mention."""
    handles = team_handles(actor.read(tenant_selectors.tenant_users, both_modes=True))
    notes = actor.read(conversation_selectors.lead_notes, lead_id=lead.pk)
    return {"notes": note_rows(notes, handles), "handles": handles}


def _history(actor, lead) -> dict:
    """The lead's history, newest first, in two queries: its events and the staff they name."""
    events = actor.read(analytics_selectors.lead_events, lead_id=lead.pk, types=HISTORY_TYPES,
                        limit=HISTORY_EVENTS)
    names = actor.read(tenant_selectors.tenant_user_names, both_modes=True,
                       user_ids=people(events))
    return {"history": lead_history(events, names=names),
            "history_cut": len(events) == HISTORY_EVENTS}


def _free_slots(actor, meetings) -> list:
    """The times a scheduled meeting of the page may move to (one query, whatever the count)."""
    if not any(m.status == MeetingStatus.SCHEDULED for m in meetings):
        return []
    return scheduling.free_slots(actor.tenant, actor.livemode, now=timezone.now(),
                                 count=RESCHEDULE_CHOICES)


class RescheduleForm(forms.Form):
    slot = forms.CharField(max_length=40)

    def clean_slot(self):
        start = scheduling.parse_token(self.cleaned_data["slot"])
        if start is None:
            raise forms.ValidationError("Choose one of the offered times.")
        return start


@require_POST
@dashboard_view()
def meeting_cancel(request: HttpRequest, meeting_id: str) -> HttpResponse:
    meeting = request.actor.get(conversation_selectors.meeting_get, meeting_id=meeting_id)
    attempt(request, lambda: meeting_services.meeting_cancel(meeting=meeting, by="staff"),
            "Meeting cancelled: the visitor is told by email.")
    return redirect("dashboard:lead", lead_id=meeting.lead_id)


@require_POST
@dashboard_view()
def meeting_reschedule(request: HttpRequest, meeting_id: str) -> HttpResponse:
    meeting = request.actor.get(conversation_selectors.meeting_get, meeting_id=meeting_id)
    form = RescheduleForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Nothing changed: choose one of the offered times.")
    else:
        start = form.cleaned_data["slot"]
        attempt(request, lambda: meeting_services.meeting_reschedule(meeting=meeting,
                                                                     starts_at=start),
                "Meeting moved: the visitor gets an updated invitation.")
    return redirect("dashboard:lead", lead_id=meeting.lead_id)


def _with_calendar_writes(actor, meetings: list) -> list:
    """Each meeting with where it stands in its host's calendar (``calendar_write_state``)."""
    writes = actor.read(calendar_selectors.meeting_writes, meeting_ids=[m.pk for m in meetings])
    for meeting in meetings:
        meeting.calendar_write_state = writes.get(meeting.pk)
    return meetings


@require_POST
@dashboard_view()
def lead_set_status(request: HttpRequest, lead_id: str) -> HttpResponse:
    lead = request.actor.get(lead_selectors.lead_get, lead_id=lead_id)
    form = LeadStatusForm(request.POST)
    if form.is_valid():
        status = form.cleaned_data["status"]
        label = STATUS_LABELS[status]
        reason = f"Set to {label} by {request.actor.name} in the dashboard"
        attempt(request, lambda: lead_services.lead_update(
            lead=lead, changes={"status": status}, qualification_reason=reason),
            f"Status set to {label}.")
    else:
        messages.error(request, "Choose one of the listed statuses.")
    return redirect("dashboard:lead", lead_id=lead.pk)


# --- a person's data (docs/privacy.md) -----------------------------------------------------

@dashboard_view()
def lead_export(request: HttpRequest, lead_id: str) -> HttpResponse:
    """Everything stored about the person behind the lead, as the API's export, to download."""
    actor = request.actor
    lead = actor.get(lead_selectors.lead_get, lead_id=lead_id)
    actor.write(record_staff_access, user=actor.user, action=StaffAccessAction.EXPORTED, lead_id=lead.pk)
    document = actor.read(privacy_services.person_export, kind=SubjectKind.LEAD,
                          value=str(lead.pk))
    response = HttpResponse(json.dumps(document, indent=2, ensure_ascii=False),
                            content_type="application/json; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="lead_{lead.pk.hex}.json"'
    response["Cache-Control"] = "no-store"
    return response


@dashboard_view(manage=True)
def lead_erase(request: HttpRequest, lead_id: str) -> HttpResponse:
    """Asks, naming what goes; on POST erases the person behind the lead everywhere."""
    lead = request.actor.get(lead_selectors.lead_get, lead_id=lead_id)
    if request.method != "POST":
        return render(request, "dashboard/lead_erase.html", {
            "lead": lead, "preview": privacy_services.erasure_preview(lead=lead),
            "section": "leads"})
    erasure = privacy_services.lead_erase(lead=lead, requested_by=request.actor.name)
    request.actor.write(record_staff_access, user=request.actor.user, action=StaffAccessAction.ERASED,
                        lead_id=erasure.subject_id)
    counts = erasure.counts
    messages.success(request, f"Erased: {counts['leads']} lead, {counts['conversations']} "
                              f"conversation(s), {counts['messages']} message(s), "
                              f"{counts['meetings']} meeting(s), {counts['emails']} email(s).")
    return redirect("dashboard:leads")
