"""The ``data`` of every v1 webhook type as a receiver gets it, driven through the real API and
chat: the specification's shapes for lead.created, lead.qualified, conversation.handoff and
intent.high_value, and the shapes docs/webhooks.md documents for the others (the meetings':
docs/events.md)."""

from __future__ import annotations

import pytest
from django.utils import timezone

from conversations import scheduling
from conversations.services import meeting_cancel, meeting_reschedule
from tests.chat_helpers import chat
from tests.conversations.meeting_helpers import book
from tests.factories import UserFactory
from webhooks import services
from webhooks.envelopes import V1_EVENT_TYPES
from webhooks.models import Delivery

from .conftest import SECRET, attempt_now, envelope, v1_signature_ok

pytestmark = pytest.mark.usefixtures("local_targets")

LEAD_FULL = {"id", "email", "name", "company", "title", "phone", "status", "score", "source",
             "tags", "customFields", "assignedTo", "firstSeenAt", "lastActiveAt", "createdAt",
             "updatedAt"}
CONVERSATION_BRIEF = {"id", "leadId", "visitorId", "channel", "status", "messageCount", "subject",
                      "summary", "startedAt", "lastMessageAt"}


@pytest.fixture
def delivered(api, kit, receiver, enqueued, django_capture_on_commit_callbacks):
    """Subscribes to every type, runs a scenario that fires each, and returns what arrived."""
    services.subscription_create(tenant=kit.tenant, livemode=True, url=receiver.url(),
                                 events=list(V1_EVENT_TYPES), secret=SECRET)
    UserFactory(tenant=kit.tenant, available=True)
    admin = kit.auth("admin")
    with django_capture_on_commit_callbacks(execute=True):
        lead = api.post("/api/v1/leads", json={"email": "ann@example.com", "name": "Ann",
                                               "company": "Acme"}, headers=admin).json()
        api.patch(f"/api/v1/leads/{lead['id']}", json={"status": "qualified"}, headers=admin)
        api.patch(f"/api/v1/leads/{lead['id']}", json={"status": "converted"}, headers=admin)
        # Another lead for lead.deleted: a DELETE erases the person, so the deliveries still to
        # go about them carry no personal field (tests/privacy), and Ann's must show hers.
        gone = api.post("/api/v1/leads", json={"email": "del@example.com"}, headers=admin).json()
        api.delete(f"/api/v1/leads/{gone['id']}", headers=admin)
        sid = chat(api, kit, "I'm the CEO, budget approved, we want to buy this month, "
                             "ceo@bigco.com", visitor="buyer").json()["sessionId"]
        chat(api, kit, "We are ready to purchase for 200 users", session=sid, visitor="buyer")
        chat(api, kit, "I want to talk to a human", visitor="helpme")
        closing = chat(api, kit, "Just looking", visitor="leaver").json()["sessionId"]
        api.post(f"/api/v1/conversations/conv_{closing[5:]}/close", headers=admin)
        meeting, _ = book(api, kit, visitor="booker", email="bo@booker.io", name="Bo Lee")
        target = next(s for s in scheduling.free_slots(kit.tenant, True, now=timezone.now())
                      if s.start != meeting.starts_at)
        meeting_reschedule(meeting=meeting, starts_at=target.start)
        meeting_cancel(meeting=meeting, by="visitor")
    for delivery in Delivery.objects.order_by("created_at"):
        assert attempt_now(delivery).success
    assert all(v1_signature_ok(r) for r in receiver.received)
    by_type: dict[str, list[dict]] = {}
    for request in receiver.received:
        body = envelope(request)
        assert request.headers["x-service-event"] == body["type"]
        by_type.setdefault(body["type"], []).append(body["data"])
    return by_type


def test_every_v1_type_was_delivered(delivered):
    assert set(delivered) == set(V1_EVENT_TYPES)


def test_lead_created_is_the_specifications(delivered):
    data = delivered["lead.created"][0]
    assert set(data) == {"lead", "conversationId"}
    assert set(data["lead"]) == {"id", "email", "name", "company", "status", "score", "source",
                                 "createdAt"}
    assert data["lead"]["status"] == "new" and data["conversationId"] is None
    from_chat = next(d for d in delivered["lead.created"] if d["conversationId"])
    assert from_chat["conversationId"].startswith("conv_") and from_chat["lead"]["source"] == "chat"


