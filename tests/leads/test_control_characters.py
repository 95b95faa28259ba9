"""A lead's one-line fields refuse control characters on both surfaces (docs/leads.md, "Fields";
docs/security.md): a CR/LF in a name went into the host's meeting email subject, which Django
then refused for good. Leading and trailing ones are whitespace the fields trim. Issue 28,
"Control characters in names"."""

from __future__ import annotations

import pytest

from leads.models import Lead
from tests.factories import make_lead

INSIDE = ["Sam\r\nLee", "Sam\nBcc: x@evil.example", "Sam\rLee", "Sam\tLee", "Sam\x00Lee",
          "Sam\x07Lee", "Sam\x85Lee", "Sam\u2028Lee", "Sam\x1bLee"]


def _details(r) -> set[tuple[str, str]]:
    return {(d["field"], d["code"]) for d in r.json()["error"]["details"]}


@pytest.mark.parametrize("value", INSIDE)
@pytest.mark.parametrize("field", ["name", "company", "title"])
def test_v1_create_refuses_a_control_character_inside(api, kit, field, value):
    r = api.post("/api/v1/leads", json={"email": "sam@example.com", field: value},
                 headers=kit.auth("write"))
    assert r.status_code == 400, r.text
    assert r.json()["error"]["code"] == "invalid_request"
    assert (field, "invalid_format") in _details(r)
    assert not Lead.objects.exists()


def test_v1_refuses_one_in_a_tag_naming_the_tag(api, kit):
    r = api.post("/api/v1/leads", json={"email": "sam@example.com", "tags": ["vip", "a\nb"]},
                 headers=kit.auth("write"))
    assert r.status_code == 400 and ("tags.1", "invalid_format") in _details(r)


def test_v1_update_refuses_them_and_changes_nothing(api, kit):
    lead = make_lead(kit, name="Sam Lee", company="Umbrella")
    r = api.patch(f"/api/v1/leads/lead_{lead.pk.hex}",
                  json={"name": "Sam\r\nLee", "company": "Umb\x07rella"}, headers=kit.auth("write"))
    assert r.status_code == 400
    assert _details(r) >= {("name", "invalid_format"), ("company", "invalid_format")}
    lead.refresh_from_db()
    assert (lead.name, lead.company) == ("Sam Lee", "Umbrella")


def test_leading_and_trailing_ones_are_trimmed(api, kit):
    r = api.post("/api/v1/leads", json={"email": "sam@example.com", "name": "\r\n Sam Lee\n",
                                        "title": "\tCTO"}, headers=kit.auth("write"))
    assert r.status_code == 201, r.text
    assert (r.json()["name"], r.json()["title"]) == ("Sam Lee", "CTO")


@pytest.mark.parametrize("field", ["name", "company", "phone"])
def test_legacy_create_refuses_them(api, kit, field):
    body = {"name": "Sam", "email": "sam@example.com", field: "Sam\r\nLee"}
    r = api.post("/api/admin/leads", json=body, headers=kit.auth("admin"))
    assert r.status_code == 400, r.text
    assert field in r.json()["error"] and "control characters" in r.json()["error"]
    assert not Lead.objects.exists()


def test_legacy_update_refuses_them(api, kit):
    lead = make_lead(kit, name="Sam Lee")
    r = api.patch(f"/api/leads/{lead.pk}", json={"name": "Sam\nLee"}, headers=kit.auth("write"))
    assert r.status_code == 400 and "name" in r.json()["error"]
    lead.refresh_from_db()
    assert lead.name == "Sam Lee"


def test_the_request_schemas_say_so(db):
    from openapi_schema_validator import OAS30Validator

    from tests.openapi import schema_dict

    cases = (("v1", "LeadCreateRequest", {"email": "sam@example.com"}, ("name", "company", "title")),
             ("legacy", "LegacyLeadCreateRequest", {"name": "Sam", "email": "sam@example.com"},
              ("name", "company", "phone")))
    for surface, component, base, fields in cases:
        document = schema_dict(surface)
        schema = {**document["components"]["schemas"][component],
                  "components": document["components"]}
        validator = OAS30Validator(schema)
        for field in fields:
            for value in INSIDE:
                assert not validator.is_valid({**base, field: value}), (surface, field, value)
            for value in ("Sam Lee", " Sam Lee\r\n", "\tSam", "Zoë O'Brien-Łukasz", "株式会社"):
                assert validator.is_valid({**base, field: value}), (surface, field, value)
