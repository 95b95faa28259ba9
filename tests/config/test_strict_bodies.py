"""v1 request bodies are typed strictly (config/api/fields.py, ``V1Input``): a boolean field takes
a JSON boolean, a string field a JSON string, a number field a JSON number. Anything else is a
400 ``invalid_request`` naming the field, and nothing is created or changed. The legacy surface
keeps DRF's coercions (its clients exist), and query parameters, text by nature, are read as
before (``?includeMessages=false``)."""

from __future__ import annotations

import pytest

from conversations.models import Conversation, Message
from core import outbound
from knowledge.models import Document
from leads.models import Lead
from tests.factories import make_lead
from tests.openapi import schema_dict
from webhooks.models import Subscription

CHAT = {"message": "Hello", "visitorId": "v-1"}


@pytest.fixture
def public_hosts(monkeypatch):
    """Every host name resolves to a public address (no DNS in the tests)."""
    monkeypatch.setattr(outbound, "resolve", lambda host, port: ["93.184.216.34"])


def _refused(r, field: str, expected: str) -> None:
    assert r.status_code == 400, r.text
    error = r.json()["error"]
    assert error["code"] == "invalid_request"
    assert {"field": field, "code": "invalid_format", "message": f"Expected {expected}."} in (
        error["details"])


@pytest.mark.parametrize(("body", "field", "expected"), [
    ({**CHAT, "stream": "yes"}, "stream", "a boolean, not a string"),
    ({**CHAT, "stream": 1}, "stream", "a boolean, not a number"),
    ({**CHAT, "stream": "true"}, "stream", "a boolean, not a string"),
    ({**CHAT, "message": 42}, "message", "a string, not a number"),
    ({**CHAT, "visitorId": True}, "visitorId", "a string, not a boolean"),
    ({**CHAT, "language": ["en"]}, "language", "a string, not an array"),
])
def test_the_chat_refuses_a_value_of_the_wrong_type_and_starts_nothing(api, kit, body, field,
                                                                       expected):
    r = api.post("/api/v1/chat", json=body, headers=kit.auth("write"))
    _refused(r, field, expected)
    assert not Conversation.objects.exists() and not Message.objects.exists()


@pytest.mark.parametrize(("body", "field", "expected"), [
    ({"email": ["a"]}, "email", "a string, not an array"),
    ({"email": "ada@example.com", "name": 3.5}, "name", "a string, not a number"),
    ({"email": "ada@example.com", "company": False}, "company", "a string, not a boolean"),
    ({"email": "ada@example.com", "phone": 14155550123}, "phone", "a string, not a number"),
    ({"email": "ada@example.com", "tags": ["vip", 7]}, "tags[1]", "a string, not a number"),
    ({"email": {"a": 1}}, "email", "a string, not an object"),
])
def test_a_lead_is_not_created_from_a_value_of_the_wrong_type(api, kit, body, field, expected):
    r = api.post("/api/v1/leads", json=body, headers=kit.auth("write"))
    _refused(r, field, expected)
    assert not Lead.objects.exists()


@pytest.mark.parametrize(("body", "field", "expected"), [
    ({"name": 3.5}, "name", "a string, not a number"),
    ({"score": "50"}, "score", "an integer, not a string"),
    ({"score": True}, "score", "an integer, not a boolean"),
    ({"score": 50.0}, "score", "an integer, not a number"),
])
def test_a_lead_is_not_changed_by_a_value_of_the_wrong_type(api, kit, body, field, expected):
    lead = make_lead(kit, name="Ada")
    before = (lead.name, lead.score, lead.updated_at)
    r = api.patch(f"/api/v1/leads/lead_{lead.pk.hex}", json=body, headers=kit.auth("write"))
    _refused(r, field, expected)
    lead.refresh_from_db()
    assert (lead.name, lead.score, lead.updated_at) == before


def test_every_wrong_value_is_named_with_the_other_errors(api, kit):
    r = api.post("/api/v1/leads", json={"name": 1, "tags": [True, "ok", 2], "status": "gone"},
                 headers=kit.auth("write"))
    assert r.status_code == 400
    details = {(d["field"], d["code"]) for d in r.json()["error"]["details"]}
    assert details == {("email", "required"), ("name", "invalid_format"),
                       ("tags[0]", "invalid_format"), ("tags[2]", "invalid_format"),
                       ("status", "invalid_enum")}


