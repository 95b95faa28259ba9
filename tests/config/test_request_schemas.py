"""Request bodies: the OpenAPI schemas and the endpoints agree on every value (config/api/schema.py).

Each body below is checked against the operation's request schema, as a client or a fuzzer reads
it (patterns as ECMAScript and Python read them alike), and sent: a body the schema accepts is
never a 400 (a semantic refusal is 422, a session that does not exist 404), and a body it
refuses always is. The values are those where the two used to part: whitespace Python trims but
ECMAScript's ``\\s`` does not know (U+001C), addresses Django's validator refuses although
``format: email`` takes them (and look-alikes, control characters and IP addresses it takes
although the service does not), control characters inside a name or a tag, a webhook URL with
a bad port, base64 that is not, a language that is no ISO 639-1 code, a blank tag (which the
service drops)."""

from __future__ import annotations

import pytest
from openapi_schema_validator import OAS30Validator, oas30_format_checker

from core import outbound
from tests.openapi import schema_dict

LEAD = {"email": "ada@example.com"}
CHAT = {"message": "Hello", "visitorId": "v-1"}
HOOK = {"url": "https://hooks.example.com/x", "events": ["lead.created"]}
DOC = {"title": "Prices", "content": "Our prices."}


def _cases():
    for email in ["ada@example.com", "0@0.a", "a@b.co", "a@x.1a", "a@localhost", "a..b@x.com",
                  "a@-x.com", "a@x.c-m", "a@bücher.example", "a@x.xn--p1ai", '"a@b"@x.com',
                  "ada@example", "a@x_y.com", "ſam@example.com", "\u212aim@example.com",
                  "ıan@example.com", "a@ｅｘａｍｐｌｅ.com", "a@\u212aelvin.example",
                  '"a\u0001b"@x.com', '"a b"@x.com', '"a\\ b"@x.com', "a@[127.0.0.1]"]:
        yield "/api/v1/leads", {**LEAD, "email": email}
        yield "/api/admin/leads", {"name": "Ada", "email": email}
    # The schema takes any letter in a label; IDNA refuses this one: 422 (legacy has no 422).
    yield "/api/v1/leads", {**LEAD, "email": "a@\u2603.example"}
    for name in ["Ada", "", "  ", "\u001c", None, "Ada\r\nLee", " Ada\n", "A\tL", "A\u2028L"]:
        yield "/api/v1/leads", {**LEAD, "name": name}
    for name in ["Ada", " ", "\u001c", "\u3000", "", "Ada\nLee", "\nAda\n"]:
        yield "/api/admin/leads", {"name": name, "email": "ada@example.com"}
    yield "/api/v1/leads", {**LEAD, "customFields": {str(i): i for i in range(101)}}
    for tags in [["vip"], [""], [" "], ["vip", "\u001c"], ["x" * 51], ["a\nb"], ["a\n"]]:
        yield "/api/v1/leads", {**LEAD, "tags": tags}
    for message in ["Hello", " ", "\u001c", "\u0085\u3000", "\ufeff", "a\u001c"]:
        yield "/api/v1/chat", {**CHAT, "message": message}
    for visitor in ["v-1", "\u001c", " v "]:
        yield "/api/v1/chat", {**CHAT, "visitorId": visitor}
    for language in ["fr", "zu", "xx", "e", "eng", " fr", None]:
        yield "/api/v1/chat", {**CHAT, "language": language}
    for session in [f"sess_{'a' * 32}", f"conv_{'a' * 32}", f"sess_{'A' * 32}", "abc", None]:
        yield "/api/v1/chat", {**CHAT, "sessionId": session}
    yield "/api/v1/chat", {**CHAT, "metadata": {str(i): i for i in range(51)}}
    for url in ["https://hooks.example.com/x", "https://hooks.example.com:8443/x",
                "https://hooks.example.com:65536/x", "https://hooks.example.com:0",
                "https://hooks.example.com:x/", "https://user@hooks.example.com/",
                "https://hooks.example.com/a b", "https://hooks.example.com/a\u001cb",
                "https://hooks.example.com\u0085", "https://[::1/", "https:///x", "ftp://x.com",
                "https://hooks.example.com/?q=1#f"]:
        yield "/api/v1/webhooks", {**HOOK, "url": url}
    for events in [["lead.created"], [], ["lead.exploded"], ["lead.created", "lead.created"]]:
        yield "/api/v1/webhooks", {**HOOK, "events": events}
    for content in ["Our prices.", " ", "\u001c", "\ufeff", "\ufeff ", "\ufeff\ufeff", "\ufeffx"]:
        yield "/api/v1/knowledge-base", {**DOC, "content": content}
    for content in ["AAAA", "AAA", "AA==", "A", "A===", "!!!!", "QUJD=", "JVBERi0xLjQK"]:
        yield "/api/v1/knowledge-base", {**DOC, "type": "pdf", "content": content}
    for title in ["T", " ", "\u001c"]:
        yield "/api/v1/knowledge-base", {**DOC, "title": title}
    for language in ["en", "xx", "", None]:
        yield "/api/v1/knowledge-base", {**DOC, "language": language}
    yield "/api/v1/knowledge-base", {"content": "Our prices."}
    for session in ["6f1c1e9e-5d0b-4a49-9f0a-7c1f3b2a9d10", "abc"]:
        yield "/api/chat", {**CHAT, "sessionId": session}


def _body_schema(path: str) -> dict:
    document = schema_dict("v1" if path.startswith("/api/v1/") else "legacy")
    media = document["paths"][path]["post"]["requestBody"]["content"]["application/json"]
    return {**media["schema"], "components": document["components"]}


@pytest.fixture
def public_hosts(monkeypatch):
    """Every host name resolves to a public address (no DNS in the tests)."""
    monkeypatch.setattr(outbound, "resolve", lambda host, port: ["93.184.216.34"])


@pytest.mark.parametrize(("path", "body"), list(_cases()))
def test_the_schema_and_the_endpoint_agree_on_each_body(api, kit, public_hosts, path, body):
    valid = OAS30Validator(_body_schema(path), format_checker=oas30_format_checker).is_valid(body)
    if path == "/api/chat":
        path = f"/api/chat?tenant={kit.tenant.public_id}"
    r = api.post(path, json=body, headers=kit.auth("admin"))
    assert (r.status_code != 400) == valid, (body, r.status_code, r.text)
    assert r.status_code < 500


def test_the_knowledge_base_json_body_is_one_of_two_shapes(api, db):
    document = schema_dict("v1")
    body = document["paths"]["/api/v1/knowledge-base"]["post"]["requestBody"]
    assert body["required"] is True
    shape = document["components"]["schemas"]["DocumentContentInputRequest"]
    assert [ref["$ref"].rsplit("/", 1)[1] for ref in shape["oneOf"]] == [
        "TextContentInputRequest", "BinaryContentInputRequest"]
