"""CSV import of leads: upload, a preview of the first rows with the mapping guessed from the
header (editable), per-row errors (an invalid address, a value too long, the address of an earlier
row), deduplication by the kept form of the address against the tenant's leads in the mode shown
(update or skip, as chosen), leads created with ``source=import`` through the services, a Celery
task with its progress as JSON, and the file's rows gone once the import ends."""

from __future__ import annotations

import csv
import io
from datetime import timedelta

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from core.models import Event
from leads import imports
from leads.models import JobStatus, Lead, LeadImport, LeadImportRow
from tests.dashboard.client import signed_in
from tests.factories import PASSWORD, make_lead

HEADER = ["Email Address", "First Name", "Last Name", "Company", "Job Title", "Phone", "Tags",
          "Lead Owner", "Status", "Industry"]


def _csv(rows: list[list[str]], *, header=HEADER, delimiter=",") -> bytes:
    out = io.StringIO()
    writer = csv.writer(out, delimiter=delimiter, lineterminator="\r\n")
    writer.writerow(header)
    writer.writerows(rows)
    return out.getvalue().encode()


def _upload(client, data: bytes, name: str = "leads.csv"):
    return client.post("/dashboard/leads/import/", {"file": SimpleUploadedFile(name, data)})


def _start(client, lead_import, *, duplicates="update", mapping=None, callbacks):
    mapping = mapping or lead_import.mapping
    form = {f"map_{n}": target for n, target in enumerate(mapping)}
    with callbacks(execute=True):
        return client.post(f"/dashboard/leads/import/{lead_import.pk}/",
                           {**form, "duplicates": duplicates, "start": "1"})


ROWS = [
    ["ann@globex.example", "Ann", "Lee", "Globex", "CTO", "+14155550123", "vip; expo",
     "mia@acme.test", "Qualified", "retail"],                                       # row 2: new
    ["OLGA@Initech.EXAMPLE", "Olga", "", "Initech", "", "", "expo", "", "", "banking"],  # 3: exists
    ["not an address", "Bad", "", "", "", "", "", "", "", ""],                      # 4: refused
    ["ann@GLOBEX.example", "Ann", "Again", "", "", "", "", "", "", ""],             # 5: same as 2
    ["", "", "", "", "", "", "", "", "", ""],                                       # 6: blank, left out
    ["bob@hooli.example", "B" * 201, "", "Hooli", "", "", "", "", "", ""],          # 7: too long
    ["cy@hooli.example", "Cy", "", "Hooli", "", "", "", "nobody@acme.test", "", ""],  # 8: owner
    ["dee@hooli.example", "Dee", "", "Hooli", "", "", "", "", "Maybe later", ""],   # 9: status
]


@pytest.fixture
def olga(kit):
    return make_lead(kit, email="olga@initech.example", name="Olga K.", tags=["old"],
                     custom_fields={"seats": 4})


def test_the_preview_guesses_the_mapping_and_tells_each_rows_fate(kit, rep, manager, olga):
    client = signed_in(rep)
    response = _upload(client, _csv(ROWS))
    lead_import = LeadImport.objects.get()
    assert response["Location"] == f"/dashboard/leads/import/{lead_import.pk}/"
    assert lead_import.total == 7 and lead_import.status == JobStatus.UPLOADED
    assert lead_import.mapping == ["email", "first_name", "last_name", "company", "title", "phone",
                                   "tags", "owner", "status", "custom"]
    assert list(LeadImportRow.objects.values_list("number", flat=True).order_by("number")) == [
        2, 3, 4, 5, 7, 8, 9]
    page = client.get(response["Location"]).content.decode()
    assert '<option value="first_name" selected>First name</option>' in page
    assert '<option value="custom" selected>A custom field named after the column</option>' in page
    outcomes = [cell.split(">")[-1] for cell in _outcome_cells(page)]
    assert outcomes == ["New lead", "Updates a lead", "Refused", "Refused", "Refused", "Refused",
                        "Refused"]
    assert "Email Address: Enter a valid email address." in page
    assert "The same email address as row 2." in page
    assert "First Name: At most 200 characters." in page
    assert "Lead Owner: No active member of the team has this email address." in page
    assert "Status: Not a status: use one of New, Qualifying" in page
    # Checking another mapping, or skipping, shows the rows again under it.
    form = {f"map_{n}": t for n, t in enumerate(lead_import.mapping)}
    page = client.post(response["Location"], {**form, "map_7": "", "map_8": "",
                                              "duplicates": "skip", "check": "1"}).content.decode()
    assert [c.split(">")[-1] for c in _outcome_cells(page)] == [
        "New lead", "Skipped: exists", "Refused", "Refused", "Refused", "New lead", "New lead"]
    assert not Lead.objects.filter(email="ann@globex.example").exists()  # nothing imported yet


