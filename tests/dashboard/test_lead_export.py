"""The CSV export of the list of leads: the leads the list shows for its filters (or a saved
view's), in its order, streamed, with cells that start like a formula guarded; managers only;
never another tenant's or the other mode's lead. Read through Django's test client (a
synchronous iterator) and through the ASGI application as daphne runs it (the same chunks from
an asynchronous one)."""

from __future__ import annotations

import csv
import io
import json
from datetime import timedelta

import pytest
from django.utils import timezone

from leads.export import COLUMNS
from leads.saved_views import saved_view_create
from tests.dashboard.client import signed_in
from tests.factories import make_lead

HEADER = [name for name, _ in COLUMNS]


@pytest.fixture
def leads(kit, manager, stranger):
    """Three Globex leads a day apart (the newest first below), one of them hostile, an Initech
    lead, a test-mode Globex lead and a stranger's Globex lead."""
    now = timezone.now()
    hostile = make_lead(kit, email="eve@globex.example", name="=HYPERLINK(\"http://evil\")",
                        company="+cmd|' /C calc'!A0", title="-2+3", phone="+14155550123",
                        tags=["@risky", "vip"], custom_fields={"industry": "retail", "seats": 4},
                        assigned_to_id=manager.pk, status="qualified", source="form",
                        created_at=now - timedelta(days=1))
    plain = make_lead(kit, email="ann@globex.example", name="Ann, \"the\" Buyer", company="Globex",
                      created_at=now - timedelta(days=2))
    newest = make_lead(kit, email="bob@globex.example", name="Bob", company="Globex",
                       created_at=now)
    make_lead(kit, email="ivy@initech.example", name="Ivy", company="Initech")
    make_lead(kit, mode="test", email="tess@globex.example", company="Globex")
    make_lead(stranger, email="sam@globex.example", company="Globex")
    return {"hostile": hostile, "plain": plain, "newest": newest}


def _rows(body: bytes) -> list[list[str]]:
    assert body.startswith("\ufeff".encode())  # the byte order mark Excel reads UTF-8 by
    return list(csv.reader(io.StringIO(body.decode("utf-8-sig"), newline="")))


def _export(client, query: str = "") -> list[list[str]]:
    response = client.get(f"/dashboard/leads/export/{query}")
    assert response.status_code == 200 and response.streaming
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert response["Content-Disposition"].startswith('attachment; filename="leads-')
    return _rows(b"".join(response.streaming_content))


def test_the_filtered_view_in_its_order_with_every_column(kit, manager, leads):
    rows = _export(signed_in(manager), "?q=globex")
    assert rows[0] == HEADER
    emails = [row[1] for row in rows[1:]]
    assert emails == ["bob@globex.example", "eve@globex.example", "ann@globex.example"]
    hostile = dict(zip(HEADER, rows[2], strict=True))
    lead = leads["hostile"]
    assert hostile["id"] == f"lead_{lead.pk.hex}"
    # Cells that a spreadsheet would run as a formula start with a quote.
    assert hostile["name"] == "'=HYPERLINK(\"http://evil\")"
    assert hostile["company"] == "'+cmd|' /C calc'!A0" and hostile["title"] == "'-2+3"
    assert hostile["phone"] == "'+14155550123" and hostile["tags"] == "'@risky; vip"
    assert hostile["owner"] == "mia@acme.test" and hostile["status"] == "qualified"
    assert json.loads(hostile["custom_fields"]) == {"industry": "retail", "seats": 4}
    assert hostile["score"] == "0" and hostile["source"] == "form"
    assert hostile["created_at"] == lead.created_at.strftime("%Y-%m-%dT%H:%M:%S.") + \
        f"{lead.created_at.microsecond // 1000:03d}Z"
    plain = dict(zip(HEADER, rows[3], strict=True))
    assert plain["name"] == 'Ann, "the" Buyer' and plain["tags"] == "" and plain["owner"] == ""
    assert plain["custom_fields"] == "" and plain["phone"] == ""


@pytest.mark.parametrize("query, expected", [
    ("", ["ivy", "bob", "eve", "ann"]),
    ("?sort=oldest", ["ann", "eve", "bob", "ivy"]),
    ("?status=qualified", ["eve"]),
    ("?source=form&q=globex", ["eve"]),
    ("?q=initech", ["ivy"]),
    ("?q=zzz-nobody", []),
], ids=["everything", "oldest first", "status", "source and search", "search", "no match"])
def test_the_export_follows_the_lists_filters_and_never_shows_others(kit, manager, leads, query,
                                                                      expected):
    client = signed_in(manager)
    rows = _export(client, query)
    assert [row[1].split("@")[0] for row in rows[1:]] == expected
    body = "\n".join(",".join(row) for row in rows)
    assert "tess@" not in body and "sam@" not in body  # the test mode's, the stranger's


def test_a_saved_view_exports_its_own_filter(kit, manager, leads):
    view = saved_view_create(tenant=kit.tenant, owner=manager, name="Qualified", shared=False,
                             status="qualified")
    rows = _export(signed_in(manager), f"?view={view.pk}")
    assert [row[1] for row in rows[1:]] == ["eve@globex.example"]
    page = signed_in(manager).get(f"/dashboard/leads/?view={view.pk}").content.decode()
    assert 'href="/dashboard/leads/export/?status=qualified"' in page


def test_test_mode_exports_test_leads(kit, manager, leads):
    client = signed_in(manager)
    client.post("/dashboard/mode/", {"mode": "test"})
    response = client.get("/dashboard/leads/export/")
    assert 'filename="leads-test-' in response["Content-Disposition"]
    assert [row[1] for row in _rows(b"".join(response.streaming_content))[1:]] == [
        "tess@globex.example"]


def test_reps_cannot_export(kit, rep, leads):
    response = signed_in(rep).get("/dashboard/leads/export/")
    assert response.status_code == 302 and not response.streaming
    assert signed_in(rep).get("/dashboard/leads/").content.decode().count("Export CSV") == 0


def test_under_asgi_the_same_file_streams_in_chunks(kit, manager, leads, api, monkeypatch,
                                                    recwarn):
    from leads import export

    monkeypatch.setattr(export, "CHUNK_BYTES", 64)
    monkeypatch.setattr(export, "ROWS_PER_FETCH", 1)
    client = signed_in(manager)
    expected = b"".join(client.get("/dashboard/leads/export/?q=globex").streaming_content)
    cookie = client.cookies["sessionid"].value
    api.validate_schema = False
    response = api.get("/dashboard/leads/export/?q=globex",
                       headers={"Cookie": f"sessionid={cookie}"})
    assert response.status_code == 200 and response.content == expected
    assert len(_rows(response.content)) == 4
    # Django gathers a synchronous iterator into one list under ASGI, and says so.
    assert not [w for w in recwarn if "iterators" in str(w.message)]

