"""GET /api/v1/conversations (filters, sorts, pagination), GET/DELETE /{id}, POST /{id}/close,
GET /api/v1/chat/sessions/{id}."""

from datetime import timedelta

import pytest
from django.utils import timezone

from conversations.models import Conversation
from tests.chat_helpers import chat, events
from tests.events import v1_data

LIST = "/api/v1/conversations"


@pytest.fixture
def three(api, kit):
    """Three conversations: a, b (with a lead), c; started a day apart."""
    ids = {}
    for name, message in (("a", "Hi"), ("b", "I'm b@b.com"), ("c", "How much is it?")):
        ids[name] = chat(api, kit, message, visitor=name).json()["sessionId"].replace("sess_", "conv_")
    now = timezone.now()
    for offset, name in enumerate("abc"):
        Conversation.objects.filter(pk=ids[name][5:]).update(
            started_at=now - timedelta(days=3 - offset), last_message_at=now - timedelta(hours=3 - offset))
    Conversation.objects.filter(pk=ids["c"][5:]).update(message_count=10, channel="web_chat")
    return ids


def _ids(r):
    assert r.status_code == 200, r.content
    return [c["id"] for c in r.json()["data"]]


def test_list_shape_and_default_order(api, kit, three):
    r = api.get(LIST, headers=kit.auth("read"))
    assert _ids(r) == [three["c"], three["b"], three["a"]]
    item = r.json()["data"][0]
    assert set(item) == {"id", "leadId", "visitorId", "channel", "status", "subject", "messageCount",
                         "summary", "intents", "leadScore", "assignedTo", "startedAt",
                         "lastMessageAt", "createdAt"}
    assert r.json()["pagination"] == {"page": 1, "limit": 25, "total": 3, "totalPages": 1,
                                      "hasMore": False}


@pytest.mark.parametrize("query, expected", [
    ("sortBy=startedAt&sortOrder=asc", ["a", "b", "c"]),
    ("sortBy=messageCount&sortOrder=desc", ["c"]),  # a and b tie: the id decides
    ("channel=web_chat", ["c"]),
    ("status=active", ["c", "b", "a"]),
    ("status=closed", []),
])
def test_filters_and_sorts(api, kit, three, query, expected):
    r = api.get(f"{LIST}?{query}", headers=kit.auth("read"))
    assert _ids(r)[: len(expected)] == [three[n] for n in expected]
    if query.startswith(("channel", "status")):
        assert len(_ids(r)) == len(expected)


def test_lead_and_date_filters(api, kit, three):
    lead_id = api.get(f"{LIST}/{three['b']}", headers=kit.auth("read")).json()["leadId"]
    assert _ids(api.get(f"{LIST}?leadId={lead_id}", headers=kit.auth("read"))) == [three["b"]]
    today = timezone.now().date()
    start = (today - timedelta(days=2)).isoformat()
    assert _ids(api.get(f"{LIST}?startDate={start}", headers=kit.auth("read"))) == [
        three["c"], three["b"]]
    end = (today - timedelta(days=2)).isoformat()
    assert three["b"] in _ids(api.get(f"{LIST}?endDate={end}", headers=kit.auth("read")))
    moment = (timezone.now() - timedelta(days=1, hours=12)).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert _ids(api.get(f"{LIST}?startDate={moment}", headers=kit.auth("read"))) == [three["c"]]


@pytest.mark.parametrize("query, field, code", [
    ("status=open", "status", "invalid_enum"),
    ("channel=fax", "channel", "invalid_enum"),
    ("sortBy=subject", "sortBy", "invalid_enum"),
    ("sortOrder=up", "sortOrder", "invalid_enum"),
    ("startDate=yesterday", "startDate", "invalid_format"),
    ("endDate=2026-13-01", "endDate", "invalid_format"),
    ("leadId=conv_123", "leadId", "invalid_format"),
    ("limit=101", "limit", "out_of_range"),
])
def test_bad_list_parameters_are_400(api, kit, query, field, code):
    r = api.get(f"{LIST}?{query}", headers=kit.auth("read"))
    assert r.status_code == 400
    assert r.json()["error"]["details"][0] == {**r.json()["error"]["details"][0], "field": field,
                                               "code": code}


def test_list_query_count_is_fixed(api, kit, three, django_assert_max_num_queries):
    for i in range(12):
        chat(api, kit, "Hi", visitor=f"extra{i}")
    for limit in (5, 25):
        with django_assert_max_num_queries(4):
            r = api.get(f"{LIST}?limit={limit}", headers=kit.auth("read"))
        assert len(r.json()["data"]) == min(limit, 15)