def _outcome_cells(page: str) -> list[str]:
    import re

    return re.findall(r'<td class="outcome"><span class="pill [a-z]+">([^<]+)<', page)


def test_the_import_creates_updates_and_lists_each_refused_row(kit, rep, manager, olga,
                                                               eager_celery,
                                                               django_capture_on_commit_callbacks):
    client = signed_in(rep)
    _upload(client, _csv(ROWS), name="trade-show.csv")
    lead_import = LeadImport.objects.get()
    response = _start(client, lead_import, callbacks=django_capture_on_commit_callbacks)
    assert response["Location"] == f"/dashboard/leads/import/{lead_import.pk}/"
    lead_import.refresh_from_db()
    assert (lead_import.status, lead_import.processed, lead_import.created, lead_import.updated,
            lead_import.skipped, lead_import.failed) == (JobStatus.DONE, 7, 1, 1, 0, 5)
    assert not LeadImportRow.objects.exists()  # the file is gone once imported
    ann = Lead.objects.get(email="ann@globex.example")
    assert (ann.name, ann.company, ann.title, ann.phone, ann.source, ann.status) == (
        "Ann Lee", "Globex", "CTO", "+14155550123", "import", "qualified")
    assert ann.tags == ["vip", "expo"] and ann.assigned_to_id == manager.pk
    assert ann.custom_fields == {"Industry": "retail"}
    assert Event.objects.filter(lead_id=ann.pk, type__in=["lead.created", "lead.qualified"]).count() == 2
    olga.refresh_from_db()
    # Updated with the row's cells; its own tags and custom fields kept; its source unchanged.
    assert (olga.name, olga.company, olga.source) == ("Olga", "Initech", "api")
    assert olga.tags == ["old", "expo"] and olga.custom_fields == {"seats": 4, "Industry": "banking"}
    assert lead_import.errors == [
        {"row": 4, "column": "Email Address", "message": "Enter a valid email address."},
        {"row": 5, "column": "Email Address", "message": "The same email address as row 2."},
        {"row": 7, "column": "First Name", "message": "At most 200 characters."},
        {"row": 8, "column": "Lead Owner",
         "message": "No active member of the team has this email address."},
        {"row": 9, "column": "Status", "message": lead_import.errors[-1]["message"]},
    ]
    page = client.get(f"/dashboard/leads/import/{lead_import.pk}/").content.decode()
    assert 'data-count="created">1<' in page and 'data-count="failed">5<' in page
    assert "Refused rows" in page and "The same email address as row 2." in page
    assert "not an address" not in page  # rows are named by number, never by their values
    assert client.get(f"/dashboard/leads/import/{lead_import.pk}/status/").json() == {
        "status": "done", "done": True, "total": 7, "processed": 7, "percent": 100,
        "created": 1, "updated": 1, "skipped": 0, "failed": 5}


