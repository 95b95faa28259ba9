"""CSV import of leads (docs/dashboard.md, "Importing leads"; docs/leads.md, "CSV import").

Three steps, each a service:

1. ``lead_import_upload`` reads the file (UTF-8, with or without a byte order mark, else
   Windows-1252 as Excel writes it; comma, semicolon, tab or bar, as the first lines show),
   keeps its header and its rows (``LeadImportRow``), and guesses which lead field each
   column holds from its header (``guess_target``).
2. ``lead_import_start`` takes the mapping the person checked on the preview, and what to do
   with an address that is already a lead's (update it, or skip the row); a Celery task runs the
   import after the commit.
3. ``lead_import_run`` (the task) reads the rows in batches of ``BATCH``, one transaction per
   batch holding the import's row, and for each row creates a lead (``source=import``) through
   ``lead_create`` or updates the existing one through ``lead_update``, so every event fires as
   for the API. A row that breaks a rule (an invalid address, a name too long, the address of
   an earlier row of the same file) is counted and listed by row number and column, never by
   its value, and the others go on. The import records its progress for the page that polls
   it; a task run again goes on after the last row read.

**Deduplication by address.** Addresses are compared in the form leads keep them
(``core.emails.normalise_email``: ``Sam@Example.COM`` is ``Sam@example.com``), case-insensitively,
as the unique index compares them: within the file (the first row with an address wins, later
ones are refused, naming it), and against the tenant's leads in the mode shown. An existing lead
is updated with the row's non-empty cells (tags and custom fields are added to its own), or the
row is skipped, as the person chose.

**The file is kept only while it is imported.** Its rows are deleted when the import ends (done
or failed), an upload nobody started is deleted after ``ABANDONED_AFTER`` (the sweeper), and an
erasure removes the rows that name the person (``privacy.erasure``). What stays is the import's
record: file name, header, mapping, counts, and the per-row errors (row, column, reason).
"""

from __future__ import annotations

import csv
import io
import json
import uuid
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models.functions import Lower
from django.utils import timezone

from core import broker
from core.emails import EmailRefused, normalise_email
from core.errors import FieldError, InvalidRequest, ServiceError
from tenants.models import Tenant, User

from . import validation
from .bulk import job_claim
from .models import ImportDuplicates, JobStatus, Lead, LeadImport, LeadImportRow, LeadSource
from .services import LeadEmailTaken, lead_create, lead_update
from .vocabulary import LEGACY_OF_STORED, V1_OF_STORED, LeadStatus

MAX_FILE_BYTES = 10 * 1024 * 1024
MAX_ROWS = 50_000
MAX_COLUMNS = 100
MAX_CELL_CHARACTERS = 10_000
PREVIEW_ROWS = 10
BATCH = 200
MAX_ERRORS = 1000  # per-row errors kept on the import; the count is exact beyond
ABANDONED_AFTER = timedelta(hours=24)
STALE_AFTER = timedelta(minutes=5)
DELIMITERS = ",;\t|"

# What a column may become: a lead field, the two halves of a name, a custom field named after
# the column, the custom fields as one JSON object (as the export writes them), or nothing.
TARGETS: dict[str, str] = {
    "": "Do not import",
    "email": "Email",
    "name": "Name",
    "first_name": "First name",
    "last_name": "Last name",
    "company": "Company",
    "title": "Title",
    "phone": "Phone",
    "status": "Status",
    "tags": "Tags",
    "owner": "Owner (a team member's email)",
    "custom_fields": "Custom fields (a JSON object)",
    "custom": "A custom field named after the column",
}
REPEATABLE = ("", "custom")  # targets more than one column may have

