"""core 0003: event rows in the old shape (``data`` as the v1 envelope's ``data``, the legacy
shape for meeting.booked) rewritten as facts, so that each surface renders them as before.

A scenario through today's services writes every type; the test then rewrites each of its
events in the old shape, built from that moment's facts exactly as the old code built it
(``git show ef8303a:leads/services.py``, ``conversations/services.py``, the presenters and
``webhooks/envelopes.py``), as a database from before the upgrade holds it, adds rows that
today's services write after the upgrade, and runs the migration's forward function (it takes
the app registry and a schema editor, which it uses only for the connection's alias).
"""

from __future__ import annotations

import importlib
import json
import uuid
from typing import Any, NamedTuple

import pytest
from django.apps import apps as django_apps
from django.db import connection

from conversations.models import Conversation
from conversations.services import (
    conversation_assign,
    conversation_close,
    conversation_reply_as_human,
)
from core.events import payload
from core.ids import encode
from core.models import Event
from core.timestamps import format_timestamp, parse_timestamp
from leads.models import Lead
from leads.services import lead_delete, lead_update
from leads.vocabulary import LEGACY_OF_STORED, legacy_status, stored_from_v1, v1_status
from tests.chat_helpers import chat, take
from tests.factories import make_available, make_lead

migration = importlib.import_module("core.migrations.0003_event_facts_from_old_data")

OLD_TYPES = frozenset(migration.CONVERTERS)
LEGACY_TYPES = frozenset({"lead.created", "lead.qualified", "meeting.booked"})


def migrate() -> None:
    migration.forward(django_apps, connection.schema_editor())


# --- the old code's data (ef8303a), from the facts of the same moment ------------------------

V1_FIELD = {
    "email": "email", "name": "name", "company": "company", "title": "title", "phone": "phone",
    "status": "status", "score": "score", "source": "source", "tags": "tags",
    "custom_fields": "customFields", "assigned_to_id": "assignedTo", "last_intent": "lastIntent",
}
TEXT = {"name", "company", "title", "phone", "last_intent"}


def _ms(stored: str | None) -> str | None:
    return format_timestamp(parse_timestamp(stored))


def _id(prefix: str, value: str | None) -> str | None:
    return encode(prefix, None if value is None else uuid.UUID(value))


def _v1_value(column: str, lead: dict[str, Any]) -> Any:
    value = lead[column]
    if column == "status":
        return v1_status(value)
    if column == "assigned_to_id":
        return _id("user", value)
    return (value or None) if column in TEXT else value


def _v1_lead(f: dict[str, Any]) -> dict[str, Any]:
    """presenters.v1_lead."""
    return {
        "id": _id("lead", f["id"]), "email": f["email"], "name": f["name"] or None,
        "company": f["company"] or None, "title": f["title"] or None,
        "phone": f["phone"] or None, "status": v1_status(f["status"]), "score": f["score"],
        "source": f["source"], "tags": f["tags"], "customFields": f["custom_fields"],
        "assignedTo": _id("user", f["assigned_to_id"]), "firstSeenAt": _ms(f["first_seen_at"]),
        "lastActiveAt": _ms(f["last_active_at"]), "createdAt": _ms(f["created_at"]),
        "updatedAt": _ms(f["updated_at"]),
    }


def _summary(f: dict[str, Any], previous: str | None) -> dict[str, Any]:
    """presenters.event_lead_summary."""
    return {"id": _id("lead", f["id"]), "email": f["email"], "name": f["name"] or None,
            "company": f["company"] or None, "status": v1_status(f["status"]), "score": f["score"],
            "previousStatus": None if previous is None else v1_status(previous)}


def _brief(c: dict[str, Any]) -> dict[str, Any]:
    """presenters.v1_conversation_brief."""
    return {"id": _id("conv", c["id"]), "leadId": _id("lead", c["lead_id"]),
            "visitorId": c["visitor_id"], "channel": c["channel"], "status": c["status"],
            "messageCount": c["message_count"], "subject": c["subject"] or None,
            "summary": c["summary"] or None, "startedAt": _ms(c["started_at"]),
            "lastMessageAt": _ms(c["last_message_at"])}


