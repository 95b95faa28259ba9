"""Leads: search, filters, and one lead with its conversations, score reasons, meetings (which
staff reschedule or cancel here), the emails sent about it, and its history."""

from __future__ import annotations

import json
import uuid
from urllib.parse import urlencode

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
from core.errors import ServiceError
from leads import bulk, validation
from leads import selectors as lead_selectors
from leads import services as lead_services
from leads.models import BulkAction, LeadSort
from leads.vocabulary import LeadSource, LeadStatus
from privacy import services as privacy_services
from privacy.models import SubjectKind
from tenants import selectors as tenant_selectors
from tenants.models import StaffAccessAction
from tenants.services import record_staff_access

from ..auth import dashboard_view
from ..history import HISTORY_TYPES, lead_history, people
from .common import PAGE_SIZE, attempt, mark_invalid, query_without_page, refuse_on_form
from .inbox import note_rows, team_handles

STATUS_LABELS = dict(LeadStatus.choices)
RESCHEDULE_CHOICES = 5
HISTORY_EVENTS = 50  # the newest events shown in a lead's history


class LeadFilterForm(forms.Form):
    q = forms.CharField(required=False, max_length=200, label="Search")
    # Staff see the stored statuses (each with its label), not one surface's vocabulary.
    status = forms.ChoiceField(required=False, choices=[("", "Any status")] + LeadStatus.choices)
    source = forms.ChoiceField(required=False, choices=[("", "Any source")] + LeadSource.choices)
    sort = forms.ChoiceField(required=False, choices=LeadSort.choices, label="Order")


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


def list_filters(request: HttpRequest) -> tuple[LeadFilterForm, dict, object]:
    """The list's filters as the query asks them: a saved view's (``?view=<id>``: one the
    person may choose), else the filter form's. Returns the form to show, the filters
    (``q``, ``status``, ``source``, ``sort``: what ``filter_args`` passes on) and the view."""
    view = None
    view_id = request.GET.get("view")
    if view_id:
        try:
            view = request.actor.read(lead_selectors.saved_view_get, both_modes=True,
                                      user=request.actor.user, view_id=uuid.UUID(view_id))
        except ValueError:
            view = None
        if view is None:
            messages.error(request, "That view does not exist (any more).")
    if view is not None:
        form = LeadFilterForm({"q": view.q, "status": view.status, "source": view.source,
                               "sort": view.sort})
    else:
        form = LeadFilterForm(request.GET or None)
    data = form.cleaned_data if form.is_valid() else {}
    filters = {"q": data.get("q") or "", "status": data.get("status") or "",
               "source": data.get("source") or "", "sort": data.get("sort") or LeadSort.NEWEST}
    return form, filters, view


def filter_args(filters: dict) -> dict:
    """The list's filters as ``lead_find`` and the export take them."""
    return {"q": filters["q"], "stored_status": filters["status"] or None,
            "source": filters["source"] or None, "sort": filters["sort"]}