# Headers, lower-cased with everything but letters and digits dropped, and what they hold.
_GUESSES: dict[str, str] = {
    **dict.fromkeys(("email", "emailaddress", "mail", "workemail", "businessemail"), "email"),
    **dict.fromkeys(("name", "fullname", "contact", "contactname", "person"), "name"),
    **dict.fromkeys(("firstname", "givenname", "forename"), "first_name"),
    **dict.fromkeys(("lastname", "surname", "familyname"), "last_name"),
    **dict.fromkeys(("company", "companyname", "organization", "organisation", "account",
                     "accountname", "employer"), "company"),
    **dict.fromkeys(("title", "jobtitle", "position", "role"), "title"),
    **dict.fromkeys(("phone", "phonenumber", "mobile", "mobilephone", "telephone", "tel",
                     "cell"), "phone"),
    **dict.fromkeys(("status", "leadstatus", "stage"), "status"),
    **dict.fromkeys(("tags", "tag", "labels", "label"), "tags"),
    **dict.fromkeys(("owner", "leadowner", "assignedto", "assignee", "contactowner"), "owner"),
    **dict.fromkeys(("customfields", "metadata"), "custom_fields"),
    # What this service's own export writes and an import cannot set: ignored.
    **dict.fromkeys(("id", "score", "source", "lastintent", "firstseenat", "lastactiveat",
                     "createdat", "updatedat"), ""),
}

# A status as a file may say it: the stored value, its label, or either surface's word.
_STATUSES: dict[str, str] = {
    **{shown: stored for stored, shown in V1_OF_STORED.items() if shown != "new"},
    **{shown: stored for stored, shown in LEGACY_OF_STORED.items()
       if shown not in ("qualifying", "booked")},
    **{label.lower(): stored for stored, label in LeadStatus.choices},
    **{stored: stored for stored in LeadStatus.values},
}
_FORMULA_GUARD = ("'=", "'+", "'-", "'@")


def guess_target(header: str) -> str:
    """The field a column of this header most likely holds; a column no field matches becomes
    a custom field of its name."""
    key = "".join(ch for ch in header.lower() if ch.isalnum())
    return _GUESSES.get(key, "custom" if key else "")


def _refused(message: str, code: str = "invalid_format") -> InvalidRequest:
    return InvalidRequest(message, details=[FieldError("file", code, message)])


# --- upload ---------------------------------------------------------------------------------

def _decode(data: bytes) -> str:
    """The file's text: UTF-8 (a byte order mark dropped), else Windows-1252, which is what
    Excel writes on Windows and which any byte sequence decodes as."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return data.decode("cp1252", errors="replace")


def _parse(text: str) -> list[list[str]]:
    if "\x00" in text:
        raise _refused("This is not a CSV file: it holds binary data.")
    sample = text[:8192]
    try:
        dialect: Any = csv.Sniffer().sniff(sample, delimiters=DELIMITERS)
    except csv.Error:
        dialect = csv.excel  # a single column, or too few lines to tell: commas
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=dialect.delimiter,
                        quotechar='"', doublequote=True, skipinitialspace=False, strict=False)
    rows: list[list[str]] = []
    try:
        for row in reader:
            rows.append(row)
            if len(rows) > MAX_ROWS + 1:
                raise _refused(f"At most {MAX_ROWS:,} rows in one file: split it.", "too_long")
    except csv.Error as exc:
        raise _refused(f"Line {reader.line_num} is not valid CSV ({exc}).") from None
    return rows


@transaction.atomic
def lead_import_upload(*, tenant: Tenant, livemode: bool, user: User | None, requested_by: str,
                       file_name: str, data: bytes) -> LeadImport:
    """Keeps an uploaded CSV file's header and rows, and the guessed mapping, until the person
    starts the import (``lead_import_start``). Refuses (``InvalidRequest`` on ``file``) a file
    over ``MAX_FILE_BYTES``, with more than ``MAX_ROWS`` rows or ``MAX_COLUMNS`` columns, with
    no row below its header, or that is no CSV."""
    if len(data) > MAX_FILE_BYTES:
        raise _refused(f"At most {MAX_FILE_BYTES // (1024 * 1024)} MB in one file: split it.",
                       "too_long")
    rows = _parse(_decode(data))
    while rows and not any(cell.strip() for cell in rows[-1]):
        rows.pop()
    if not rows or not any(cell.strip() for cell in rows[0]):
        raise _refused("The file is empty: its first line should name the columns.", "required")
    header = [cell.strip() for cell in rows[0]]
    if len(header) > MAX_COLUMNS:
        raise _refused(f"At most {MAX_COLUMNS} columns.", "too_long")
    headers = [name[:100] or f"Column {index + 1}" for index, name in enumerate(header)]
    # Rows keep their place in the file (row 1 is the header); blank ones are left out.
    body = [(number, row[:len(headers)]) for number, row in enumerate(rows[1:], start=2)
            if any(cell.strip() for cell in row)]
    if not body:
        raise _refused("The file has a header but no row of leads below it.", "required")
    now = timezone.now()
    lead_import = LeadImport.objects.create(
        tenant=tenant, livemode=livemode, user=user, requested_by=requested_by[:200],
        file_name=(file_name or "leads.csv")[:200], headers=headers,
        mapping=_guessed_mapping(headers), total=len(body), created_at=now, updated_at=now)
    LeadImportRow.objects.bulk_create(
        (LeadImportRow(lead_import=lead_import, number=number, cells=cells)
         for number, cells in body), batch_size=2000)
    return lead_import


def _guessed_mapping(headers: list[str]) -> list[str]:
    """Each column's guess; a field two columns claim goes to the first of them."""
    taken: set[str] = set()
    mapping = []
    for header in headers:
        target = guess_target(header)
        if target not in REPEATABLE and target in taken:
            target = "custom"
        taken.add(target)
        mapping.append(target)
    return mapping