def _old_lead_created(event: Event) -> dict[str, Any]:
    f = event.facts["lead"]
    return {"lead": {"id": _id("lead", f["id"]), "email": f["email"], "name": f["name"] or None,
                     "company": f["company"] or None, "status": v1_status(f["status"]),
                     "score": f["score"], "source": f["source"], "createdAt": _ms(f["created_at"])},
            "conversationId": encode("conv", event.conversation_id)}


def _old_lead_updated(event: Event) -> dict[str, Any] | None:
    after, previous = event.facts["lead"], event.facts["previous"]
    before = {**after, **previous}
    visible = [c for c in V1_FIELD if c in previous and _v1_value(c, before) != _v1_value(c, after)]
    if not visible:
        return None  # the old code emitted lead.updated only for a change v1 shows
    return {"lead": _v1_lead(after), "changedFields": [V1_FIELD[c] for c in visible],
            "previousValues": {V1_FIELD[c]: _v1_value(c, before) for c in visible}}


def _old_lead_qualified(event: Event) -> dict[str, Any]:
    return {"lead": _summary(event.facts["lead"], event.facts["previous_status"]),
            "qualificationReason": event.facts["reason"]}


def _old_lead_converted(event: Event) -> dict[str, Any]:
    return {"lead": _summary(event.facts["lead"], event.facts["previous_status"])}


def _old_conversion_completed(event: Event) -> dict[str, Any]:
    summary = _summary(event.facts["lead"], event.facts["previous_status"])
    return {"leadId": summary["id"], "previousStatus": summary["previousStatus"],
            "score": summary["score"]}


def _old_score_changed(event: Event) -> dict[str, Any]:
    f = event.facts
    return {"leadId": _id("lead", f["lead_id"]), "previousScore": f["previous_score"],
            "score": f["score"], "change": f["score"] - f["previous_score"]}


def _old_lead_deleted(event: Event) -> dict[str, Any]:
    return {"lead": _v1_lead(event.facts["lead"])}


def _old_conversation_started(event: Event) -> dict[str, Any]:
    return {"conversation": _brief(event.facts["conversation"])}


def _old_conversation_completed(event: Event) -> dict[str, Any]:
    return {"conversation": _brief(event.facts["conversation"]), "reason": event.facts["reason"]}


def _old_handoff(event: Event) -> dict[str, Any]:
    c = event.facts["conversation"]
    return {"conversation": {"id": _id("conv", c["id"]), "leadId": _id("lead", c["lead_id"]),
                             "messageCount": c["message_count"], "status": c["status"],
                             "assignedTo": _id("user", c["assigned_to_id"])},
            "handoff": event.facts["handoff"]}


def _old_message(event: Event) -> dict[str, Any]:
    m = event.facts["message"]
    message: dict[str, Any] = {"id": _id("msg", m["id"]), "role": m["role"],
                               "content": m["content"]}
    if m["role"] == "assistant":
        message["intent"] = m["intent"] or None
        message["confidence"] = m["confidence"]
    message["createdAt"] = _ms(m["created_at"])
    data = {"conversationId": encode("conv", event.conversation_id), "message": message}
    if m["author_id"]:
        data["author"] = _id("user", m["author_id"])
    return data


def _old_high_value(event: Event) -> dict[str, Any]:
    f = event.facts
    return {"leadId": _id("lead", f["lead_id"]), "conversationId": encode("conv", event.conversation_id),
            "intent": f["intent"], "confidence": f["confidence"], "signals": f["signals"],
            "estimatedDealSize": f["estimated_deal_size"]}


def _old_meeting_booked(event: Event) -> dict[str, Any]:
    """presenters.meeting_booked_data: the legacy shape, the lead's stored name and company."""
    lead, meeting = event.facts["lead"], event.facts["meeting"]
    return {
        "lead": {"id": lead["id"], "name": lead["name"], "email": lead["email"],
                 "company": lead["company"], "status": LEGACY_OF_STORED[lead["status"]],
                 "qualificationScore": lead["score"]},
        "meeting": {"id": meeting["id"], "startsAt": _ms(meeting["starts_at"]),
                    "endsAt": _ms(meeting["ends_at"]), "timezone": meeting["time_zone"],
                    "conversationId": meeting["conversation_id"]},
    }