def test_stranger_and_test_mode_see_nothing(api, kit, three, stranger):
    assert _ids(api.get(LIST, headers=stranger.auth("read"))) == []
    assert _ids(api.get(LIST, headers=kit.auth("read", "test"))) == []
    for auth in (stranger.auth("admin"), kit.auth("admin", "test")):
        assert api.get(f"{LIST}/{three['a']}", headers=auth).status_code == 404
        assert api.delete(f"{LIST}/{three['a']}", headers=auth).status_code == 404
        assert api.post(f"{LIST}/{three['a']}/close", headers=auth).status_code == 404


def test_detail_with_messages_and_metadata(api, kit):
    sid = api.post("/api/v1/chat", headers={**kit.auth("write"), "User-Agent": "UA/1"},
                   json={"message": "Hi", "visitorId": "v",
                         "metadata": {"landingPage": "https://acme.com/"}}).json()["sessionId"]
    for text in ("one", "two", "three"):
        chat(api, kit, text, session=sid, visitor="v")
    cid = sid.replace("sess_", "conv_")
    r = api.get(f"{LIST}/{cid}", headers=kit.auth("read"))
    data = r.json()
    assert data["metadata"] == {"userAgent": "UA/1", "referrer": None,
                                "landingPage": "https://acme.com/"}
    assert [m["role"] for m in data["messages"]] == ["user", "assistant"] * 4
    assert data["messages"][1]["intent"] and "intent" not in data["messages"][0]
    r = api.get(f"{LIST}/{cid}?messageLimit=2&messageOffset=2", headers=kit.auth("read"))
    assert [m["content"] for m in r.json()["messages"]][0] == "one"
    assert len(r.json()["messages"]) == 2
    r = api.get(f"{LIST}/{cid}?includeMessages=false", headers=kit.auth("read"))
    assert "messages" not in r.json() and "metadata" in r.json()
    assert api.get(f"{LIST}/{cid}?messageLimit=201", headers=kit.auth("read")).status_code == 400
    assert api.get(f"{LIST}/{cid}?messageOffset=-1", headers=kit.auth("read")).status_code == 400
    assert api.get(f"{LIST}/{sid}", headers=kit.auth("read")).status_code == 404  # sess_ prefix


def test_close_needs_write_and_emits_completed(api, kit):
    cid = chat(api, kit, "Hi").json()["sessionId"].replace("sess_", "conv_")
    assert api.post(f"{LIST}/{cid}/close", headers=kit.auth("read")).status_code == 403
    r = api.post(f"{LIST}/{cid}/close", headers=kit.auth("write"))
    assert r.status_code == 200 and r.json()["status"] == "closed"
    completed = events(kit, "conversation.completed")
    assert len(completed) == 1 and v1_data(completed[0])["reason"] == "closed_by_api"
    r = api.post(f"{LIST}/{cid}/close", headers=kit.auth("write"))
    assert r.status_code == 200 and len(events(kit, "conversation.completed")) == 1


def test_delete_needs_admin(api, kit):
    cid = chat(api, kit, "Hi").json()["sessionId"].replace("sess_", "conv_")
    assert api.delete(f"{LIST}/{cid}", headers=kit.auth("write")).status_code == 403
    r = api.delete(f"{LIST}/{cid}", headers=kit.auth("admin"))
    assert r.status_code == 204 and r.content == b""
    assert not Conversation.objects.exists()
    assert api.get(f"{LIST}/{cid}", headers=kit.auth("read")).status_code == 404


def test_chat_session_object(api, kit, stranger):
    r = chat(api, kit, "Hi, I'm x@y.com")
    sid = r.json()["sessionId"]
    session = api.get(f"/api/v1/chat/sessions/{sid}", headers=kit.auth("read"))
    assert session.status_code == 200
    data = session.json()
    assert set(data) == {"sessionId", "visitorId", "leadId", "status", "messages", "startedAt",
                         "lastActivityAt"}
    assert data["sessionId"] == sid and data["status"] == "active"
    assert data["leadId"].startswith("lead_")
    assert [m["role"] for m in data["messages"]] == ["user", "assistant"]
    assert data["messages"][1]["id"] == r.json()["id"]
    assert api.get(f"/api/v1/chat/sessions/{sid}", headers=stranger.auth("read")).status_code == 404
    conv = sid.replace("sess_", "conv_")
    assert api.get(f"/api/v1/chat/sessions/{conv}", headers=kit.auth("read")).status_code == 404


def test_the_leads_conversation_count_and_last_intent(api, kit):
    chat(api, kit, "Hi, I'm cc@cc.com", visitor="one")
    chat(api, kit, "cc@cc.com again, how much does it cost?", visitor="two")
    lead_id = api.get(LIST, headers=kit.auth("read")).json()["data"][0]["leadId"]
    lead = api.get(f"/api/v1/leads/{lead_id}", headers=kit.auth("read")).json()
    assert lead["conversationCount"] == 2
    assert lead["lastIntent"] == "pricing"