# --- the mapping ----------------------------------------------------------------------------

def mapping_clean(*, headers: list[str], mapping: list[str]) -> list[str]:
    """The mapping as given for ``headers``, or ``InvalidRequest`` naming ``mapping.<column>``:
    one target of ``TARGETS`` per column, the email in exactly one, no other field twice, and a
    name or its halves, not both."""
    if len(mapping) != len(headers):
        raise InvalidRequest("Map every column.", details=[
            FieldError("mapping", "invalid_format", "Map every column.")])
    problems: list[FieldError] = []
    seen: dict[str, int] = {}
    for index, target in enumerate(mapping):
        if target not in TARGETS:
            problems.append(FieldError(f"mapping.{index}", "invalid_enum",
                                       "Choose one of the listed fields."))
        elif target not in REPEATABLE and target in seen:
            problems.append(FieldError(
                f"mapping.{index}", "invalid_enum",
                f"{TARGETS[target]} is already the column “{headers[seen[target]]}”."))
        else:
            seen.setdefault(target, index)
    if "email" not in seen:
        problems.append(FieldError("mapping", "required",
                                   "Choose the column that holds the email address."))
    if "name" in seen and ({"first_name", "last_name"} & set(seen)):
        problems.append(FieldError("mapping", "invalid_enum",
                                   "Choose a name column or first and last name columns, not both."))
    if problems:
        raise InvalidRequest(problems[0].message, details=problems)
    return list(mapping)


@transaction.atomic
def lead_import_start(*, lead_import: LeadImport, mapping: list[str], duplicates: str) -> LeadImport:
    """Starts an uploaded import with the checked mapping; the Celery task ``leads.import``
    runs it after the commit. An import already started is left as it is."""
    current = LeadImport.objects.select_for_update().get(pk=lead_import.pk)
    if current.status != JobStatus.UPLOADED:
        return current
    if duplicates not in ImportDuplicates.values:
        raise InvalidRequest("Choose what to do with existing leads.", details=[
            FieldError("duplicates", "invalid_enum", "Choose what to do with existing leads.")])
    current.mapping = mapping_clean(headers=current.headers, mapping=mapping)
    current.duplicates = duplicates
    current.status = JobStatus.QUEUED
    current.updated_at = timezone.now()
    current.save(update_fields=["mapping", "duplicates", "status", "updated_at"])
    transaction.on_commit(lambda: _enqueue(current.pk))
    return current


