"""The OpenAPI documents describe the lead endpoints, and the responses match them."""

from __future__ import annotations

import pytest
from openapi_schema_validator import OAS30Validator

from tests.factories import make_lead


@pytest.fixture
def v1_schema(api):
    r = api.get("/api/v1/schema", headers={"Accept": "application/json"})
    assert r.status_code == 200
    return r.json()


@pytest.fixture
def legacy_schema(api):
    r = api.get("/api/schema", headers={"Accept": "application/json"})
    assert r.status_code == 200
    return r.json()


def _validate(document, component, instance):
    schema = {"$ref": f"#/components/schemas/{component}", "components": document["components"]}
    OAS30Validator(schema).validate(instance)


def test_v1_paths_and_operations(v1_schema):
    paths = v1_schema["paths"]
    assert set(paths["/api/v1/leads"]) >= {"get", "post"}
    assert set(paths["/api/v1/leads/{id}"]) >= {"get", "patch", "delete"}
    assert "get" in paths["/api/v1/leads/search"]
    params = {p["name"]: p for p in paths["/api/v1/leads"]["get"]["parameters"]}
    assert set(params["status"]["schema"]["enum"]) == {"new", "qualified", "contacted",
                                                       "converted", "lost"}
    assert set(params["sortBy"]["schema"]["enum"]) == {"createdAt", "updatedAt", "score"}
    assert params["createdAfter"]["schema"]["format"] == "date"
    create = paths["/api/v1/leads"]["post"]["responses"]
    assert {"201", "400", "409", "422"} <= set(create)


def test_legacy_paths(legacy_schema):
    paths = legacy_schema["paths"]
    assert "get" in paths["/api/leads"]
    assert set(paths["/api/leads/{id}"]) >= {"get", "patch"}
    assert "post" in paths["/api/admin/leads"]


def test_v1_responses_match_the_schema(api, kit, v1_schema):
    lead = make_lead(kit, name="Ada", custom_fields={"k": "v"}, tags=["t"])
    r = api.get("/api/v1/leads", headers=kit.auth("read"))
    _validate(v1_schema, "LeadList", r.json())
    r = api.get(f"/api/v1/leads/lead_{lead.pk.hex}", headers=kit.auth("read"))
    _validate(v1_schema, "LeadDetail", r.json())
    assert set(r.json()) == set(v1_schema["components"]["schemas"]["LeadDetail"]["properties"])
    r = api.get("/api/v1/leads/search?q=ada", headers=kit.auth("read"))
    _validate(v1_schema, "LeadSearchResults", r.json())
    r = api.post("/api/v1/leads", json={"email": "ada@x.example"}, headers=kit.auth("write"))
    _validate(v1_schema, "LeadDetail", r.json())
    r = api.post("/api/v1/leads", json={"email": "ada@x.example"}, headers=kit.auth("write"))
    _validate(v1_schema, "V1Error", r.json())
    listed = v1_schema["components"]["schemas"]["Lead"]["properties"]
    assert set(api.get("/api/v1/leads", headers=kit.auth("read")).json()["data"][0]) == set(listed)


def test_legacy_responses_match_the_schema(api, kit, legacy_schema):
    lead = make_lead(kit, name="Ada")
    r = api.get("/api/leads", headers=kit.auth("read"))
    _validate(legacy_schema, "LegacyLeadList", r.json())
    assert set(r.json()["leads"][0]) == set(
        legacy_schema["components"]["schemas"]["LegacyLead"]["properties"])
    r = api.get(f"/api/leads/{lead.pk}", headers=kit.auth("read"))
    _validate(legacy_schema, "LegacyLeadEnvelope", r.json())