OLD_DATA = {
    "lead.created": _old_lead_created, "lead.updated": _old_lead_updated,
    "lead.qualified": _old_lead_qualified, "lead.converted": _old_lead_converted,
    "conversion.completed": _old_conversion_completed,
    "lead.score_changed": _old_score_changed, "lead.deleted": _old_lead_deleted,
    "conversation.started": _old_conversation_started,
    "conversation.completed": _old_conversation_completed,
    "conversation.handoff": _old_handoff, "message.received": _old_message,
    "message.sent": _old_message, "intent.high_value": _old_high_value,
    "meeting.booked": _old_meeting_booked,
}


def _legacy_word(word: str | None) -> str | None:
    return None if word is None else legacy_status(stored_from_v1(word))


def _legacy_lead(lead: dict[str, Any]) -> dict[str, Any]:
    return {"id": str(uuid.UUID(lead["id"][5:])), "name": lead.get("name"),
            "email": lead.get("email"), "company": lead.get("company"),
            "status": _legacy_word(lead.get("status")), "qualificationScore": lead.get("score")}


def old_legacy_data(type: str, data: dict[str, Any]) -> dict[str, Any]:
    """webhooks.envelopes.legacy_data of ef8303a: from the row's v1 data."""
    if type == "lead.created":
        return _legacy_lead(data["lead"])
    if type == "lead.qualified":
        return {**_legacy_lead(data["lead"]),
                "previousStatus": _legacy_word(data["lead"]["previousStatus"]),
                "qualificationReason": data["qualificationReason"]}
    return dict(data)


# --- the scenario -----------------------------------------------------------------------------

@pytest.fixture
def scenario(api, kit, rep):
    """Every type the old code wrote, through today's services."""
    make_available(rep)  # the old rotation gave every handoff to someone: so does routing here
    ada = make_lead(kit, name="Ada", title="CTO", phone="+4915112345678", tags=["vip"],
                    custom_fields={"plan": "pro"}, assigned_to_id=rep.pk)
    lead_update(lead=ada, changes={"status": "qualified", "score": 40},
                qualification_reason="Budget confirmed")
    lead_update(lead=ada, changes={"status": "converted", "company": "Acme"})
    make_lead(kit, email="bob@example.com", status="booked")  # v1 shows it qualified
    lead_delete(lead=make_lead(kit, email="gone@example.com", company="Gone Ltd"))
    sid = chat(api, kit, "I'm the CEO, budget approved, we want to buy this month, "
                         "ceo@bigco.com", visitor="buyer").json()["sessionId"]
    chat(api, kit, "We are ready to purchase for 200 users", session=sid, visitor="buyer")
    helped = chat(api, kit, "I want to talk to a human", visitor="helpme").json()["sessionId"]
    taken = conversation_assign(conversation=Conversation.objects.get(pk=helped[5:]), user=rep)
    conversation_reply_as_human(conversation=taken, author=rep, content="Hello, I'm here.")
    conversation_close(conversation=taken)
    booked = chat(api, kit, "Hi, I'm Sam, sam@umbrella.io", visitor="sam").json()["sessionId"]
    slots = [a for a in chat(api, kit, "Can we book a demo?", session=booked, visitor="sam")
             .json()["suggestedActions"] if a["type"] == "reply"]
    take(api, kit, slots[0], session=booked, visitor="sam")


class Old(NamedTuple):
    type: str
    facts: dict[str, Any]  # what today's services wrote
    built: dict[str, Any]  # what the old code wrote, as it built it
    data: dict[str, Any]  # the same, as the database gives it back (PostgreSQL orders its keys)


