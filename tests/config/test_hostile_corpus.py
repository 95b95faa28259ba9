"""A corpus of hostile values sent to every writable field of every endpoint that takes a JSON
body, on both surfaces (issue 19). The fields are read from each surface's OpenAPI schema, so a
new field is covered the day it is declared; the corpus is data, so a new case is one line.

For each operation a valid body is sent first (it must succeed: the corpus then tests the
field, not a body refused for another reason); then each corpus value replaces one field at a
time. Every answer must be a 4xx in the surface's envelope, and nothing may change: no row
created, no row touched, no event."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from conversations.models import Conversation, Message
from core.models import Event
from knowledge.models import Document
from leads.models import Lead
from tests.factories import make_lead
from webhooks.models import Subscription

FieldSchema = dict[str, Any]


def _strings(field: FieldSchema) -> bool:
    return field.get("type") == "string" and "format" not in field or field.get("format") in (
        "email", "uri")


def _texts(field: FieldSchema) -> bool:
    """Where text goes: a string, strings in an array, or values of an object."""
    return field.get("type") in ("string", "array", "object")


def _inside(field: FieldSchema, value: Any) -> Any:
    """``value`` where the field holds text: itself, in an array, or under a key."""
    kind = field.get("type")
    return [value] if kind == "array" else {"note": value} if kind == "object" else value


@dataclass(frozen=True)
class Case:
    name: str
    applies: Callable[[FieldSchema], bool]
    value: Callable[[FieldSchema], Any]
    # A value of the wrong JSON type: refused by v1, which types its bodies strictly; the legacy
    # surface reads them as DRF does ("42" for 42), for the integrations written against it
    # (docs/decisions.md, "Strict types on v1 bodies").
    v1_only: bool = False


# A value too deep for the client's own encoder: a placeholder that _send replaces by the text.
NESTED = "\u2063nested\u2063"
NESTED_TEXT = '{"a":' * 10_000 + '"deep"' + "}" * 10_000


# One line per case: its name, the fields it applies to (by their schema), the value it sends.
CORPUS = [
    Case("nul", _texts, lambda f: _inside(f, "a\u0000b")),
    Case("lone surrogate", _texts, lambda f: _inside(f, "a\udfffb")),
    Case("rtl override", _texts, lambda f: _inside(f, "invoice\u202efdp.exe")),
    Case("10,000 levels", lambda f: True, lambda f: NESTED),
    Case("1 MB string", lambda f: f.get("type") == "string" and f.get("maxLength", 10**9) < 10**6,
         lambda f: "x" * 1_000_000),
    Case("number for a string", lambda f: f.get("type") == "string", lambda f: 42, v1_only=True),
    Case("object for a string", lambda f: f.get("type") == "string", lambda f: {"a": 1}),
    Case("string for a boolean", lambda f: f.get("type") == "boolean", lambda f: "yes", v1_only=True),
    Case("string for an integer", lambda f: f.get("type") == "integer", lambda f: "12", v1_only=True),
    Case("float for an integer", lambda f: f.get("type") == "integer", lambda f: 12.5, v1_only=True),
    Case("huge integer", lambda f: f.get("type") == "integer", lambda f: 10**30),
    Case("string for an array", lambda f: f.get("type") == "array", lambda f: "lead.created"),
    Case("array for an object", lambda f: f.get("type") == "object", lambda f: ["a"]),
    Case("calendar edge", lambda f: f.get("format") in ("date", "date-time"),
         lambda f: "9999-12-31T23:59:59Z"),
]


@dataclass(frozen=True)
class Operation:
    method: str
    path: str  # with {…} filled by the setup
    schema_path: str
    body: Callable[[Any], dict[str, Any]]
    scope: str | None = "admin"  # None: public


OPERATIONS = [
    Operation("POST", "/api/v1/leads", "/api/v1/leads",
              lambda ctx: {"email": "base@example.com", "name": "Ada Base"}),
    Operation("PATCH", "/api/v1/leads/{lead_v1}", "/api/v1/leads/{id}",
              lambda ctx: {"name": "Ada Patched"}),
    Operation("POST", "/api/v1/chat", "/api/v1/chat",
              lambda ctx: {"message": "Hello there", "visitorId": "v-corpus"}),
    Operation("POST", "/api/v1/knowledge-base", "/api/v1/knowledge-base",
              lambda ctx: {"title": "Refunds", "type": "text", "content": "Refunds within 30 days."}),
    Operation("POST", "/api/v1/webhooks", "/api/v1/webhooks",
              lambda ctx: {"url": "http://127.0.0.1:9/hooks", "events": ["lead.created"]}),
    Operation("PATCH", "/api/v1/webhooks/{webhook}", "/api/v1/webhooks/{id}",
              lambda ctx: {"events": ["lead.created", "lead.updated"]}),
    Operation("POST", "/api/admin/auth", "/api/admin/auth",
              lambda ctx: {"token": ctx["admin_token"]}, scope=None),
    Operation("POST", "/api/admin/leads", "/api/admin/leads",
              lambda ctx: {"email": "legacy@example.com", "name": "Lee Gacy"}),
    Operation("PATCH", "/api/leads/{lead}", "/api/leads/{id}", lambda ctx: {"name": "Lee Patched"}),
    Operation("POST", "/api/chat?tenant={tenant}", "/api/chat",
              lambda ctx: {"message": "Hi", "visitorId": "v-legacy"}, scope=None),
    Operation("POST", "/api/admin/knowledge-base", "/api/admin/knowledge-base",
              lambda ctx: {"title": "Hours", "type": "text", "content": "Open 9 to 5."}),
]


def _fields(schemas: dict[str, dict], op: Operation) -> dict[str, FieldSchema]:
    document = schemas["v1" if op.schema_path.startswith("/api/v1/") else "legacy"]
    body = document["paths"][op.schema_path][op.method.lower()]["requestBody"]["content"]
    schema = _resolved(document, body["application/json"]["schema"])
    if "oneOf" in schema:  # a document's body: text, or a file in base64; the base body is text
        schema = _resolved(document, schema["oneOf"][0])
    return {name: _resolved(document, field) for name, field in schema["properties"].items()}


def _resolved(document: dict, field: FieldSchema) -> FieldSchema:
    if "$ref" in field:
        return _resolved(document, document["components"]["schemas"][field["$ref"].rsplit("/", 1)[1]])
    if "allOf" in field and len(field["allOf"]) == 1:
        return {**_resolved(document, field["allOf"][0]), **{k: v for k, v in field.items() if k != "allOf"}}
    if "oneOf" in field and "properties" not in field and any("type" in f for f in field["oneOf"]):
        # an enum that may be null, or blank
        return next((_resolved(document, f) for f in field["oneOf"] if "$ref" in f or "type" in f), field)
    return field


def _state(kit) -> tuple:
    """Everything a write could change, as comparable values."""
    return (list(Lead.objects.order_by("pk").values_list("pk", "updated_at")),
            Conversation.objects.count(), Message.objects.count(), Document.objects.count(),
            list(Subscription.objects.order_by("pk").values_list("pk", "updated_at")),
            Event.objects.count())


@pytest.fixture
def schemas(api):
    return {"v1": api.get("/api/v1/schema").json(), "legacy": api.get("/api/schema").json()}


@pytest.fixture
def ctx(api, kit, settings):
    settings.WEBHOOKS_ALLOW_HTTP = True
    settings.WEBHOOKS_ALLOW_PRIVATE_TARGETS = True
    lead = make_lead(kit, email="corpus@example.com", name="Corpus Lead")
    hook = api.post("/api/v1/webhooks", headers=kit.auth("admin"),
                    json={"url": "http://127.0.0.1:9/first", "events": ["lead.created"]})
    assert hook.status_code == 201, hook.text
    return {"lead_v1": f"lead_{lead.pk.hex}", "lead": str(lead.pk), "webhook": hook.json()["id"],
            "tenant": kit.tenant.public_id, "admin_token": kit.admin_token}


def _send(api, kit, op: Operation, ctx: dict, body: Any):
    headers = {"Content-Type": "application/json"}
    if op.scope:
        headers.update(kit.auth(op.scope))
    text = json.dumps(body).replace(json.dumps(NESTED), NESTED_TEXT)
    return api.request(op.method, op.path.format(**ctx), headers=headers, content=text.encode())


def _refused_in_envelope(r, v1: bool) -> str | None:
    """Why ``r`` is not a 4xx in its surface's envelope, or None."""
    if not 400 <= r.status_code < 500:
        return f"answered {r.status_code}"
    error = r.json().get("error")
    if v1 and not (isinstance(error, dict) and error.get("code")):
        return f"no v1 envelope: {r.text[:200]}"
    if not v1 and not isinstance(error, str):
        return f"no legacy envelope: {r.text[:200]}"
    return None


@pytest.mark.parametrize("op", OPERATIONS, ids=lambda op: f"{op.method} {op.schema_path}")
def test_every_hostile_value_is_refused_and_changes_nothing(api, kit, schemas, ctx, op):
    base = op.body(ctx)
    first = _send(api, kit, op, ctx, base)
    assert first.status_code < 300, (first.status_code, first.text)  # the corpus tests the field
    before = _state(kit)
    problems = []
    v1 = op.schema_path.startswith("/api/v1/")
    for name, field in _fields(schemas, op).items():
        for case in CORPUS:
            if not case.applies(field) or (case.v1_only and not v1):
                continue
            r = _send(api, kit, op, ctx, {**base, name: case.value(field)})
            if (why := _refused_in_envelope(r, v1)) is not None:
                problems.append(f"{name} ← {case.name}: {why}")
    assert not problems, "\n".join(problems)
    assert _state(kit) == before
