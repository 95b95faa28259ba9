"""What the list of leads does with many leads at once: bulk actions on a selection (and their
progress when a Celery task does them), the CSV export of the filtered list, and saved views
(docs/dashboard.md, "Bulk actions", "CSV export", "Saved views")."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from functools import partial

from asgiref.sync import sync_to_async
from django import forms
from django.contrib import messages
from django.core.handlers.asgi import ASGIRequest
from django.http import HttpRequest, HttpResponse, JsonResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_POST

from core.errors import ServiceError
from leads import bulk, saved_views
from leads import selectors as lead_selectors
from leads.export import export_chunks
from leads.models import BulkAction, JobStatus, LeadSort, LeadStatus
from leads.vocabulary import LeadSource
from tenants import selectors as tenant_selectors

from ..auth import dashboard_view
from .common import safe_next
from .leads import filter_args, list_filters

STATUS_LABELS = dict(LeadStatus.choices)


class BulkForm(forms.Form):
    """The bulk bar of the list: an action, its value, and the leads it acts on: the checked
    rows, or every lead the filter matches (``scope=all``, with the list's filters)."""

    action = forms.ChoiceField(choices=BulkAction.choices)
    new_status = forms.CharField(required=False)
    new_owner = forms.CharField(required=False)
    tag = forms.CharField(required=False)
    scope = forms.ChoiceField(choices=[("checked", "checked"), ("all", "all")], initial="checked")
    filter_q = forms.CharField(required=False, max_length=200)
    filter_status = forms.ChoiceField(required=False, choices=[("", "")] + LeadStatus.choices)
    filter_source = forms.ChoiceField(required=False, choices=[("", "")] + LeadSource.choices)

    def value(self) -> str:
        action = self.cleaned_data["action"]
        return {BulkAction.STATUS: self.cleaned_data["new_status"],
                BulkAction.OWNER: self.cleaned_data["new_owner"],
                BulkAction.TAG_ADD: self.cleaned_data["tag"],
                BulkAction.TAG_REMOVE: self.cleaned_data["tag"]}.get(action, "")

    def filters(self) -> dict[str, str]:
        return {"q": self.cleaned_data["filter_q"], "status": self.cleaned_data["filter_status"],
                "source": self.cleaned_data["filter_source"]}


def _checked(request: HttpRequest) -> list[uuid.UUID]:
    """The checked rows' lead ids. Any well-formed id is taken: the selector keeps only the
    caller's leads, so a stranger's id changes nothing."""
    ids = []
    for value in request.POST.getlist("lead")[:bulk.SYNC_LIMIT]:
        try:
            ids.append(uuid.UUID(value))
        except ValueError:
            continue
    return ids


def _done(action: str, value: str, names: dict[str, str]) -> str:
    """What the action did to a lead, in words ("status set to Qualified")."""
    if action == BulkAction.STATUS:
        return f"status set to {STATUS_LABELS[value]}"
    if action == BulkAction.OWNER:
        return f"assigned to {names.get(value, 'somebody')}" if value else "left unassigned"
    if action == BulkAction.TAG_ADD:
        return f"tagged “{value}”"
    if action == BulkAction.TAG_REMOVE:
        return f"tag “{value}” removed"
    return "deleted (erased everywhere)"


def summary(outcome, *, action: str, value: str, names: dict[str, str]) -> str:
    """One sentence: what changed, what already was so, what was refused and why."""
    done = _done(action, value, names)
    leads = "lead" if outcome.changed == 1 else "leads"
    parts = [f"{outcome.changed} {leads} {done}."]
    if outcome.unchanged:
        parts.append(f"{outcome.unchanged} already {'were' if outcome.unchanged > 1 else 'was'} "
                     "so.")
    if outcome.failed:
        parts.append(f"{outcome.failed} refused: {outcome.first_error}")
    return " ".join(parts)


@require_POST
@dashboard_view()
def lead_bulk(request: HttpRequest) -> HttpResponse:
    actor = request.actor
    back = safe_next(request, reverse("dashboard:leads"))
    form = BulkForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Nothing changed: choose an action.")
        return redirect(back)
    action = form.cleaned_data["action"]
    if action == BulkAction.DELETE and not actor.can_manage:
        messages.error(request, "Only sales managers and the tenant administrator can delete "
                                "leads.")
        return redirect(back)
    try:
        value = actor.read(bulk.bulk_value_clean, both_modes=True, action=action,
                           value=form.value())
    except ServiceError as refused:
        messages.error(request, f"Nothing changed: {refused.message}")
        return redirect(back)
    names = actor.read(tenant_selectors.tenant_user_names, both_modes=True,
                       user_ids=[uuid.UUID(value)] if action == BulkAction.OWNER and value else [])
    names = {str(pk): name for pk, name in names.items()}
    requested_by = actor.name
    if form.cleaned_data["scope"] == "checked":
        ids = _checked(request)
        if not ids:
            messages.error(request, "Nothing changed: check the leads to change first.")
            return redirect(back)
        outcome = actor.write(bulk.bulk_apply_now, action=action, value=value,
                              requested_by=requested_by, lead_ids=ids)
        messages.success(request, summary(outcome, action=action, value=value, names=names))
        return redirect(back)
    filters = form.filters()
    total = actor.read(lead_selectors.lead_find, q=filters["q"],
                       stored_status=filters["status"] or None,
                       source=filters["source"] or None, limit=1).total
    if total <= bulk.SYNC_LIMIT:
        outcome = actor.write(bulk.bulk_apply_now, action=action, value=value,
                              requested_by=requested_by, filters=filters)
        messages.success(request, summary(outcome, action=action, value=value, names=names))
        return redirect(back)
    job = actor.write(bulk.bulk_job_create, user=actor.user, requested_by=requested_by,
                      action=action, value=value, filters=filters, total=total)
    return redirect("dashboard:lead-bulk-job", job_id=job.pk)


def _job_state(job) -> dict:
    percent = 100 if job.status == JobStatus.DONE else (
        min(99, int(job.processed * 100 / job.total)) if job.total else 0)
    return {"status": job.status, "done": job.status in (JobStatus.DONE, JobStatus.FAILED),
            "total": job.total, "processed": job.processed, "percent": percent}


@dashboard_view()
def lead_bulk_job(request: HttpRequest, job_id: str) -> HttpResponse:
    """A bulk action a Celery task does: its progress while it runs (the page polls
    ``lead_bulk_job_status``), what it did when it is over."""
    actor = request.actor
    job = actor.get(lead_selectors.bulk_job_get, job_id=job_id)
    names = actor.read(tenant_selectors.tenant_user_names, both_modes=True,
                       user_ids=[uuid.UUID(job.value)] if job.action == BulkAction.OWNER
                       and job.value else [])
    names = {str(pk): name for pk, name in names.items()}
    return render(request, "dashboard/lead_bulk_job.html", {
        "job": job, "state": _job_state(job), "what": _done(job.action, job.value, names),
        "result": summary(bulk.Outcome(job.changed, job.unchanged, job.failed, job.error),
                          action=job.action, value=job.value, names=names),
        "section": "leads"})


@dashboard_view()
def lead_bulk_job_status(request: HttpRequest, job_id: str) -> HttpResponse:
    job = request.actor.get(lead_selectors.bulk_job_get, job_id=job_id)
    return JsonResponse({**_job_state(job), "changed": job.changed, "unchanged": job.unchanged,
                         "failed": job.failed}, headers={"Cache-Control": "no-store"})


# --- the CSV export -------------------------------------------------------------------------

async def _in_request_thread(chunks: Iterator[bytes]) -> AsyncIterator[bytes]:
    """The chunks of a synchronous generator for an ASGI server, one at a time: each step runs
    in the request's own thread (its database connection), so that the export streams instead
    of being gathered into one list, which is what Django does with a synchronous iterator
    under ASGI."""
    step = sync_to_async(partial(next, chunks, None), thread_sensitive=True)
    try:
        while (chunk := await step()) is not None:
            yield chunk
    finally:
        await sync_to_async(chunks.close, thread_sensitive=True)()


@dashboard_view(manage=True)
def lead_export_csv(request: HttpRequest) -> HttpResponse:
    """The leads the list shows for its filters (or a saved view's), in its order, as CSV
    (``leads.export``), streamed. Managers and the admin token: a file of every lead leaves
    the service for good."""
    _, filters, _ = list_filters(request)
    chunks = request.actor.read(export_chunks, **filter_args(filters))
    content = _in_request_thread(chunks) if isinstance(request, ASGIRequest) else chunks
    response = StreamingHttpResponse(content, content_type="text/csv; charset=utf-8")
    stamp = timezone.now().strftime("%Y%m%d-%H%M")
    mode = "" if request.actor.livemode else "-test"
    response["Content-Disposition"] = f'attachment; filename="leads{mode}-{stamp}.csv"'
    response["Cache-Control"] = "no-store"
    return response


# --- saved views ----------------------------------------------------------------------------

class SavedViewForm(forms.Form):
    name = forms.CharField(max_length=200)
    shared = forms.BooleanField(required=False)
    q = forms.CharField(required=False, max_length=200)
    status = forms.CharField(required=False)
    source = forms.CharField(required=False)
    sort = forms.CharField(required=False)


@require_POST
@dashboard_view()
def saved_view_create(request: HttpRequest) -> HttpResponse:
    actor = request.actor
    form = SavedViewForm(request.POST)
    if not form.is_valid():
        messages.error(request, "The view was not saved: name it (at most 80 characters).")
        return redirect(safe_next(request, reverse("dashboard:leads")))
    data = form.cleaned_data
    try:
        view = actor.write(saved_views.saved_view_create, both_modes=True, owner=actor.user,
                           name=data["name"], shared=data["shared"], q=data["q"],
                           status=data["status"], source=data["source"],
                           sort=data["sort"] or LeadSort.NEWEST)
    except ServiceError as refused:
        messages.error(request, f"The view was not saved: {refused.message}")
        return redirect(safe_next(request, reverse("dashboard:leads")))
    messages.success(request, f"View “{view.name}” saved"
                              f"{', shared with the team' if view.shared else ''}.")
    return redirect(f"{reverse('dashboard:leads')}?view={view.pk}")


@require_POST
@dashboard_view()
def saved_view_delete(request: HttpRequest, view_id: str) -> HttpResponse:
    actor = request.actor
    view = actor.get(lead_selectors.saved_view_get, both_modes=True, user=actor.user,
                     view_id=view_id)
    try:
        saved_views.saved_view_delete(view=view, by=actor.user, can_manage=actor.can_manage)
    except ServiceError as refused:
        messages.error(request, refused.message)
        return redirect(f"{reverse('dashboard:leads')}?view={view.pk}")
    messages.success(request, f"View “{view.name}” deleted.")
    return redirect("dashboard:leads")