def _enqueue(import_id: uuid.UUID) -> None:
    from .tasks import import_leads

    # An unreachable broker holds nobody (core.broker): the sweeper enqueues the import later.
    broker.publish(import_leads, [str(import_id)])


# --- one row --------------------------------------------------------------------------------

@dataclass
class Row:
    """A row read through the mapping: its address, the lead fields its cells give, and what
    is wrong with it (column, reason)."""

    number: int
    email: str | None = None
    changes: dict[str, Any] = field(default_factory=dict)
    errors: list[tuple[str, str]] = field(default_factory=list)


def _cell(cells: list[str], index: int) -> str:
    value = cells[index].strip() if index < len(cells) else ""
    # This service's export writes a cell that starts like a formula after a quote.
    if value.startswith(_FORMULA_GUARD):
        value = value[1:]
    return value


def read_row(*, number: int, cells: list[str], headers: list[str], mapping: list[str],
             owners: dict[str, uuid.UUID]) -> Row:
    """The lead fields of one row under ``mapping``, checked by the rules every lead write
    obeys (``leads.validation``). Empty cells set nothing. ``owners``: the active staff's
    addresses, lower-cased, and their ids."""
    row = Row(number)
    names: dict[str, str] = {}
    custom: dict[str, Any] = {}
    for index, target in enumerate(mapping):
        value = _cell(cells, index)
        column = headers[index]
        if not target or not value:
            continue
        if len(value) > MAX_CELL_CHARACTERS:
            row.errors.append((column, f"At most {MAX_CELL_CHARACTERS:,} characters."))
            continue
        try:
            _read_cell(row, target, value, column=column, names=names, custom=custom,
                       owners=owners)
        except (validation.Refused, EmailRefused) as refused:
            row.errors.append((column, refused.message))
    if names:
        name = " ".join(part for part in (names.get("first_name"), names.get("last_name"))
                        if part)
        column = next(headers[i] for i, t in enumerate(mapping) if t in names)
        try:
            row.changes["name"] = validation.CLEANERS["name"](name)
        except validation.Refused as refused:
            row.errors.append((column, refused.message))
    if custom:
        row.changes["custom_fields"] = {**row.changes.get("custom_fields", {}), **custom}
    if row.email is None and not any(column == _email_column(headers, mapping)
                                     for column, _ in row.errors):
        row.errors.append((_email_column(headers, mapping), "An email address is required."))
    return row


def _email_column(headers: list[str], mapping: list[str]) -> str:
    return headers[mapping.index("email")]


def _read_cell(row: Row, target: str, value: str, *, column: str, names: dict[str, str],
               custom: dict[str, Any], owners: dict[str, uuid.UUID]) -> None:
    if target == "email":
        row.email = normalise_email(value)
    elif target in ("first_name", "last_name"):
        names[target] = value
    elif target in validation.TEXT_LIMITS:
        row.changes[target] = validation.CLEANERS[target](value)
    elif target == "status":
        stored = _STATUSES.get(value.lower())
        if stored is None:
            raise validation.Refused("invalid_enum", "Not a status: use one of "
                                     + ", ".join(label for _, label in LeadStatus.choices) + ".")
        row.changes["status"] = stored
    elif target == "tags":
        separator = ";" if ";" in value else ","
        row.changes["tags"] = validation.clean_tags(value.split(separator))
    elif target == "owner":
        owner = owners.get(value.lower())
        if owner is None:
            raise validation.Refused("invalid_enum", "No active member of the team has this "
                                     "email address.")
        row.changes["assigned_to_id"] = owner
    elif target == "custom_fields":
        try:
            parsed = json.loads(value)
        except ValueError:
            parsed = None
        if not isinstance(parsed, dict):
            raise validation.Refused("invalid_format", "Not a JSON object.")
        row.changes["custom_fields"] = {**parsed, **row.changes.get("custom_fields", {})}
    else:  # "custom"
        custom[column] = value