@pytest.fixture
def old_rows(scenario, kit) -> dict[uuid.UUID, Old]:
    """A database from before the upgrade: each event of the scenario that the old code wrote,
    rewritten in place as the old code wrote it (a lead.updated that v1 could not see was never
    written)."""
    olds = {}
    for event in Event.objects.filter(tenant=kit.tenant, type__in=OLD_TYPES):
        data = OLD_DATA[event.type](event)
        if data is None:
            event.delete()
            continue
        if event.type != "meeting.booked":
            # The redesign shows each event as the old code wrote it: the builders above agree.
            assert payload(event, "v1") == data, event.type
        Event.objects.filter(pk=event.pk).update(facts=data)
        olds[event.pk] = Old(event.type, event.facts, data, Event.objects.get(pk=event.pk).facts)
    assert {old.type for old in olds.values()} == OLD_TYPES
    return olds


@pytest.fixture
def new_rows(old_rows, api, kit) -> dict[uuid.UUID, Any]:
    """After the upgrade, today's services write facts: their rows, and the service's own
    events of the scenario."""
    lead = make_lead(kit, email="after@example.com", tags=["new"])
    lead_update(lead=lead, changes={"status": "qualified", "score": 30})
    chat(api, kit, "I want to talk to a human, after@example.com", visitor="after")
    new = {pk: facts for pk, facts in _facts().items() if pk not in old_rows}
    assert {"lead.created", "lead.qualified", "conversation.handoff", "message.sent",
            "conversation.assigned"} <= set(Event.objects.filter(pk__in=new)
                                             .values_list("type", flat=True))
    return new


def _facts() -> dict[uuid.UUID, Any]:
    return dict(Event.objects.values_list("pk", "facts"))


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _assert_rendered_as_before(old_rows: dict[uuid.UUID, Old]) -> None:
    for pk, old in old_rows.items():
        converted = Event.objects.get(pk=pk)
        assert converted.facts != old.data, old.type
        shown = {"v1": None if old.type == "meeting.booked" else old}
        if old.type in LEGACY_TYPES:
            shown["legacy"] = old
        for surface in ("v1", "legacy"):
            rendered = payload(converted, surface)
            if old.type == "meeting.booked" and surface == "v1":
                # v1 shows meetings since issue 16: an old booking renders from its facts, with
                # what those facts never held (host, sequence) as none and 0.
                assert rendered["meeting"]["id"] == "mtg_" + uuid.UUID(
                    converted.facts["meeting"]["id"]).hex
                assert rendered["meeting"]["hostId"] is None
                assert rendered["meeting"]["sequence"] == 0
                continue
            if shown.get(surface) is None:
                assert rendered is None, (old.type, surface)
                continue
            expected, built = (old.data, old.built) if surface == "v1" else (
                old_legacy_data(old.type, old.data), old_legacy_data(old.type, old.built))
            assert rendered == expected, (old.type, surface)
            # Its keys in the order the old code wrote them, too.
            assert _dumps(rendered) == _dumps(built), (old.type, surface)


