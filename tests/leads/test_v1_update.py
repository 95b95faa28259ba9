"""PATCH /api/v1/leads/{id}."""

from __future__ import annotations

import pytest

from core.models import Event
from leads.models import Lead
from tests.events import v1_data
from tests.factories import UserFactory, make_lead


@pytest.fixture
def lead(kit):
    return make_lead(kit, email="ada@example.com", name="Ada", company="Engines",
                     tags=["a", "b"], custom_fields={"plan": "pro", "seats": 5})


def _patch(api, kit, lead, body, scope="write", mode="live"):
    return api.patch(f"/api/v1/leads/lead_{lead.pk.hex}", json=body, headers=kit.auth(scope, mode))


def test_only_present_fields_change(api, kit, lead):
    before = api.get(f"/api/v1/leads/lead_{lead.pk.hex}", headers=kit.auth("read")).json()
    r = _patch(api, kit, lead, {"title": "Countess"})
    assert r.status_code == 200
    after = r.json()
    assert after["title"] == "Countess"
    for key in ("email", "name", "company", "tags", "customFields", "status", "score", "source",
                "createdAt", "firstSeenAt"):
        assert after[key] == before[key], key
    assert after["updatedAt"] > before["updatedAt"]
    assert after["lastActiveAt"] > before["lastActiveAt"]


def test_timestamps_refresh_even_when_nothing_differs(api, kit, lead):
    before = api.get(f"/api/v1/leads/lead_{lead.pk.hex}", headers=kit.auth("read")).json()
    r = _patch(api, kit, lead, {})
    assert r.status_code == 200
    assert r.json()["updatedAt"] > before["updatedAt"]
    # Recorded (the write moved updatedAt), but no surface has a change to show or deliver.
    [updated] = Event.objects.filter(type="lead.updated")
    assert v1_data(updated) is None


def test_tags_and_custom_fields_are_replaced_not_merged(api, kit, lead):
    r = _patch(api, kit, lead, {"tags": ["c"], "customFields": {"plan": "team"}})
    assert r.json()["tags"] == ["c"]
    assert r.json()["customFields"] == {"plan": "team"}
    r = _patch(api, kit, lead, {"tags": None, "customFields": None})
    assert r.json()["tags"] == [] and r.json()["customFields"] == {}


def test_null_clears_optional_strings(api, kit, lead):
    r = _patch(api, kit, lead, {"company": None, "name": ""})
    assert r.json()["company"] is None and r.json()["name"] is None


def test_every_writable_field(api, kit, lead):
    rep = UserFactory(tenant=kit.tenant)
    body = {"email": "countess@example.com", "name": "Augusta Ada King", "company": "Babbage",
            "title": "Countess", "phone": "+442071234567", "status": "contacted",
            "source": "import", "tags": ["math"], "customFields": {"x": [1, 2]}, "score": 42,
            "assignedTo": f"user_{rep.pk.hex}"}
    r = _patch(api, kit, lead, body)
    assert r.status_code == 200, r.json()
    for key, value in body.items():
        assert r.json()[key] == value, key
    r = _patch(api, kit, lead, {"assignedTo": None})
    assert r.json()["assignedTo"] is None


def test_events_row_by_row(api, kit, lead):
    Event.objects.all().delete()
    r = _patch(api, kit, lead, {"status": "qualified", "score": 35, "tags": ["a", "b"]})
    assert r.status_code == 200
    rows = {e.type: e for e in Event.objects.all()}
    assert set(rows) == {"lead.updated", "lead.qualified", "lead.score_changed"}
    assert all(e.lead_id == lead.pk and e.livemode for e in rows.values())
    updated = v1_data(rows["lead.updated"])
    assert updated["changedFields"] == ["status", "score"]  # tags were sent unchanged
    assert updated["previousValues"] == {"status": "new", "score": 0}
    assert updated["lead"] == {k: v for k, v in r.json().items()
                               if k not in ("conversationCount", "lastIntent")}
    assert v1_data(rows["lead.qualified"])["lead"]["previousStatus"] == "new"
    assert v1_data(rows["lead.score_changed"])["change"] == 35

    Event.objects.all().delete()
    _patch(api, kit, lead, {"status": "converted"})
    assert sorted(Event.objects.values_list("type", flat=True)) == [
        "conversion.completed", "lead.converted", "lead.updated"]


