"""The event log: ``analytics.events.emit`` and the events the lead services write."""

from __future__ import annotations

import uuid

import pytest
from django.db import transaction

from analytics import events
from analytics.models import ACTIVITY_TYPES, Event
from leads.services import lead_create, lead_delete, lead_update
from tests.factories import make_lead


@pytest.fixture
def hook_calls():
    calls: list = []
    events.on_commit_hooks.append(calls.append)
    yield calls
    events.on_commit_hooks.remove(calls.append)


def _emit(kit, **overrides):
    fields = {"tenant": kit.tenant, "livemode": True, "type": "lead.created",
              "description": "x", "data": {"k": 1}}
    return events.emit(**{**fields, **overrides})


def test_emit_writes_one_row_and_calls_hooks_after_commit(kit, hook_calls,
                                                          django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        event = _emit(kit)
        assert hook_calls == []  # not before the commit
    assert hook_calls == [event]
    row = Event.objects.get()
    assert (row.type, row.livemode, row.data, row.tenant_id) == (
        "lead.created", True, {"k": 1}, kit.tenant.pk)
    assert row.occurred_at is not None


def test_no_event_and_no_hook_for_a_rolled_back_write(kit, hook_calls,
                                                      django_capture_on_commit_callbacks):
    with (django_capture_on_commit_callbacks(execute=True) as callbacks,
          pytest.raises(RuntimeError), transaction.atomic()):
        make_lead(kit, email="gone@example.com")
        raise RuntimeError("roll back")
    assert callbacks == []
    assert hook_calls == []
    assert not Event.objects.exists()


def test_a_failing_hook_does_not_stop_the_others(kit, hook_calls,
                                                 django_capture_on_commit_callbacks):
    def broken(event):
        raise ValueError("consumer down")

    events.on_commit_hooks.insert(0, broken)
    try:
        with django_capture_on_commit_callbacks(execute=True):
            event = _emit(kit)
    finally:
        events.on_commit_hooks.remove(broken)
    assert hook_calls == [event]


def test_unknown_types_are_refused(kit):
    with pytest.raises(ValueError):
        _emit(kit, type="lead.exploded")


def test_activity_types_are_the_specifications():
    expected = {"lead.created", "lead.qualified", "lead.score_changed", "conversation.started",
                "conversation.handoff", "conversion.completed", "intent.high_value"}
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
    assert event.data == {
        "lead": {"id": f"lead_{lead.pk.hex}", "email": "ada@example.com", "name": "Ada",
                 "company": "Analytical", "status": "new", "score": 0, "source": "chat",
                 "createdAt": event.data["lead"]["createdAt"]},
        "conversationId": f"conv_{conversation}",
    }
    assert event.data["lead"]["createdAt"].endswith("Z")
    assert "ada@example.com" in event.description


def test_lead_created_in_a_status_also_emits_that_status(kit):
    lead = make_lead(kit, status="qualified")
    assert [e.type for e in _events()] == ["lead.created", "lead.qualified"]
    qualified = _events(type="lead.qualified")[0]
    assert qualified.data["lead"]["previousStatus"] is None
    assert qualified.lead_id == lead.pk


def test_lead_updated_names_the_changed_fields_and_their_previous_values(kit):
    lead = make_lead(kit, name="Ada", tags=["x"])
    Event.objects.all().delete()
    lead_update(lead=lead, changes={"name": "Ada L.", "tags": ["x"], "company": "Engines"})
    [event] = _events()
    assert event.type == "lead.updated"
    assert event.lead_id == lead.pk and event.livemode is True
    assert event.data["changedFields"] == ["name", "company"]
    assert event.data["previousValues"] == {"name": "Ada", "company": None}
    assert event.data["lead"]["name"] == "Ada L."
    assert event.data["lead"]["id"] == f"lead_{lead.pk.hex}"


def test_an_update_that_changes_nothing_emits_nothing(kit):
    lead = make_lead(kit, name="Ada")
    Event.objects.all().delete()
    lead_update(lead=lead, changes={"name": "Ada"})
    assert _events() == []


def test_lead_qualified_carries_previous_status_and_reason(kit):
    lead = make_lead(kit, status="nurturing")
    Event.objects.all().delete()
    lead_update(lead=lead, changes={"status": "qualified"},
                qualification_reason="Budget confirmed")
    updated, qualified = _events()
    assert updated.type == "lead.updated"
    assert updated.data["previousValues"] == {"status": "contacted"}
    assert qualified.type == "lead.qualified"
    assert qualified.data == {
        "lead": {"id": f"lead_{lead.pk.hex}", "email": lead.email, "name": None,
                 "company": None, "status": "qualified", "score": 0,
                 "previousStatus": "contacted"},
        "qualificationReason": "Budget confirmed",
    }


def test_moving_between_statuses_v1_shows_alike_is_no_qualification(kit):
    lead = make_lead(kit, status="qualified")
    Event.objects.all().delete()
    lead_update(lead=lead, changes={"status": "booked"})
    # booked and qualified are both "qualified" on v1: nothing the v1 surface can see changed.
    assert _events() == []


def test_lead_converted_and_conversion_completed(kit):
    lead = make_lead(kit, status="qualified")
    lead_update(lead=lead, changes={"score": 55})
    Event.objects.all().delete()
    lead_update(lead=lead, changes={"status": "converted"})
    types = [e.type for e in _events()]
    assert sorted(types) == ["conversion.completed", "lead.converted", "lead.updated"]
    converted = _events(type="lead.converted")[0]
    assert converted.data["lead"]["previousStatus"] == "qualified"
    assert converted.data["lead"]["status"] == "converted"
    completed = _events(type="conversion.completed")[0]
    assert completed.data == {"leadId": f"lead_{lead.pk.hex}", "previousStatus": "qualified",
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
        assert changed[0].data == {"leadId": f"lead_{lead.pk.hex}", "previousScore": before,
                                   "score": after, "change": after - before}


def test_lead_deleted_survives_the_lead(kit):
    lead = make_lead(kit, mode="test", name="Ada")
    pk = lead.pk
    lead_delete(lead=lead)
    created, deleted = _events()
    assert deleted.type == "lead.deleted"
    assert deleted.livemode is False
    assert deleted.lead_id is None and created.lead_id is None  # SET_NULL
    assert deleted.data["lead"]["id"] == f"lead_{pk.hex}"
    assert deleted.data["lead"]["name"] == "Ada"
    assert created.data["lead"]["id"] == f"lead_{pk.hex}"
