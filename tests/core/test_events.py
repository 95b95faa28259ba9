"""The event pipeline (``core.events``): ``emit``, its subscribers, and the events the lead
services write, read through the payloads each surface renders from their facts."""

from __future__ import annotations

import uuid

import pytest
from django.db import transaction

from analytics.models import ACTIVITY_TYPES
from core import events
from core.models import Event
from leads.services import lead_create, lead_delete, lead_update
from tests.events import legacy_data, v1_data
from tests.factories import make_lead


@pytest.fixture
def subscribers(monkeypatch):
    """The apps' subscribers set aside for a recording one of lead.created, in the transaction
    and after the commit."""
    monkeypatch.setattr(events, "_in_transaction", {})
    monkeypatch.setattr(events, "_after_commit", {})
    calls: dict[str, list] = {"in_transaction": [], "after_commit": []}
    events.subscribe(calls["in_transaction"].append, types=["lead.created"])
    events.subscribe(calls["after_commit"].append, types=["lead.created"], after_commit=True)
    return calls


def _emit(kit, **overrides):
    fields = {"tenant_id": kit.tenant.pk, "livemode": True, "description": "x",
              "facts": {"k": 1}}
    return events.emit(overrides.pop("type", "lead.created"), **{**fields, **overrides})


def test_emit_writes_one_row_runs_its_subscribers_then_the_after_commit_ones(
        kit, subscribers, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        event = _emit(kit)
        assert subscribers["in_transaction"] == [event]  # at once, inside the transaction
        assert subscribers["after_commit"] == []  # not before the commit
    assert subscribers["after_commit"] == [event]
    row = Event.objects.get()
    assert (row.type, row.livemode, row.facts, row.tenant_id) == (
        "lead.created", True, {"k": 1}, kit.tenant.pk)
    assert row.occurred_at is not None


def test_no_event_and_no_after_commit_call_for_a_rolled_back_write(
        kit, subscribers, django_capture_on_commit_callbacks):
    with (django_capture_on_commit_callbacks(execute=True) as callbacks,
          pytest.raises(RuntimeError), transaction.atomic()):
        make_lead(kit, email="gone@example.com")
        raise RuntimeError("roll back")
    assert callbacks == []
    assert len(subscribers["in_transaction"]) == 1  # it ran, and its writes rolled back too
    assert subscribers["after_commit"] == []
    assert not Event.objects.exists()


def test_a_failing_after_commit_subscriber_does_not_stop_the_others(
        kit, subscribers, django_capture_on_commit_callbacks):
    def broken(event):
        raise ValueError("consumer down")

    events._after_commit["lead.created"].insert(0, broken)
    with django_capture_on_commit_callbacks(execute=True):
        event = _emit(kit)
    assert subscribers["after_commit"] == [event]


def test_unknown_types_are_refused(kit):
    with pytest.raises(ValueError):
        _emit(kit, type="lead.exploded")


def test_emit_outside_a_transaction_is_refused(kit, subscribers):
    from django.db import connection

    # The test runs inside pytest-django's transaction; what services must never emit on is a
    # connection in autocommit, which this stands for.
    in_atomic, connection.in_atomic_block = connection.in_atomic_block, False
    try:
        with pytest.raises(RuntimeError, match="outside a transaction"):
            _emit(kit)
    finally:
        connection.in_atomic_block = in_atomic


def test_every_type_a_surface_delivers_has_its_payload():
    from webhooks.envelopes import LEGACY_EVENT_TYPES, V1_EVENT_TYPES

    assert set(V1_EVENT_TYPES) | ACTIVITY_TYPES <= events.shown_on("v1")
    assert set(LEGACY_EVENT_TYPES) <= events.shown_on("legacy")


def test_activity_types_are_the_specifications_the_meetings_and_the_erasures():
    expected = {"lead.created", "lead.qualified", "lead.score_changed", "conversation.started",
                "conversation.handoff", "conversion.completed", "intent.high_value",
                "meeting.booked", "meeting.rescheduled", "meeting.cancelled",
                "data.erased", "data.expired"}
    assert expected == ACTIVITY_TYPES


# --- the lead services' events, row by row --------------------------------------------------

def _events(**filters):
    return list(Event.objects.filter(**filters).order_by("occurred_at", "type"))


def test_lead_created(kit):
    conversation = "0" * 31 + "1"
    lead = lead_create(tenant=kit.tenant, livemode=False, email="ada@example.com", name="Ada",
                       company="Analytical", source="chat",
                       conversation_id=uuid.UUID(conversation))
    [event] = _events()
    assert event.type == "lead.created"
    assert event.lead_id == lead.pk
    assert event.livemode is False
    assert event.conversation_id == uuid.UUID(conversation)
    data = v1_data(event)
    assert data == {
        "lead": {"id": f"lead_{lead.pk.hex}", "email": "ada@example.com", "name": "Ada",
                 "company": "Analytical", "status": "new", "score": 0, "source": "chat",
                 "createdAt": data["lead"]["createdAt"]},
        "conversationId": f"conv_{conversation}",
    }
    assert data["lead"]["createdAt"].endswith("Z")
    # The facts are the stored row, not a surface's shape.
    assert event.facts["lead"]["id"] == str(lead.pk)
    assert event.facts["lead"]["custom_fields"] == {}
    assert "ada@example.com" in event.description


def test_lead_created_in_a_status_also_emits_that_status(kit):
    lead = make_lead(kit, status="qualified")
    assert [e.type for e in _events()] == ["lead.created", "lead.qualified"]
    qualified = _events(type="lead.qualified")[0]
    assert v1_data(qualified)["lead"]["previousStatus"] is None
    assert qualified.lead_id == lead.pk


def test_lead_updated_names_the_changed_fields_and_their_previous_values(kit):
    lead = make_lead(kit, name="Ada", tags=["x"])
    Event.objects.all().delete()
    lead_update(lead=lead, changes={"name": "Ada L.", "tags": ["x"], "company": "Engines"})
    [event] = _events()
    assert event.type == "lead.updated"
    assert event.lead_id == lead.pk and event.livemode is True
    assert v1_data(event)["changedFields"] == ["name", "company"]
    assert v1_data(event)["previousValues"] == {"name": "Ada", "company": None}
    assert v1_data(event)["lead"]["name"] == "Ada L."
    assert v1_data(event)["lead"]["id"] == f"lead_{lead.pk.hex}"


def test_an_update_that_changes_nothing_is_recorded_but_shown_nowhere(kit):
    lead = make_lead(kit, name="Ada")
    Event.objects.all().delete()
    lead_update(lead=lead, changes={"name": "Ada"})
    [event] = _events()
    # The write moved updatedAt (the count tables follow it); no surface has a change to show.
    assert event.type == "lead.updated" and event.facts["previous"].keys() == {
        "updated_at", "last_active_at"}
    assert v1_data(event) is None and legacy_data(event) is None


def test_lead_qualified_carries_previous_status_and_reason(kit):
    lead = make_lead(kit, status="nurturing")
    Event.objects.all().delete()
    lead_update(lead=lead, changes={"status": "qualified"},
                qualification_reason="Budget confirmed")
    updated, qualified = _events()
    assert updated.type == "lead.updated"
    assert v1_data(updated)["previousValues"] == {"status": "contacted"}
    assert qualified.type == "lead.qualified"
    assert v1_data(qualified) == {
        "lead": {"id": f"lead_{lead.pk.hex}", "email": lead.email, "name": None,
                 "company": None, "status": "qualified", "score": 0,
                 "previousStatus": "contacted"},
        "qualificationReason": "Budget confirmed",
    }


def test_moving_between_statuses_v1_shows_alike_is_no_qualification(kit):
    lead = make_lead(kit, status="qualified")
    Event.objects.all().delete()
    lead_update(lead=lead, changes={"status": "booked"})
    # booked and qualified are both "qualified" on v1: nothing the v1 surface can see changed,
    # and the lead did not become qualified again. The stored move is recorded.
    [updated] = _events()
    assert updated.type == "lead.updated"
    assert updated.facts["previous"]["status"] == "qualified"
    assert updated.facts["lead"]["status"] == "booked"
    assert v1_data(updated) is None


def test_lead_converted_and_conversion_completed(kit):
    lead = make_lead(kit, status="qualified")
    lead_update(lead=lead, changes={"score": 55})
    Event.objects.all().delete()
    lead_update(lead=lead, changes={"status": "converted"})
    types = [e.type for e in _events()]
    assert sorted(types) == ["conversion.completed", "lead.converted", "lead.updated"]
    converted = _events(type="lead.converted")[0]
    assert v1_data(converted)["lead"]["previousStatus"] == "qualified"
    assert v1_data(converted)["lead"]["status"] == "converted"
    completed = _events(type="conversion.completed")[0]
    assert v1_data(completed) == {"leadId": f"lead_{lead.pk.hex}", "previousStatus": "qualified",
                              "score": 55}
    assert completed.lead_id == lead.pk


@pytest.mark.parametrize("before, after, fires", [
    (0, 9, False), (0, 10, True), (50, 41, False), (50, 40, True), (90, 100, True),
])
def test_score_changed_on_a_move_of_ten_or_more(kit, before, after, fires):
    lead = make_lead(kit)
    if before:
        lead_update(lead=lead, changes={"score": before})
    Event.objects.all().delete()
    lead_update(lead=lead, changes={"score": after})
    changed = _events(type="lead.score_changed")
    assert bool(changed) is fires
    if fires:
        assert v1_data(changed[0]) == {"leadId": f"lead_{lead.pk.hex}", "previousScore": before,
                                   "score": after, "change": after - before}


def test_lead_deleted_survives_the_lead(kit):
    lead = make_lead(kit, mode="test", name="Ada")
    pk = lead.pk
    lead_delete(lead=lead)
    created, deleted = _events()
    assert deleted.type == "lead.deleted"
    assert deleted.livemode is False
    assert deleted.lead_id is None and created.lead_id is None  # SET_NULL
    assert v1_data(deleted)["lead"]["id"] == f"lead_{pk.hex}"
    assert v1_data(deleted)["lead"]["name"] == "Ada"
    assert v1_data(created)["lead"]["id"] == f"lead_{pk.hex}"
