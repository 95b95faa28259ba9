"""Leads' email addresses on both surfaces (docs/leads.md, "Email addresses"): a look-alike of a
lead's address (``ſ``, a dotless ``ı``, the Kelvin sign, full-width letters, another case) is
that lead (409 naming it) or refused, never a second lead; every address is kept in one form
(NFKC, the domain case-folded and IDNA-encoded), which the published schemas allow (the ``api``
fixture checks each answer against them). Issue 28, "Look-alike emails"."""

from __future__ import annotations

import pytest

from leads.models import Lead
from tests.factories import make_lead

# Addresses that look like "sam@example.com" (or "kim@…", "ian@…"), each with the one character
# that made a second lead before: outside the schemas' ASCII local part, so refused as given.
LOCAL_LOOK_ALIKES = ["ſam@example.com", "\u212aim@example.com", "ıan@example.com",
                     "ＳＡＭ@example.com"]


def _create(api, kit, surface, email, **fields):
    if surface == "v1":
        return api.post("/api/v1/leads", json={"email": email, **fields},
                        headers=kit.auth("write"))
    return api.post("/api/admin/leads", json={"name": "Sam", "email": email, **fields},
                    headers=kit.auth("admin"))


def _update(api, kit, surface, lead, body):
    if surface == "v1":
        return api.patch(f"/api/v1/leads/lead_{lead.pk.hex}", json=body, headers=kit.auth("write"))
    return api.patch(f"/api/leads/{lead.pk}", json=body, headers=kit.auth("write"))


def _refused(r, surface, field="email", status=400):
    assert r.status_code == status, r.text
    if surface == "v1":
        assert {"field": field, "code": "invalid_format"} in [
            {"field": d["field"], "code": d["code"]} for d in r.json()["error"]["details"]]
    else:
        assert field in r.json()["error"]


@pytest.mark.parametrize("surface", ["v1", "legacy"])
@pytest.mark.parametrize("email", LOCAL_LOOK_ALIKES)
def test_a_look_alike_in_the_local_part_is_refused_not_a_second_lead(api, kit, surface, email):
    existing = [make_lead(kit, email=f"{name}@example.com") for name in ("sam", "kim", "ian")]
    r = _create(api, kit, surface, email)
    _refused(r, surface)
    assert sorted(Lead.objects.values_list("pk", flat=True)) == sorted(e.pk for e in existing)


@pytest.mark.parametrize("surface", ["v1", "legacy"])
@pytest.mark.parametrize("email", ["sam@EXAMPLE.com", "SAM@Example.COM", "sam@ｅｘａｍｐｌｅ.com"])
def test_the_same_address_in_another_form_is_the_same_lead(api, kit, surface, email):
    sam = make_lead(kit, email="sam@example.com")
    r = _create(api, kit, surface, email)
    assert r.status_code == 409, r.text
    if surface == "v1":
        assert r.json()["existingLeadId"] == f"lead_{sam.pk.hex}"
    else:
        assert str(sam.pk) in r.json()["error"]
    assert Lead.objects.count() == 1


def test_the_kelvin_sign_in_a_domain_folds_to_k(api, kit):
    kelvin = make_lead(kit, email="sam@kelvin.example")
    r = _create(api, kit, "v1", "sam@\u212aELVIN.example")
    assert r.status_code == 409 and r.json()["existingLeadId"] == f"lead_{kelvin.pk.hex}"
    assert Lead.objects.count() == 1


@pytest.mark.parametrize("surface", ["v1", "legacy"])
def test_the_domain_is_kept_lower_case_and_as_idna(api, kit, surface):
    r = _create(api, kit, surface, "Ada@Bücher.Example")
    assert r.status_code == 201, r.text
    shown = r.json()["email"] if surface == "v1" else r.json()["lead"]["email"]
    assert shown == "Ada@xn--bcher-kva.example"
    assert Lead.objects.get().email == "Ada@xn--bcher-kva.example"
    # Its A-label, and its U-label in another case, are the same address.
    for email in ("ada@xn--bcher-kva.example", "ada@BÜCHER.example"):
        assert _create(api, kit, surface, email).status_code == 409
    assert Lead.objects.count() == 1


def test_a_domain_idna_refuses_is_a_422_naming_the_field_on_v1(api, kit):
    # The schema's pattern takes it (any letters in a label); IDNA 2008 does not (a symbol).
    r = _create(api, kit, "v1", "ada@☃.example")
    _refused(r, "v1", status=422)
    assert r.json()["error"]["code"] == "unprocessable"
    assert not Lead.objects.exists()


def test_a_domain_idna_refuses_is_a_400_on_the_legacy_surface(api, kit):
    _refused(_create(api, kit, "legacy", "ada@☃.example"), "legacy")
    assert not Lead.objects.exists()


@pytest.mark.parametrize("surface", ["v1", "legacy"])
@pytest.mark.parametrize("email", ['"a\u0001b"@example.com', '"a\tb"@example.com',
                                   "ada@[127.0.0.1]"])
def test_addresses_django_takes_but_the_schemas_do_not_are_refused(api, kit, surface, email):
    _refused(_create(api, kit, surface, email), surface)
    assert not Lead.objects.exists()


@pytest.mark.parametrize("surface", ["v1", "legacy"])
def test_an_update_to_a_look_alike_is_refused_and_to_another_form_is_409(api, kit, surface):
    sam = make_lead(kit, email="sam@example.com")
    other = make_lead(kit, email="other@example.com")
    _refused(_update(api, kit, surface, other, {"email": "ſam@example.com"}), surface)
    r = _update(api, kit, surface, other, {"email": "sam@ＥＸＡＭＰＬＥ.com"})
    assert r.status_code == 409, r.text
    if surface == "v1":
        assert r.json()["existingLeadId"] == f"lead_{sam.pk.hex}"
    other.refresh_from_db()
    assert other.email == "other@example.com"
    # Its own address in another form is its own: kept in the one form.
    r = _update(api, kit, surface, other, {"email": "Other@EXAMPLE.com"})
    assert r.status_code == 200, r.text
    other.refresh_from_db()
    assert other.email == "Other@example.com"


def test_the_request_schemas_refuse_the_look_alikes(db):
    from openapi_schema_validator import OAS30Validator

    from tests.openapi import schema_dict

    for surface, component in (("v1", "LeadCreateRequest"), ("legacy", "LegacyLeadCreateRequest")):
        document = schema_dict(surface)
        schema = {**document["components"]["schemas"][component],
                  "components": document["components"]}
        for email in LOCAL_LOOK_ALIKES + ['"a\u0001b"@example.com', "ada@[127.0.0.1]"]:
            assert not OAS30Validator(schema).is_valid({"name": "Sam", "email": email}), email
        assert OAS30Validator(schema).is_valid({"name": "Sam", "email": "sam@ｅｘａｍｐｌｅ.com"})