def test_skip_leaves_existing_leads_alone(kit, rep, olga, eager_celery,
                                          django_capture_on_commit_callbacks):
    client = signed_in(rep)
    _upload(client, _csv([ROWS[1]]))
    lead_import = LeadImport.objects.get()
    _start(client, lead_import, duplicates="skip", callbacks=django_capture_on_commit_callbacks)
    lead_import.refresh_from_db()
    assert (lead_import.skipped, lead_import.updated, lead_import.created) == (1, 0, 0)
    olga.refresh_from_db()
    assert olga.name == "Olga K." and olga.tags == ["old"]


def test_another_tenants_and_the_other_modes_leads_are_no_duplicates(
        kit, stranger, rep, manager, eager_celery, django_capture_on_commit_callbacks):
    theirs = make_lead(stranger, email="ann@globex.example", name="Stranger's Ann")
    test_mode = make_lead(kit, mode="test", email="ann@globex.example", name="Test Ann")
    client = signed_in(rep)
    _upload(client, _csv([ROWS[0]]))
    lead_import = LeadImport.objects.get()
    page = client.get(f"/dashboard/leads/import/{lead_import.pk}/").content.decode()
    assert [c.split(">")[-1] for c in _outcome_cells(page)] == ["New lead"]
    _start(client, lead_import, callbacks=django_capture_on_commit_callbacks)
    lead_import.refresh_from_db()
    assert lead_import.created == 1 and lead_import.updated == 0
    mine = Lead.objects.get(tenant=kit.tenant, livemode=True, email="ann@globex.example")
    assert mine.name == "Ann Lee"
    theirs.refresh_from_db()
    test_mode.refresh_from_db()
    assert theirs.name == "Stranger's Ann" and test_mode.name == "Test Ann"


def test_an_import_is_404_to_another_tenant_and_mode(kit, stranger, rep):
    from tenants.services import user_create

    client = signed_in(rep)
    _upload(client, _csv([ROWS[0]]))
    lead_import = LeadImport.objects.get()
    outsider = signed_in(user_create(tenant=stranger.tenant, email="eve@stranger.test",
                                     password=PASSWORD))
    for path in ("", "status/"):
        assert outsider.get(f"/dashboard/leads/import/{lead_import.pk}/{path}").status_code == 404
    assert "leads.csv" not in outsider.get("/dashboard/leads/import/").content.decode()
    client.post("/dashboard/mode/", {"mode": "test"})
    assert client.get(f"/dashboard/leads/import/{lead_import.pk}/").status_code == 404


@pytest.mark.parametrize("changes, message", [
    ({"map_0": ""}, "Choose the column that holds the email address."),
    ({"map_3": "title"}, "Title is already the column “Company”."),  # beside Job Title
    ({"map_3": "name"}, "Choose a name column or first and last name columns, not both."),
    ({"map_3": "bogus"}, "Select a valid choice."),
])
def test_a_mapping_that_cannot_work_is_refused(kit, rep, changes, message):
    client = signed_in(rep)
    _upload(client, _csv([ROWS[0]]))
    lead_import = LeadImport.objects.get()
    form = {f"map_{n}": t for n, t in enumerate(lead_import.mapping)}
    response = client.post(f"/dashboard/leads/import/{lead_import.pk}/",
                           {**form, **changes, "duplicates": "update", "start": "1"})
    assert response.status_code == 400
    assert message in response.content.decode()
    lead_import.refresh_from_db()
    assert lead_import.status == JobStatus.UPLOADED


@pytest.mark.parametrize("data, message", [
    (b"", "The submitted file is empty."),
    (b"\r\n,,\r\n", "The file is empty: its first line should name the columns."),
    (b"email,name\r\n", "The file has a header but no row of leads below it."),
    (b"email\x00name\r\na\x00b\r\n", "This is not a CSV file"),
    ("email,name\r\n" + "a@b.example,x\r\n" * 4, "At most 3 rows in one file"),
], ids=["empty", "blank lines", "header only", "binary", "too many rows"])
def test_a_file_that_cannot_be_imported_is_refused_at_upload(kit, rep, monkeypatch, data, message):
    monkeypatch.setattr(imports, "MAX_ROWS", 3)
    response = _upload(signed_in(rep), data if isinstance(data, bytes) else data.encode())
    assert response.status_code == 400 and message in response.content.decode()
    assert not LeadImport.objects.exists() and not LeadImportRow.objects.exists()