def test_lead_qualified_is_the_specifications(delivered):
    data = next(d for d in delivered["lead.qualified"] if d["lead"]["email"] == "ann@example.com")
    assert set(data) == {"lead", "qualificationReason"}
    assert set(data["lead"]) == {"id", "email", "name", "company", "status", "score",
                                 "previousStatus"}
    assert data["lead"]["status"] == "qualified" and data["lead"]["previousStatus"] == "new"
    assert isinstance(data["qualificationReason"], str) and data["qualificationReason"]


def test_conversation_handoff_is_the_specifications(delivered):
    (data,) = delivered["conversation.handoff"]
    assert set(data) == {"conversation", "handoff"}
    # assignedTo is ours, beyond the specification's four (docs/webhooks.md).
    assert set(data["conversation"]) == {"id", "leadId", "messageCount", "status", "assignedTo"}
    assert data["conversation"]["status"] == "handed_off"
    assert data["conversation"]["assignedTo"].startswith("user_")
    assert set(data["handoff"]) == {"reason", "priority", "suggestedTeam", "context"}


def test_intent_high_value_is_the_specifications(delivered):
    data = delivered["intent.high_value"][0]  # the buyer's (the meeting's booker comes next)
    assert set(data) == {"leadId", "conversationId", "intent", "confidence", "signals",
                         "estimatedDealSize"}
    assert isinstance(data["confidence"], float) and isinstance(data["estimatedDealSize"], float)
    assert all(isinstance(s, str) for s in data["signals"])


def test_the_other_types_have_their_documented_shapes(delivered):
    updated = delivered["lead.updated"][0]
    assert set(updated) == {"lead", "changedFields", "previousValues"}
    assert set(updated["lead"]) == LEAD_FULL
    assert set(updated["previousValues"]) == set(updated["changedFields"])

    (converted,) = delivered["lead.converted"]
    assert set(converted) == {"lead"}
    assert converted["lead"]["status"] == "converted"
    assert converted["lead"]["previousStatus"] == "qualified"

    (deleted,) = delivered["lead.deleted"]
    assert set(deleted) == {"lead"} and set(deleted["lead"]) == LEAD_FULL
    assert deleted["lead"]["email"] is None  # erased: the id, and no personal field

    started = delivered["conversation.started"][0]
    assert set(started) == {"conversation"} and set(started["conversation"]) == CONVERSATION_BRIEF

    (completed,) = delivered["conversation.completed"]
    assert set(completed) == {"conversation", "reason"}
    assert set(completed["conversation"]) == CONVERSATION_BRIEF
    assert completed["conversation"]["status"] == "closed"

    received = delivered["message.received"][0]
    assert set(received) == {"conversationId", "message"}
    assert set(received["message"]) == {"id", "role", "content", "createdAt"}
    assert received["message"]["role"] == "user"
    sent = delivered["message.sent"][0]
    assert set(sent["message"]) == {"id", "role", "content", "intent", "confidence", "createdAt"}
    assert sent["message"]["role"] == "assistant"


MEETING = {"id", "leadId", "conversationId", "hostId", "status", "startsAt", "endsAt", "timezone",
           "sequence", "cancelledAt", "createdAt"}


def test_the_meeting_types_carry_the_meeting(delivered):
    (booked,) = delivered["meeting.booked"]
    assert set(booked) == {"meeting", "lead"} and set(booked["meeting"]) == MEETING
    assert booked["meeting"]["id"].startswith("mtg_") and booked["meeting"]["sequence"] == 0
    assert booked["meeting"]["hostId"].startswith("user_")
    assert booked["meeting"]["conversationId"].startswith("conv_")
    assert booked["lead"] == {"id": booked["meeting"]["leadId"], "email": "bo@booker.io",
                              "name": "Bo Lee", "company": "Umbrella", "status": "qualified",
                              "score": booked["lead"]["score"]}

    (moved,) = delivered["meeting.rescheduled"]
    assert set(moved) == {"meeting", "previous"} and moved["meeting"]["sequence"] == 1
    assert moved["previous"] == {"startsAt": booked["meeting"]["startsAt"],
                                 "endsAt": booked["meeting"]["endsAt"]}
    assert moved["meeting"]["startsAt"] != booked["meeting"]["startsAt"]

    (cancelled,) = delivered["meeting.cancelled"]
    assert set(cancelled) == {"meeting", "cancelledBy"} and cancelled["cancelledBy"] == "visitor"
    assert cancelled["meeting"]["status"] == "cancelled" and cancelled["meeting"]["sequence"] == 2
    assert cancelled["meeting"]["cancelledAt"].endswith("Z")
    assert cancelled["meeting"]["id"] == booked["meeting"]["id"]