def _ms_precision(stored: str) -> str:
    moment = parse_timestamp(stored)
    return moment.replace(microsecond=moment.microsecond // 1000 * 1000).isoformat()


# --- tests --------------------------------------------------------------------------------------

def test_every_old_row_renders_on_each_surface_as_the_old_code_sent_it(old_rows, new_rows):
    migrate()
    _assert_rendered_as_before(old_rows)
    after = _facts()
    assert {pk: after[pk] for pk in new_rows} == new_rows  # rows in facts are left alone


def test_batches_and_lookups_of_any_size(old_rows, new_rows, monkeypatch):
    monkeypatch.setattr(migration, "BATCH", 3)
    monkeypatch.setattr(migration, "LOOKUP_CHUNK", 2)
    migrate()
    _assert_rendered_as_before(old_rows)
    after = _facts()
    assert {pk: after[pk] for pk in new_rows} == new_rows


def test_a_second_run_changes_nothing(old_rows, new_rows):
    migrate()
    once = _facts()
    migrate()
    assert _facts() == once
    events = list(Event.objects.filter(type__in=OLD_TYPES))
    assert migration.convert_batch(django_apps, "default", events) == 0


def test_what_the_old_data_never_held_comes_from_what_still_tells_it(old_rows):
    migrate()
    pairs: dict[str, list[tuple[dict, dict]]] = {}
    for pk, old in old_rows.items():
        pairs.setdefault(old.type, []).append((Event.objects.get(pk=pk).facts, old.facts))
    # A message's sequence and intent; the conversation's count, last message, handoff then.
    for facts, original in pairs["message.received"] + pairs["message.sent"]:
        assert facts["message"] == {**original["message"],
                                    "created_at": _ms_precision(original["message"]["created_at"])}
        for key in ("id", "visitor_id", "channel", "lead_id", "message_count", "has_handoff",
                    "status"):
            assert facts["conversation"][key] == original["conversation"][key], key
        if original["message"]["author_id"]:  # a person's reply: the conversation was theirs
            assert facts["conversation"]["assigned_to_id"] == original["message"]["author_id"]
    assert any(original["message"]["author_id"] for _, original in pairs["message.sent"])
    # The log tells a conversation's first handoff; the row, how an ended one ended.
    for facts, original in pairs["conversation.handoff"]:
        assert facts["first_handoff"] is original["first_handoff"] is True
    for facts, original in pairs["conversation.completed"]:
        assert facts["conversation"]["has_handoff"] is original["conversation"]["has_handoff"]
        assert (facts["conversation"]["assigned_to_id"]
                == original["conversation"]["assigned_to_id"] is not None)
    # A lead untouched since it was created: its row is that moment's, tags and all...
    bob = str(Lead.objects.get(email="bob@example.com").pk)
    (facts, original), = [p for p in pairs["lead.created"] if p[1]["lead"]["id"] == bob]
    assert facts["lead"]["tags"] == original["lead"]["tags"]
    assert facts["lead"]["updated_at"] == original["lead"]["updated_at"]
    # ... but its status comes from the v1 word, as both surfaces showed it (booked: qualified).
    assert (original["lead"]["status"], facts["lead"]["status"]) == ("booked", "qualified")
    # A lead changed since: what the old data lacked takes neutral defaults, but for the fields
    # that never change.
    ada = str(Lead.objects.get(name="Ada").pk)
    (facts, original), = [p for p in pairs["lead.created"] if p[1]["lead"]["id"] == ada]
    assert original["lead"]["tags"] == ["vip"] and facts["lead"]["tags"] == []
    (facts, original), = [p for p in pairs["lead.qualified"] if p[1]["lead"]["id"] == ada]
    assert facts["lead"]["source"] == original["lead"]["source"]
    assert facts["lead"]["created_at"] == original["lead"]["created_at"]  # to the microsecond


def test_rows_whose_lead_and_conversation_are_gone_still_render(old_rows):
    Lead.objects.all().delete()
    Conversation.objects.all().delete()
    migrate()
    _assert_rendered_as_before(old_rows)
    received = [pk for pk, old in old_rows.items() if old.type == "message.received"]
    facts = Event.objects.get(pk=received[0]).facts
    assert facts["message"]["sequence"] is None and facts["conversation"]["channel"] == ""


def test_the_activity_feed_shows_the_converted_rows_as_before(api, kit, stranger, old_rows,
                                                              new_rows):
    migrate()
    r = api.get("/api/v1/analytics/activity?limit=100", headers=kit.auth("read"))
    assert r.status_code == 200, r.content
    items = {item["id"]: item for item in r.json()["data"]}
    shown = {pk: old for pk, old in old_rows.items() if "evt_" + pk.hex in items}
    assert {old.type for old in shown.values()} == {
        "lead.created", "lead.qualified", "lead.score_changed", "conversion.completed",
        "conversation.started", "conversation.handoff", "intent.high_value", "meeting.booked"}
    for pk, old in shown.items():
        if old.type == "meeting.booked":  # shown on v1 since issue 16 (checked above)
            continue
        assert items["evt_" + pk.hex]["metadata"] == old.data, old.type
    assert len(items) > len(shown)  # and the new rows beside them
    theirs = api.get("/api/v1/analytics/activity?limit=100", headers=stranger.auth("read"))
    assert theirs.status_code == 200 and theirs.json()["data"] == []