def test_excel_files_semicolons_and_a_byte_order_mark_are_read(kit, rep):
    client = signed_in(rep)
    latin = "E-mail;Name;Firma\r\nmax@müller.example;Jürgen Müller;Müller GmbH\r\n"
    _upload(client, latin.encode("cp1252"), name="excel.csv")
    _upload(client, "\ufeffEmail,Name\r\nzoe@globex.example,Zoë\r\n".encode(), name="bom.csv")
    excel, bom = LeadImport.objects.order_by("created_at")
    assert excel.headers == ["E-mail", "Name", "Firma"] and excel.mapping == ["email", "name", "custom"]
    assert list(excel.rows.values_list("cells", flat=True)) == [
        ["max@müller.example", "Jürgen Müller", "Müller GmbH"]]
    assert bom.headers == ["Email", "Name"] and bom.mapping == ["email", "name"]


def test_an_export_imports_back(kit, manager, eager_celery, django_capture_on_commit_callbacks):
    make_lead(kit, email="ann@globex.example", name="=Ann", company="Globex", tags=["a", "b"],
              custom_fields={"seats": 4}, status="nurturing", assigned_to_id=manager.pk,
              phone="+14155550123")
    client = signed_in(manager)
    exported = b"".join(client.get("/dashboard/leads/export/").streaming_content)
    client.post("/dashboard/mode/", {"mode": "test"})
    _upload(client, exported, name="export.csv")
    lead_import = LeadImport.objects.get()
    assert lead_import.mapping == ["", "email", "name", "company", "title", "phone", "status", "",
                                   "", "tags", "owner", "custom_fields", "", "", "", "", ""]
    _start(client, lead_import, callbacks=django_capture_on_commit_callbacks)
    copy = Lead.objects.get(livemode=False)
    assert (copy.email, copy.name, copy.company, copy.phone, copy.status, copy.source) == (
        "ann@globex.example", "=Ann", "Globex", "+14155550123", "nurturing", "import")
    assert copy.tags == ["a", "b"] and copy.custom_fields == {"seats": 4}
    assert copy.assigned_to_id == manager.pk


def test_an_upload_nobody_started_is_deleted_after_a_day_and_a_lost_task_is_sent_again(
        kit, rep, monkeypatch):
    client = signed_in(rep)
    _upload(client, _csv([ROWS[0]]))
    _upload(client, _csv([ROWS[1]]))
    abandoned, queued = LeadImport.objects.order_by("created_at")
    sent = []
    monkeypatch.setattr(imports, "_enqueue", sent.append)
    LeadImport.objects.filter(pk=queued.pk).update(status=JobStatus.QUEUED)
    assert imports.lead_imports_sweep() == 0
    later = abandoned.created_at + imports.ABANDONED_AFTER + timedelta(minutes=1)
    assert imports.lead_imports_sweep(now=later) == 2 and sent == [queued.pk]
    abandoned.refresh_from_db()
    assert abandoned.status == JobStatus.FAILED and "Not started within a day" in abandoned.error
    assert list(LeadImportRow.objects.values_list("lead_import", flat=True)) == [queued.pk]


def test_an_erasure_removes_the_persons_rows_from_an_import_waiting_to_run(kit, rep, api):
    ann = make_lead(kit, email="ann@globex.example")
    client = signed_in(rep)
    _upload(client, _csv([ROWS[0], ROWS[6]]))
    response = api.delete(f"/api/v1/leads/lead_{ann.pk.hex}", headers=kit.auth())
    assert response.status_code == 204
    cells = list(LeadImportRow.objects.values_list("cells", flat=True))
    assert len(cells) == 1 and cells[0][0] == "cy@hooli.example"
