"""Legacy: GET /api/conversations/:id, GET /api/leads/:id/conversations, public POST /api/chat."""

import re

from agent.phrases import phrase
from conversations.models import Conversation
from leads.models import Lead
from tests.chat_helpers import chat


def test_conversation_in_the_legacy_shape(api, kit, stranger):
    sid = chat(api, kit, "Hi, I'm q@q.com").json()["sessionId"]
    conversation = Conversation.objects.get()
    r = api.get(f"/api/conversations/{conversation.pk}", headers=kit.auth("read"))
    assert r.status_code == 200
    data = r.json()["conversation"]
    assert set(data) == {"id", "leadId", "channel", "status", "summary", "messages"}
    assert data["id"] == str(conversation.pk) and data["leadId"] == str(Lead.objects.get().pk)
    assert data["status"] == "active" and data["channel"] == "api"
    assert [set(m) for m in data["messages"]] == [{"role", "content", "createdAt"}] * 2
    assert api.get(f"/api/conversations/{conversation.pk}",
                   headers=stranger.auth("read")).status_code == 404
    assert api.get(f"/api/conversations/{sid}", headers=kit.auth("read")).status_code == 404
    api.post(f"/api/v1/conversations/conv_{conversation.pk.hex}/close", headers=kit.auth("write"))
    r = api.get(f"/api/conversations/{conversation.pk}", headers=kit.auth("read"))
    assert r.json()["conversation"]["status"] == "completed"


def test_a_leads_conversations_most_recent_first(api, kit, stranger):
    chat(api, kit, "I'm r@r.com", visitor="r")
    chat(api, kit, "Hello again, r@r.com here", visitor="r2")
    lead = Lead.objects.get()
    r = api.get(f"/api/leads/{lead.pk}/conversations", headers=kit.auth("read"))
    assert r.status_code == 200
    items = r.json()["conversations"]
    assert len(items) == 2
    assert items[0]["lastMessageAt"] >= items[1]["lastMessageAt"]
    assert r.json()["pagination"] == {"page": 1, "limit": 20, "total": 2, "hasMore": False}
    assert api.get(f"/api/leads/{lead.pk}/conversations",
                   headers=stranger.auth("read")).status_code == 404
    assert api.get(f"/api/leads/{lead.pk}/conversations",
                   headers=kit.auth("read", "test")).status_code == 404


def test_public_chat_for_the_widget(api, kit):
    r = api.post(f"/api/chat?tenant={kit.tenant.public_id}",
                 json={"message": "Hi", "visitorId": "w-1"})
    assert r.status_code == 200
    data = r.json()
    assert len(data["sessionId"]) == 36 and data["role"] == "assistant" and data["events"] == []
    conversation = Conversation.objects.get()
    assert conversation.channel == "web_chat" and conversation.livemode is True
    r = api.post("/api/chat", json={"message": "And you?", "visitorId": "w-1",
                                    "sessionId": data["sessionId"],
                                    "tenant": kit.tenant.public_id})
    assert r.json()["sessionId"] == data["sessionId"]


def test_public_chat_says_the_pricing_line_once(api, kit):
    url = f"/api/chat?tenant={kit.tenant.public_id}"
    replies, sid = [], None
    for message in ("What does it cost?", "How much is it?", "What's the price?"):
        body = api.post(url, json={"message": message, "visitorId": "w",
                                   **({"sessionId": sid} if sid else {})}).json()
        sid = body["sessionId"]
        replies.append(body["content"])
    assert replies[0].startswith(phrase("en", "pricing"))
    assert phrase("en", "pricing") not in replies[1] + replies[2]
    assert replies[1].startswith(phrase("en", "pricing_again"))
    assert phrase("en", "pricing_again") not in replies[2]
    assert not any(re.search(r"\d|[$€£]", reply) for reply in replies)


def test_public_chat_errors(api, kit):
    r = api.post("/api/chat?tenant=tn_nope", json={"message": "Hi", "visitorId": "w"})
    assert r.status_code == 404 and r.json() == {"error": "Unknown tenant."}
    r = api.post(f"/api/chat?tenant={kit.tenant.public_id}", json={"visitorId": "w"})
    assert r.status_code == 400 and r.json()["error"].startswith("message")


def test_public_chat_announces_qualification_and_booking_to_the_widget(api, kit):
    url = f"/api/chat?tenant={kit.tenant.public_id}"
    sid = api.post(url, json={"message": "I'm Ann, CEO at Hooli, ann@hooli.com",
                              "visitorId": "w"}).json()["sessionId"]
    r = api.post(url, json={"message": "We need it this month, budget approved",
                            "visitorId": "w", "sessionId": sid})
    events = r.json()["events"]
    assert [e["type"] for e in events] == ["lead.qualified"]
    assert events[0]["lead"]["email"] == "ann@hooli.com" and events[0]["lead"]["status"] == "qualified"
    slot = next(a for a in api.post(url, json={"message": "Book a demo", "visitorId": "w",
                                               "sessionId": sid}).json()["suggestedActions"])
    r = api.post(url, json={"message": slot["message"], "visitorId": "w", "sessionId": sid,
                            "metadata": slot["metadata"]})
    assert [e["type"] for e in r.json()["events"]] == ["meeting.booked"]
    meeting = r.json()["events"][0]["meeting"]
    assert meeting["label"] == slot["label"]
    # The meeting itself: its id (the legacy surface's UUID), status and time zone.
    from conversations.models import Meeting

    booked = Meeting.objects.get()
    assert (meeting["id"], meeting["status"], meeting["timezone"]) == (
        str(booked.pk), "scheduled", "UTC")
    assert meeting["startsAt"].startswith(booked.starts_at.strftime("%Y-%m-%dT%H:%M"))
    assert meeting["confirmationEmail"] is True


def test_cors_follows_the_tenants_allowed_origins(api, kit):
    kit.tenant.allowed_origins = ["https://shop.acme.com"]
    kit.tenant.save()
    url = f"/api/chat?tenant={kit.tenant.public_id}"
    pre = {"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "content-type"}
    r = api.request("OPTIONS", url, headers={"Origin": "https://shop.acme.com", **pre})
    assert r.headers.get("access-control-allow-origin") == "https://shop.acme.com"
    r = api.request("OPTIONS", url, headers={"Origin": "https://evil.example", **pre})
    assert "access-control-allow-origin" not in r.headers
    r = api.post(url, json={"message": "Hi", "visitorId": "c"},
                 headers={"Origin": "https://shop.acme.com"})
    assert r.headers.get("access-control-allow-origin") == "https://shop.acme.com"