def test_writing_the_shown_status_keeps_the_stored_one(api, kit):
    booked = make_lead(kit, status="booked")
    r = _patch(api, kit, booked, {"status": "qualified"})
    assert r.json()["status"] == "qualified"
    booked.refresh_from_db()
    assert booked.status == "booked"  # the legacy surface still sees the meeting


def test_email_change_to_a_taken_one_is_409(api, kit, lead):
    other = make_lead(kit, email="grace@example.com")
    r = _patch(api, kit, lead, {"email": "GRACE@example.com"})
    assert r.status_code == 409
    assert r.json()["existingLeadId"] == f"lead_{other.pk.hex}"
    r = _patch(api, kit, lead, {"email": "ADA@example.com"})  # its own, in another case
    assert r.status_code == 200 and r.json()["email"] == "ADA@example.com"


@pytest.mark.parametrize("body, field, code", [
    ({"email": None}, "email", "required"),
    ({"email": "nope"}, "email", "invalid_format"),
    ({"phone": "0207"}, "phone", "invalid_format"),
    ({"status": "disqualified"}, "status", "invalid_enum"),
    ({"score": 101}, "score", "out_of_range"),
    ({"score": -1}, "score", "out_of_range"),
    ({"score": "high"}, "score", "invalid_format"),
    ({"tags": [1, {}]}, "tags[1]", "invalid_format"),
    ({"customFields": "x"}, "customFields", "invalid_format"),
])
def test_invalid_bodies_are_400_with_field_details(api, kit, lead, body, field, code):
    r = _patch(api, kit, lead, body)
    assert r.status_code == 400, r.json()
    details = [{"field": d["field"], "code": d["code"]} for d in r.json()["error"]["details"]]
    assert {"field": field, "code": code} in details


def test_assignee_of_another_tenant_is_422(api, kit, stranger, lead):
    theirs = UserFactory(tenant=stranger.tenant)
    r = _patch(api, kit, lead, {"assignedTo": f"user_{theirs.pk.hex}", "name": "X"})
    assert r.status_code == 422
    assert Lead.objects.get(pk=lead.pk).name == "Ada"  # nothing applied


def test_stranger_and_other_mode_get_404(api, kit, stranger, lead):
    r = _patch(api, stranger, lead, {"name": "Mine now"}, scope="admin")
    assert r.status_code == 404 and r.json()["error"]["code"] == "not_found"
    r = _patch(api, kit, lead, {"name": "Sandbox"}, mode="test")
    assert r.status_code == 404
    test_lead = make_lead(kit, mode="test")
    assert _patch(api, kit, test_lead, {"name": "Sandbox"}, mode="test").status_code == 200
    assert _patch(api, kit, test_lead, {"name": "Live"}).status_code == 404
    assert Lead.objects.get(pk=lead.pk).name == "Ada"


def test_read_key_cannot_patch(api, kit, lead):
    r = _patch(api, kit, lead, {"name": "X"}, scope="read")
    assert r.status_code == 403 and r.json()["error"]["code"] == "forbidden"


def test_query_count(api, kit, lead, django_assert_max_num_queries):
    _patch(api, kit, lead, {})
    # key, lead, lock, update, its search row (the old words, the upsert, the word counts),
    # lead.updated, the counts (one upsert per table whose rows move:
    # by creation day, by update day, by score), lead.qualified, analytics journey read +
    # insert + rollup, conversation count, and the test transaction's savepoint + release
    with django_assert_max_num_queries(18):
        r = _patch(api, kit, lead, {"status": "qualified", "name": "Ada L."})
    assert r.status_code == 200
