"""Importing leads from a CSV file: upload, a preview of the first rows with the mapping of each
column (guessed from the header, editable), then the import, which a Celery task runs while the
page shows its progress, and what it did, row by row (docs/dashboard.md, "Importing leads")."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render

from core.errors import ServiceError
from leads import imports
from leads import selectors as lead_selectors
from leads.models import ImportDuplicates, JobStatus

from ..auth import dashboard_view

UPLOAD_MB = imports.MAX_FILE_BYTES // (1024 * 1024)


class UploadForm(forms.Form):
    file = forms.FileField(label="CSV file", help_text=(
        f"The first line names the columns. Up to {imports.MAX_ROWS:,} rows and {UPLOAD_MB} MB; "
        "UTF-8 or Excel's encoding; commas, semicolons or tabs."))


@dashboard_view()
def lead_import_index(request: HttpRequest) -> HttpResponse:
    """The upload form, and the latest imports."""
    actor = request.actor
    form = UploadForm(request.POST or None, request.FILES or None)
    if request.method == "POST" and form.is_valid():
        upload = form.cleaned_data["file"]
        if upload.size > imports.MAX_FILE_BYTES:
            form.add_error("file", f"At most {UPLOAD_MB} MB in one file: split it.")
        else:
            try:
                lead_import = actor.write(imports.lead_import_upload, user=actor.user,
                                          requested_by=actor.name, file_name=upload.name,
                                          data=upload.read())
            except ServiceError as refused:
                form.add_error("file", refused.message)
            else:
                return redirect("dashboard:lead-import", import_id=lead_import.pk)
    return render(request, "dashboard/lead_import.html", {
        "form": form, "imports": actor.read(lead_selectors.lead_imports_recent),
        "section": "leads"}, status=400 if form.errors else 200)


class MappingForm(forms.Form):
    """One field per column (``map_<n>``), and what to do with an address that is a lead's."""

    duplicates = forms.ChoiceField(choices=ImportDuplicates.choices, widget=forms.RadioSelect,
                                   initial=ImportDuplicates.UPDATE,
                                   label="A row whose email address is an existing lead's")

    def __init__(self, *args, lead_import, **kwargs):
        super().__init__(*args, **kwargs)
        self.headers = lead_import.headers
        for number, (header, target) in enumerate(zip(lead_import.headers, lead_import.mapping,
                                                      strict=True)):
            self.fields[f"map_{number}"] = forms.ChoiceField(
                choices=list(imports.TARGETS.items()), initial=target, required=False,
                label=header)

    @property
    def columns(self) -> list:
        return [self[f"map_{number}"] for number in range(len(self.headers))]

    def mapping(self) -> list[str]:
        return [self.cleaned_data.get(f"map_{number}") or "" for number in range(len(self.headers))]


def _preview(actor, lead_import, mapping: list[str], duplicates: str) -> list[dict]:
    """The first rows as the import would read them: their cells, then whether each makes a
    new lead, meets an existing one (updated or skipped), or is refused, and why."""
    rows = lead_selectors.lead_import_first_rows(lead_import=lead_import,
                                                 limit=imports.PREVIEW_ROWS)
    usable = "email" in mapping
    owners = actor.read(imports.owners_of, both_modes=True) if "owner" in mapping else {}
    read = [imports.read_row(number=row.number, cells=row.cells, headers=lead_import.headers,
                             mapping=mapping, owners=owners) if usable else None for row in rows]
    addresses = [r.email.lower() for r in read if r is not None and r.email]
    existing = actor.read(imports.existing_addresses, emails=addresses)
    seen: dict[str, int] = {}
    shown = []
    for row, result in zip(rows, read, strict=True):
        cells = [row.cells[i] if i < len(row.cells) else "" for i in range(len(lead_import.headers))]
        if result is None:
            shown.append({"number": row.number, "cells": cells, "outcome": "", "errors": []})
            continue
        errors = [f"{column}: {message}" for column, message in result.errors]
        address = (result.email or "").lower()
        if address and not errors:
            if address in seen:
                errors.append(f"The same email address as row {seen[address]}.")
            seen.setdefault(address, row.number)
        if errors:
            outcome = "refused"
        elif address in existing:
            outcome = "update" if duplicates == ImportDuplicates.UPDATE else "skip"
        else:
            outcome = "new"
        shown.append({"number": row.number, "cells": cells, "outcome": outcome, "errors": errors})
    return shown


@dashboard_view()
def lead_import_detail(request: HttpRequest, import_id: str) -> HttpResponse:
    """Before the import: the preview and the mapping (**Check** shows the preview again under
    the mapping chosen; **Import** starts it). After: its progress, then its result."""
    actor = request.actor
    lead_import = actor.get(lead_selectors.lead_import_get, import_id=import_id)
    if lead_import.status != JobStatus.UPLOADED:
        return _progress(request, lead_import)
    form = MappingForm(request.POST or None, lead_import=lead_import)
    status = 200
    mapping, duplicates = lead_import.mapping, ImportDuplicates.UPDATE
    if request.method == "POST" and not form.is_valid():
        status = 400
    elif request.method == "POST":
        mapping, duplicates = form.mapping(), form.cleaned_data["duplicates"]
        try:
            imports.mapping_clean(headers=lead_import.headers, mapping=mapping)
        except ServiceError as refused:
            _refuse_mapping(form, refused)
            status = 400
        else:
            if request.POST.get("start"):
                imports.lead_import_start(lead_import=lead_import, mapping=mapping,
                                          duplicates=duplicates)
                messages.success(request, f"Importing {lead_import.total:,} rows of "
                                          f"{lead_import.file_name}.")
                return redirect("dashboard:lead-import", import_id=lead_import.pk)
    return render(request, "dashboard/lead_import_preview.html", {
        "lead_import": lead_import, "form": form,
        "rows": _preview(actor, lead_import, mapping, duplicates),
        "more": max(0, lead_import.total - imports.PREVIEW_ROWS), "section": "leads",
    }, status=status)


def _refuse_mapping(form: MappingForm, refused: ServiceError) -> None:
    placed = False
    for detail in refused.details:
        name = detail.field.replace("mapping.", "map_")
        if name in form.fields:
            form.add_error(name, detail.message)
            placed = True
        else:
            form.add_error(None, detail.message)
            placed = True
    if not placed:
        form.add_error(None, refused.message)


def _state(lead_import) -> dict:
    done = lead_import.status in (JobStatus.DONE, JobStatus.FAILED)
    percent = 100 if lead_import.status == JobStatus.DONE else (
        min(99, int(lead_import.processed * 100 / lead_import.total)) if lead_import.total else 0)
    return {"status": lead_import.status, "done": done, "total": lead_import.total,
            "processed": lead_import.processed, "percent": percent,
            "created": lead_import.created, "updated": lead_import.updated,
            "skipped": lead_import.skipped, "failed": lead_import.failed}


def _progress(request: HttpRequest, lead_import) -> HttpResponse:
    return render(request, "dashboard/lead_import_progress.html", {
        "lead_import": lead_import, "state": _state(lead_import),
        "more_errors": max(0, lead_import.failed - len(
            {error["row"] for error in lead_import.errors})),
        "section": "leads"})


@dashboard_view()
def lead_import_status(request: HttpRequest, import_id: str) -> HttpResponse:
    """The import's progress, for the page that polls it (a small JSON object)."""
    lead_import = request.actor.get(lead_selectors.lead_import_get, import_id=import_id)
    return JsonResponse(_state(lead_import), headers={"Cache-Control": "no-store"})