@dashboard_view()
def lead_index(request: HttpRequest) -> HttpResponse:
    actor = request.actor
    form, filters, view = list_filters(request)
    page = actor.read(lead_selectors.lead_find, **filter_args(filters),
                      page=_page_number(request), limit=PAGE_SIZE)
    for row in page.items:
        row["status_label"] = STATUS_LABELS[row["status"]]
        # The selector's rows carry the API's formatted timestamp; the template formats its own.
        row["created_at"] = parse_datetime(row["createdAt"])
    team = list(actor.read(tenant_selectors.tenant_users, both_modes=True))
    names = {user.pk: user.display_name for user in team}
    for row in page.items:
        row["owner"] = names.get(row["assigned_to_id"], "")
    filter_query = urlencode({key: value for key, value in filters.items()
                              if value and (key, value) != ("sort", LeadSort.NEWEST)})
    return render(request, "dashboard/leads.html", {
        "form": form, "page": _CountedPage(page.items, page.page, page.total), "total": page.total,
        "query": query_without_page(request), "section": "leads",
        "filters": filters, "filter_query": filter_query, "view": view,
        "views": actor.read(lead_selectors.saved_views, both_modes=True, user=actor.user),
        "team": team,
        "bulk_actions": BulkAction.choices, "statuses": LeadStatus.choices,
        "sync_limit": bulk.SYNC_LIMIT,
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


# --- editing a lead -------------------------------------------------------------------------

CUSTOM_FIELD_ROWS = 3  # empty rows for new custom fields under the lead's own


class LeadEditForm(forms.Form):
    """What a person may change of a lead on its page. The rules are the service's
    (``leads.validation``): the form checks shapes only, and a refusal comes back beside its
    field. Custom fields are rows of a name and a value: a value is text, but one that was a
    number, true/false, a list or an object stays one while it still reads as one (JSON)."""

    email = forms.CharField(widget=forms.EmailInput(attrs={"maxlength": validation.MAX_EMAIL_LENGTH}))
    name = forms.CharField(required=False)
    company = forms.CharField(required=False)
    title = forms.CharField(required=False)
    phone = forms.CharField(required=False)
    tags = forms.CharField(required=False, help_text="Separated by commas.")
    owner = forms.ChoiceField(required=False, label="Assigned to")

    def __init__(self, *args, lead, team, **kwargs):
        self.lead = lead
        initial = {"email": lead.email, "name": lead.name, "company": lead.company,
                   "title": lead.title, "phone": lead.phone, "tags": ", ".join(lead.tags or []),
                   "owner": str(lead.assigned_to_id or "")}
        self.custom = list((lead.custom_fields or {}).items())
        for number, (key, value) in enumerate(self.custom):
            initial[f"cf_key_{number}"] = key
            initial[f"cf_value_{number}"] = value if isinstance(value, str) else json.dumps(
                value, ensure_ascii=False)
        super().__init__(*args, initial=initial, **kwargs)
        for field, limit in validation.TEXT_LIMITS.items():
            if field in self.fields:
                self.fields[field].widget.attrs["maxlength"] = limit
        people = [(str(user.pk), user.display_name) for user in team]
        if lead.assigned_to_id and str(lead.assigned_to_id) not in dict(people):
            people.append((str(lead.assigned_to_id), lead.assigned_to.display_name))
        self.fields["owner"].choices = [("", "Nobody")] + people
        self.custom_error = ""
        self.taken_id = None  # the lead that has the address typed, when another has it
        for number in range(len(self.custom) + CUSTOM_FIELD_ROWS):
            self.fields[f"cf_key_{number}"] = forms.CharField(
                required=False, label="Field", widget=forms.TextInput(
                    attrs={"maxlength": validation.MAX_CUSTOM_FIELD_KEY_LENGTH,
                           "placeholder": "Field name"}))
            self.fields[f"cf_value_{number}"] = forms.CharField(
                required=False, label="Value", strip=False,
                widget=forms.TextInput(attrs={"placeholder": "Value"}))

    @property
    def custom_rows(self) -> list:
        return [(self[f"cf_key_{n}"], self[f"cf_value_{n}"])
                for n in range(len(self.custom) + CUSTOM_FIELD_ROWS)]

    def clean(self):
        data = super().clean()
        fields: dict = {}
        for number in range(len(self.custom) + CUSTOM_FIELD_ROWS):
            key = (data.get(f"cf_key_{number}") or "").strip()
            value = data.get(f"cf_value_{number}") or ""
            if not key:
                if value.strip():
                    self.add_error(f"cf_key_{number}", "Name the field.")
                continue
            if key in fields:
                self.add_error(f"cf_key_{number}", "Another row has this name.")
                continue
            fields[key] = self._custom_value(number, value)
        data["custom_fields"] = fields
        return data

    def _custom_value(self, number: int, text: str):
        """A value that was not text stays what it was while its text still reads as JSON."""
        if number < len(self.custom) and not isinstance(self.custom[number][1], str):
            try:
                return json.loads(text)
            except ValueError:
                pass
        return text

    def changes(self) -> dict:
        """The fields that differ from the lead's, as ``lead_update`` takes them."""
        data = self.cleaned_data
        wanted = {"email": data["email"], "name": data["name"], "company": data["company"],
                  "title": data["title"], "phone": data["phone"],
                  "tags": [tag.strip() for tag in data["tags"].split(",")],
                  "custom_fields": data["custom_fields"],
                  "assigned_to_id": uuid.UUID(data["owner"]) if data["owner"] else None}
        current = {"tags": self.lead.tags or [], "custom_fields": self.lead.custom_fields or {}}
        changed = {}
        for field, value in wanted.items():
            now = current.get(field, getattr(self.lead, field))
            compared = [t for t in value if t] if field == "tags" else value
            if compared != now:
                changed[field] = value
        return changed


# The service's field names, as the form names them, and as a message names them.
_EDIT_FIELDS = {"assigned_to_id": "owner"}
_EDIT_LABELS = {"email": "email", "name": "name", "company": "company", "title": "title",
                "phone": "phone", "tags": "tags", "custom_fields": "custom fields",
                "assigned_to_id": "assigned to"}


@dashboard_view()
def lead_edit(request: HttpRequest, lead_id: str) -> HttpResponse:
    """A lead's fields, changed through ``lead_update`` (its events fire as for the API)."""
    actor = request.actor
    lead = actor.get(lead_selectors.lead_get, lead_id=lead_id)
    team = list(actor.read(tenant_selectors.tenant_users, both_modes=True))
    form = LeadEditForm(request.POST or None, lead=lead, team=team)
    if request.method == "POST" and form.is_valid():
        changes = form.changes()
        if not changes:
            messages.info(request, "Nothing changed.")
            return redirect("dashboard:lead", lead_id=lead.pk)
        try:
            lead_services.lead_update(lead=lead, changes=changes)
        except lead_services.LeadEmailTaken as taken:
            form.add_error("email", "Another lead has this address.")
            form.taken_id = taken.existing_id
        except ServiceError as refused:
            _refuse_edit(form, refused)
        else:
            shown = ", ".join(_EDIT_LABELS[field] for field in changes)
            messages.success(request, f"Saved: {shown}.")
            return redirect("dashboard:lead", lead_id=lead.pk)
    status = 400 if request.method == "POST" else 200
    return render(request, "dashboard/lead_edit.html", {
        "lead": lead, "form": mark_invalid(form), "section": "leads"}, status=status)


def _refuse_edit(form: LeadEditForm, refused: ServiceError) -> None:
    """The service's refusal beside its field; the custom fields' below their rows."""
    custom = [d.message for d in refused.details if d.field.startswith("custom_fields")]
    form.custom_error = " ".join(custom)
    others = [d for d in refused.details if not d.field.startswith("custom_fields")]
    if others or not custom:
        refuse_on_form(form, type(refused)(refused.message, details=others),
                       fields=_EDIT_FIELDS)


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
    erasure = privacy_services.lead_erase(lead=lead, requested_by=request.actor.name,
                                          search_history=True)
    request.actor.write(record_staff_access, user=request.actor.user, action=StaffAccessAction.ERASED,
                        lead_id=erasure.subject_id)
    counts = erasure.counts
    messages.success(request, f"Erased: {counts['leads']} lead, {counts['conversations']} "
                              f"conversation(s), {counts['messages']} message(s), "
                              f"{counts['meetings']} meeting(s), {counts['emails']} email(s).")
    return redirect("dashboard:leads")