def test_a_webhook_and_a_document_are_not_created_from_wrong_types(api, kit, public_hosts):
    r = api.post("/api/v1/webhooks", json={"url": 5, "events": ["lead.created"]},
                 headers=kit.auth("admin"))
    _refused(r, "url", "a string, not a number")
    r = api.post("/api/v1/webhooks", json={"url": "https://hooks.example.com/x",
                                           "events": ["lead.created"], "secret": 1234567890123456},
                 headers=kit.auth("admin"))
    _refused(r, "secret", "a string, not a number")
    assert not Subscription.objects.exists()
    r = api.post("/api/v1/knowledge-base", json={"title": 3.5, "content": "Our prices."},
                 headers=kit.auth("write"))
    _refused(r, "title", "a string, not a number")
    r = api.post("/api/v1/knowledge-base", json={"title": "Prices", "content": 42},
                 headers=kit.auth("write"))
    _refused(r, "content", "a string, not a number")
    assert not Document.objects.exists()


def _json_bodies():
    """(method, path, property, its schema) of every property of every v1 JSON request body."""
    document = schema_dict("v1")
    schemas = document["components"]["schemas"]
    for path, item in document["paths"].items():
        for method, operation in item.items():
            content = operation.get("requestBody", {}).get("content", {})
            if "application/json" not in content:
                continue
            shape = schemas[content["application/json"]["schema"]["$ref"].rsplit("/", 1)[1]]
            if "oneOf" in shape:  # the knowledge base: its first shape (text)
                shape = schemas[shape["oneOf"][0]["$ref"].rsplit("/", 1)[1]]
            for name, stated in shape["properties"].items():
                yield method.upper(), path, name, stated


# A value of another JSON type than the schema's, for each type.
_WRONG = {"string": 42, "boolean": "true", "integer": "7", "number": "7.5", "array": "x",
          "object": ["x"]}


def _wrong_value(stated: dict):
    kind = stated.get("type") or stated.get("anyOf", stated.get("oneOf", [{}]))[0].get("type")
    return _WRONG.get(kind or "string")


def test_every_property_of_every_v1_body_refuses_another_json_type(api, kit, public_hosts,
                                                                  settings):
    settings.RATE_LIMIT_ENABLED = False  # one request per property, past the chat's minute
    lead = make_lead(kit)
    hook = api.post("/api/v1/webhooks", json={"url": "https://hooks.example.com/x",
                                              "events": ["lead.created"]},
                    headers=kit.auth("admin")).json()["id"]
    ids = {"/api/v1/leads/{id}": f"lead_{lead.pk.hex}", "/api/v1/webhooks/{id}": hook}
    checked = []
    for method, path, name, stated in _json_bodies():
        value = _wrong_value(stated)
        url = path.replace("{id}", ids.get(path, ""))
        r = api.request(method, url, json={name: value}, headers=kit.auth("admin"))
        assert r.status_code == 400, (method, path, name, value, r.text)
        codes = {d["code"] for d in r.json()["error"]["details"] if d["field"] == name}
        assert codes & {"invalid_format", "invalid_enum"}, (method, path, name, value, r.text)
        checked.append((method, path, name))
    assert ("POST", "/api/v1/chat", "stream") in checked and len(checked) > 30


def test_the_legacy_surface_keeps_reading_values_as_before(api, kit):
    lead = make_lead(kit, name="Ada")
    r = api.patch(f"/api/leads/{lead.pk}", json={"name": 3.5, "qualificationScore": "40"},
                  headers=kit.auth("write"))
    assert r.status_code == 200, r.text
    assert r.json()["lead"]["name"] == "3.5" and r.json()["lead"]["qualificationScore"] == 40
    r = api.post("/api/admin/knowledge-base", json={"title": 2026, "content": "Our prices."},
                 headers=kit.auth("admin"))
    assert r.status_code == 201 and r.json()["document"]["title"] == "2026"


def test_query_parameters_are_still_text_read_as_their_type(api, kit):
    r = api.post("/api/v1/chat", json=CHAT, headers=kit.auth("write"))
    assert r.status_code == 200, r.text
    conversation = Conversation.objects.get()
    path = f"/api/v1/conversations/conv_{conversation.pk.hex}"
    r = api.get(f"{path}?includeMessages=false&messageLimit=5", headers=kit.auth("read"))
    assert r.status_code == 200 and "messages" not in r.json()
    r = api.get(f"{path}?includeMessages=true&messageLimit=1", headers=kit.auth("read"))
    assert len(r.json()["messages"]) == 1
