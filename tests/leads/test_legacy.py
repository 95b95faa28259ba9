"""The legacy lead endpoints: GET /api/leads (and ?q=), GET and PATCH /api/leads/:id,
POST /api/admin/leads."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from core.models import Event
from leads.models import Lead
from tests.events import v1_data
from tests.factories import make_lead

T0 = datetime(2026, 3, 1, tzinfo=UTC)
LEGACY_FIELDS = {"id", "name", "email", "company", "status", "qualificationScore", "createdAt",
                 "phone", "metadata", "updatedAt"}


def _login(api, kit):
    r = api.post("/api/admin/auth", json={"token": kit.admin_token})
    assert r.status_code == 200


# --- GET /api/leads ---------------------------------------------------------------------------

def test_lists_newest_first_in_the_legacy_shape(api, kit):
    leads = [make_lead(kit, name=f"Lead {i}", company="Acme", created_at=T0 + timedelta(days=i))
             for i in range(3)]
    r = api.get("/api/leads", headers=kit.auth("read"))
    assert r.status_code == 200
    body = r.json()
    assert [lead["id"] for lead in body["leads"]] == [str(lead.pk) for lead in reversed(leads)]
    first = body["leads"][0]
    assert set(first) == LEGACY_FIELDS
    assert first["createdAt"] == "2026-03-03T00:00:00.000Z"
    assert first["qualificationScore"] == 0 and first["status"] == "new"
    assert body["pagination"] == {"page": 1, "limit": 50, "total": 3, "totalPages": 1,
                                  "hasMore": False}


@pytest.mark.parametrize("stored, shown", [
    ("new", "new"), ("qualifying", "qualifying"), ("qualified", "qualified"),
    ("booked", "booked"), ("contacted", "qualifying"), ("nurturing", "nurturing"),
    ("converted", "booked"), ("lost", "disqualified"),
])
def test_statuses_show_in_the_legacy_vocabulary(api, kit, stored, shown):
    make_lead(kit, status=stored)
    r = api.get("/api/leads", headers=kit.auth("read"))
    assert r.json()["leads"][0]["status"] == shown


def test_pagination(api, kit):
    leads = [make_lead(kit, created_at=T0 + timedelta(hours=i)) for i in range(5)]
    r = api.get("/api/leads?limit=2&page=2", headers=kit.auth("read"))
    assert [lead["id"] for lead in r.json()["leads"]] == [str(leads[2].pk), str(leads[1].pk)]
    assert r.json()["pagination"] == {"page": 2, "limit": 2, "total": 5, "totalPages": 3,
                                      "hasMore": True}


def test_search_with_q_over_name_email_company(api, kit):
    ada = make_lead(kit, email="ada@example.com", name="Ada", company="Engines",
                    created_at=T0)
    grace = make_lead(kit, email="grace@engines.example", name="Grace", created_at=T0
                      + timedelta(days=1))
    make_lead(kit, email="linus@example.com", custom_fields={"note": "engines"})
    r = api.get("/api/leads?q=ENGINES", headers=kit.auth("read"))
    # custom fields are not searched on this surface; newest first
    assert [lead["id"] for lead in r.json()["leads"]] == [str(grace.pk), str(ada.pk)]
    assert set(r.json()["leads"][0]) == LEGACY_FIELDS
    assert r.json()["pagination"]["total"] == 2
    r = api.get("/api/leads?q=", headers=kit.auth("read"))
    assert r.json()["pagination"]["total"] == 3


@pytest.mark.parametrize("query, fragment", [
    ("q=a", "q"), ("limit=0", "limit"), ("limit=101", "limit"), ("page=zero", "page"),
])
def test_bad_queries_are_400(api, kit, query, fragment):
    r = api.get(f"/api/leads?{query}", headers=kit.auth("read"))
    assert r.status_code == 400
    assert set(r.json()) == {"error"} and r.json()["error"].startswith(fragment)


def test_list_is_scoped_to_tenant_and_mode(api, kit, stranger):
    mine = make_lead(kit, email="mine@example.com")
    make_lead(stranger, email="theirs@example.com")
    sandbox = make_lead(kit, mode="test", email="sandbox@example.com")
    r = api.get("/api/leads", headers=kit.auth("read"))
    assert [lead["id"] for lead in r.json()["leads"]] == [str(mine.pk)]
    r = api.get("/api/leads", headers=kit.auth("read", "test"))
    assert [lead["id"] for lead in r.json()["leads"]] == [str(sandbox.pk)]
    r = api.get("/api/leads?q=example", headers=stranger.auth("read"))
    assert [lead["email"] for lead in r.json()["leads"]] == ["theirs@example.com"]


def test_the_admin_cookie_sees_live_data(api, kit):
    live = make_lead(kit)
    make_lead(kit, mode="test")
    _login(api, kit)
    r = api.get("/api/leads")
    assert [lead["id"] for lead in r.json()["leads"]] == [str(live.pk)]


def test_needs_credentials(api):
    r = api.get("/api/leads")
    assert r.status_code == 401 and set(r.json()) == {"error"}


@pytest.mark.parametrize("query", ["", "q=engines"])
def test_list_query_count_is_the_same_at_limit_10_and_100(api, kit, query,
                                                          django_assert_max_num_queries):
    for i in range(120):
        make_lead(kit, email=f"p{i}@engines.example")
    api.get("/api/leads", headers=kit.auth("read"))
    # key, total, page; a search whose term is one word of every lead: key, the word count (too
    # few leads for a walk of the search rows), and one query (rows and total).
    bound = 3
    for limit in (10, 100):
        with django_assert_max_num_queries(bound):
            r = api.get(f"/api/leads?limit={limit}&{query}", headers=kit.auth("read"))
        assert len(r.json()["leads"]) == limit


# --- GET /api/leads/:id -----------------------------------------------------------------------

def test_retrieve(api, kit, stranger):
    lead = make_lead(kit, name="Ada", phone="+44 20 7123 4567", custom_fields={"a": 1})
    r = api.get(f"/api/leads/{lead.pk}", headers=kit.auth("read"))
    assert r.status_code == 200
    assert r.json()["lead"]["id"] == str(lead.pk)
    assert r.json()["lead"]["phone"] == "+44 20 7123 4567"
    assert r.json()["lead"]["metadata"] == {"a": 1}
    assert api.get(f"/api/leads/{lead.pk}", headers=stranger.auth("admin")).status_code == 404
    assert api.get(f"/api/leads/{lead.pk}", headers=kit.auth("read", "test")).status_code == 404
    r = api.get(f"/api/leads/lead_{lead.pk.hex}", headers=kit.auth("read"))
    assert r.status_code == 404 and r.json() == {"error": "The requested resource does not exist."}


# --- POST /api/admin/leads --------------------------------------------------------------------

def test_create_with_an_admin_key(api, kit):
    body = {"name": "Ada", "email": "ada@example.com", "phone": "020 7123 4567 ext. 89",
            "company": "Engines", "metadata": {"source": "fair", "nested": {"x": [1]}}}
    r = api.post("/api/admin/leads", json=body, headers=kit.auth("admin", "test"))
    assert r.status_code == 201
    lead = r.json()["lead"]
    assert set(lead) == LEGACY_FIELDS
    row = Lead.objects.get()
    assert lead["id"] == str(row.pk) and row.livemode is False
    assert (lead["name"], lead["email"], lead["phone"], lead["company"]) == (
        "Ada", "ada@example.com", "020 7123 4567 ext. 89", "Engines")
    assert lead["metadata"] == body["metadata"] and lead["status"] == "new"
    event = Event.objects.get()
    assert event.type == "lead.created" and event.livemode is False
    assert v1_data(event)["lead"]["id"] == f"lead_{row.pk.hex}"
    # One record, one identity: the v1 surface sees metadata as customFields.
    r = api.get(f"/api/v1/leads/lead_{row.pk.hex}", headers=kit.auth("read", "test"))
    assert r.json()["customFields"] == body["metadata"]


def test_create_with_the_admin_cookie_writes_live_data(api, kit):
    _login(api, kit)
    r = api.post("/api/admin/leads", json={"name": "Ada", "email": "ada@example.com"})
    assert r.status_code == 201
    assert Lead.objects.get().livemode is True


@pytest.mark.parametrize("scope, status", [("read", 403), ("write", 403), ("admin", 201)])
def test_create_needs_the_admin_scope(api, kit, scope, status):
    r = api.post("/api/admin/leads", json={"name": "A", "email": "a@b.co"},
                 headers=kit.auth(scope))
    assert r.status_code == status


@pytest.mark.parametrize("body, fragment", [
    ({"email": "a@b.co"}, "name"),
    ({"name": "", "email": "a@b.co"}, "name"),
    ({"name": "x" * 201, "email": "a@b.co"}, "name"),
    ({"name": "A"}, "email"),
    ({"name": "A", "email": "nope"}, "email"),
    ({"name": "A", "email": "a@b.co", "phone": "1" * 51}, "phone"),
    ({"name": "A", "email": "a@b.co", "company": "c" * 201}, "company"),
    ({"name": "A", "email": "a@b.co", "metadata": [1]}, "metadata"),
])
def test_create_validation_is_400_with_a_string_error(api, kit, body, fragment):
    r = api.post("/api/admin/leads", json=body, headers=kit.auth("admin"))
    assert r.status_code == 400
    assert set(r.json()) == {"error"} and fragment in r.json()["error"]
    assert not Lead.objects.exists()


def test_create_duplicate_email_is_409_naming_the_uuid(api, kit):
    existing = make_lead(kit, email="ada@example.com")
    r = api.post("/api/admin/leads", json={"name": "A", "email": "ADA@example.com"},
                 headers=kit.auth("admin"))
    assert r.status_code == 409
    assert r.json() == {"error": f"A lead with this email already exists (id {existing.pk})."}


# --- PATCH /api/leads/:id ---------------------------------------------------------------------

def test_patch_profile_status_and_score(api, kit):
    lead = make_lead(kit, name="Ada", email="ada@example.com")
    r = api.patch(f"/api/leads/{lead.pk}", headers=kit.auth("write"), json={
        "name": "Ada L.", "company": "Engines", "phone": "555", "metadata": {"k": "v"},
        "status": "disqualified", "qualificationScore": 15})
    assert r.status_code == 200
    body = r.json()["lead"]
    assert (body["name"], body["company"], body["phone"], body["metadata"]) == (
        "Ada L.", "Engines", "555", {"k": "v"})
    assert body["status"] == "disqualified" and body["qualificationScore"] == 15
    lead.refresh_from_db()
    assert lead.status == "lost" and lead.score == 15
    updated = Event.objects.get(type="lead.updated")
    assert v1_data(updated)["changedFields"] == ["name", "company", "phone", "status", "score",
                                             "customFields"]
    assert v1_data(Event.objects.get(type="lead.score_changed"))["score"] == 15


@pytest.mark.parametrize("word, stored", [
    ("new", "new"), ("qualifying", "qualifying"), ("qualified", "qualified"),
    ("booked", "booked"), ("disqualified", "lost"), ("nurturing", "nurturing"),
])
def test_patch_status_takes_legacy_words(api, kit, word, stored):
    lead = make_lead(kit, status="lost" if word == "new" else "new")
    r = api.patch(f"/api/leads/{lead.pk}", json={"status": word}, headers=kit.auth("write"))
    assert r.status_code == 200 and r.json()["lead"]["status"] == word
    lead.refresh_from_db()
    assert lead.status == stored


def test_patch_qualified_emits_lead_qualified(api, kit):
    lead = make_lead(kit, status="qualifying")
    api.patch(f"/api/leads/{lead.pk}", json={"status": "qualified"}, headers=kit.auth("write"))
    qualified = Event.objects.get(type="lead.qualified")
    assert v1_data(qualified)["lead"]["previousStatus"] == "new"  # qualifying is "new" on v1
    assert qualified.lead_id == lead.pk


def test_patch_the_shown_status_keeps_the_stored_one(api, kit):
    lead = make_lead(kit, status="converted")  # legacy shows "booked"
    api.patch(f"/api/leads/{lead.pk}", json={"status": "booked"}, headers=kit.auth("write"))
    lead.refresh_from_db()
    assert lead.status == "converted"


@pytest.mark.parametrize("body, fragment", [
    ({"status": "converted"}, "status"),
    ({"qualificationScore": 101}, "qualificationScore"),
    ({"qualificationScore": -5}, "qualificationScore"),
    ({"name": ""}, "name"),
    ({"email": "nope"}, "email"),
    ({"phone": "1" * 51}, "phone"),
])
def test_patch_validation_is_400(api, kit, body, fragment):
    lead = make_lead(kit)
    r = api.patch(f"/api/leads/{lead.pk}", json=body, headers=kit.auth("write"))
    assert r.status_code == 400 and fragment in r.json()["error"]


def test_patch_is_scoped_and_needs_write(api, kit, stranger):
    lead = make_lead(kit, name="Ada")
    url = f"/api/leads/{lead.pk}"
    assert api.patch(url, json={"name": "X"}, headers=kit.auth("read")).status_code == 403
    assert api.patch(url, json={"name": "X"}, headers=stranger.auth("admin")).status_code == 404
    r = api.patch(url, json={"name": "X"}, headers=kit.auth("admin", "test"))
    assert r.status_code == 404
    lead.refresh_from_db()
    assert lead.name == "Ada"


def test_patch_duplicate_email_is_409(api, kit):
    other = make_lead(kit, email="grace@example.com")
    lead = make_lead(kit)
    r = api.patch(f"/api/leads/{lead.pk}", json={"email": "grace@example.com"},
                  headers=kit.auth("write"))
    assert r.status_code == 409 and str(other.pk) in r.json()["error"]


def test_no_delete_on_the_legacy_surface(api, kit):
    lead = make_lead(kit)
    r = api.delete(f"/api/leads/{lead.pk}", headers=kit.auth("admin"))
    assert r.status_code == 405
    assert Lead.objects.filter(pk=lead.pk).exists()


def test_patch_reports_every_broken_rule_under_the_legacy_names(api, kit):
    lead = make_lead(kit)
    r = api.patch(f"/api/leads/{lead.pk}", json={"qualificationScore": 101, "phone": "1" * 51,
                                                 "metadata": {"k": "x" * 40_000}},
                  headers=kit.auth("write"))
    assert r.status_code == 400
    message = r.json()["error"]
    assert "qualificationScore" in message and "phone" in message and "metadata" in message
    assert "customFields" not in message and "score:" not in message.replace("Score:", "")