def owners_of(*, tenant: Tenant) -> dict[str, uuid.UUID]:
    """The tenant's active staff by address, lower-cased: who an owner column may name."""
    return {email.lower(): pk for pk, email in User.objects.filter(
        tenant=tenant, is_active=True).exclude(email="").values_list("pk", "email")}


def existing_addresses(*, tenant: Tenant, livemode: bool, emails: list[str]) -> set[str]:
    """Which of ``emails`` (lower-cased) are leads' of the tenant in this mode, compared as
    the unique index compares them (one query)."""
    if not emails:
        return set()
    return set(Lead.objects.annotate(email_lower=Lower("email"))
               .filter(tenant=tenant, livemode=livemode, email_lower__in=emails)
               .values_list("email_lower", flat=True))


# --- the run --------------------------------------------------------------------------------

def lead_import_run(*, import_id: Any) -> LeadImport | None:
    """Imports the rows of a queued or running import, batch by batch, until none is left;
    None when it is finished, unknown, or held by another worker."""
    first_rows: dict[str, int] | None = None
    owners: dict[str, uuid.UUID] | None = None
    while True:
        with transaction.atomic():
            job = job_claim(LeadImport, import_id)
            if job is None:
                return None
            if first_rows is None:
                first_rows = _first_rows(job)
                owners = owners_of(tenant=job.tenant)
            rows = list(job.rows.filter(number__gt=job.position).order_by("number")[:BATCH])
            for stored in rows:
                _import_row(job, stored, first_rows=first_rows, owners=owners or {})
            job.processed += len(rows)
            if rows:
                job.position = rows[-1].number
            job.status = JobStatus.RUNNING
            job.updated_at = timezone.now()
            if len(rows) < BATCH:
                _finish(job, JobStatus.DONE)
            job.save()
        if job.status == JobStatus.DONE:
            return job


def _first_rows(job: LeadImport) -> dict[str, int]:
    """The first row of each address in the whole file (lower-cased): a later row with the
    same address is a duplicate within the file. Computed from every row, so a task run again
    knows the rows an earlier run already imported."""
    email_index = job.mapping.index("email")
    first: dict[str, int] = {}
    for number, cells in job.rows.order_by("number").values_list("number", "cells").iterator(
            chunk_size=5000):
        value = _cell(cells, email_index)
        try:
            address = normalise_email(value).lower()
        except EmailRefused:
            continue
        first.setdefault(address, number)
    return first


def _import_row(job: LeadImport, stored: LeadImportRow, *, first_rows: dict[str, int],
                owners: dict[str, uuid.UUID]) -> None:
    row = read_row(number=stored.number, cells=stored.cells, headers=job.headers,
                   mapping=job.mapping, owners=owners)
    email_column = _email_column(job.headers, job.mapping)
    if not row.errors and row.email is not None:
        first = first_rows.get(row.email.lower(), row.number)
        if first != row.number:
            row.errors.append((email_column, f"The same email address as row {first}."))
    if row.errors:
        _failed(job, row.number, row.errors)
        return
    try:
        outcome = _write(job, row)
    except ServiceError as refused:
        columns = _columns_of_fields(job)
        errors = [(columns.get(d.field.split(".")[0], email_column), d.message)
                  for d in refused.details] or [(email_column, refused.message)]
        _failed(job, row.number, errors)
        return
    if outcome == "created":
        job.created += 1
    elif outcome == "updated":
        job.updated += 1
    else:
        job.skipped += 1


def _write(job: LeadImport, row: Row) -> str:
    """Creates the row's lead or updates the existing one (or skips the row); which it did."""
    assert row.email is not None
    existing = (Lead.objects.alias(email_lower=Lower("email"))
                .filter(tenant=job.tenant, livemode=job.livemode,
                        email_lower=row.email.lower()).first())
    if existing is None:
        try:
            with transaction.atomic():
                lead_create(tenant=job.tenant, livemode=job.livemode, email=row.email,
                            source=LeadSource.IMPORT, **row.changes)
            return "created"
        except (LeadEmailTaken, IntegrityError):
            # Created meanwhile by someone else (a chat, the API): it exists now.
            existing = (Lead.objects.alias(email_lower=Lower("email"))
                        .filter(tenant=job.tenant, livemode=job.livemode,
                                email_lower=row.email.lower()).first())
            if existing is None:
                raise
    if job.duplicates == ImportDuplicates.SKIP:
        return "skipped"
    changes = _merged(existing, row.changes)
    if not changes:
        return "skipped"
    lead_update(lead=existing, changes=changes, touch_activity=False)
    return "updated"


def _merged(lead: Lead, changes: dict[str, Any]) -> dict[str, Any]:
    """The row's changes to an existing lead, keeping what the lead has: tags and custom fields
    are added to its own; only fields that differ are left."""
    merged = dict(changes)
    if "tags" in merged:
        own = list(lead.tags or [])
        lowered = {tag.lower() for tag in own}
        merged["tags"] = own + [tag for tag in merged["tags"] if tag.lower() not in lowered]
    if "custom_fields" in merged:
        merged["custom_fields"] = {**(lead.custom_fields or {}), **merged["custom_fields"]}
    return {name: value for name, value in merged.items() if getattr(lead, name) != value}


def _columns_of_fields(job: LeadImport) -> dict[str, str]:
    """The column each lead field came from, to name it in a service's refusal."""
    columns: dict[str, str] = {}
    for header, target in zip(job.headers, job.mapping, strict=True):
        field_name = {"owner": "assigned_to_id", "first_name": "name", "last_name": "name",
                      "custom": "custom_fields"}.get(target, target)
        columns.setdefault(field_name, header)
    return columns


def _failed(job: LeadImport, number: int, errors: list[tuple[str, str]]) -> None:
    job.failed += 1
    for column, message in errors:
        if len(job.errors) >= MAX_ERRORS:
            return
        job.errors.append({"row": number, "column": column, "message": message})


def _finish(job: LeadImport, status: str, reason: str = "") -> None:
    """Ends the import: its rows go, the record stays."""
    job.rows.all().delete()
    job.status, job.error = status, reason[:300]
    job.finished_at = job.updated_at = timezone.now()


def lead_import_fail(*, import_id: Any, reason: str) -> None:
    """The task met an error it cannot get past: the import ends, saying why, and its rows go
    (the leads it reached stay)."""
    with transaction.atomic():
        job = LeadImport.objects.select_for_update().filter(
            pk=import_id, status__in=[JobStatus.QUEUED, JobStatus.RUNNING]).first()
        if job is None:
            return
        _finish(job, JobStatus.FAILED, reason)
        job.save()


def lead_imports_sweep(*, now: Any = None) -> int:
    """Enqueues again the imports that no task has moved for ``STALE_AFTER``, and deletes the
    rows of uploads nobody started within ``ABANDONED_AFTER``. Returns how many it touched."""
    now = now or timezone.now()
    stale = list(LeadImport.objects.filter(
        status__in=[JobStatus.QUEUED, JobStatus.RUNNING], updated_at__lt=now - STALE_AFTER,
    ).values_list("pk", flat=True)[:100])
    for import_id in stale:
        _enqueue(import_id)
    abandoned = 0
    for job in LeadImport.objects.filter(status=JobStatus.UPLOADED,
                                         created_at__lt=now - ABANDONED_AFTER)[:100]:
        with transaction.atomic():
            _finish(job, JobStatus.FAILED, "Not started within a day: the file was deleted.")
            job.save()
        abandoned += 1
    return len(stale) + abandoned
