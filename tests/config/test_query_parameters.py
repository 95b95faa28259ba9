"""Query parameters: the OpenAPI schemas and the endpoints agree on every value (config/api/query.py).

Each value below is checked against the parameter's schema, as a client or a fuzzer reads it
(formats included), and sent to the endpoint: a value the schema accepts is never a 400, and a
value it refuses always is. An empty value (``?startDate=``) is a 400 like any value that is not
a date, number or choice; leaving the parameter out gives its default."""

from __future__ import annotations

import re
from urllib.parse import urlencode

import pytest
from openapi_schema_validator import OAS30Validator, oas30_format_checker

from tests.openapi import schema_dict

DAYS = ["2026-11-21", "1900-01-01", "9998-12-31", "1899-12-31", "9999-01-01", "0001-01-01",
        "2026-02-29", "2028-02-29", "2026-13-01", "2026-11-31", "20261121", "2026-1-5",
        "2026-W47-6", "２０２６-11-21", " 2026-11-21", "2026-11-21 ", "tomorrow", ""]
MOMENTS = ["2026-11-21T10:00:00Z", "2026-11-21T10:00:00.123+05:30", "2026-11-21T10:00:00.5-00:00",
           "2026-11-21T10:00:00.1234567891Z", "2026-11-21T10:00Z", "2026-11-21T10:00:00",
           "2026-11-21 10:00:00Z", "2026-11-21T24:00:00Z", "2026-11-21T10:00:60Z",
           "2026-11-21T10:00:00+24:00", "2026-11-21t10:00:00z", "9998-12-31T23:59:59-05:00",
           "1900-01-01T00:00:00+05:00", "1899-12-31T23:00:00Z", "9999-01-01T00:00:00Z"]
LIMITS = ["1", "100", "0", "101", "-1", "abc", ""]


def _cases():
    for value in DAYS:
        yield "/api/v1/leads", "createdAfter", value
        yield "/api/v1/analytics/overview", "endDate", value
    for value in DAYS + MOMENTS:
        yield "/api/v1/conversations", "startDate", value
        yield "/api/v1/analytics/activity", "endDate", value
    for value in ["lead.created", "lead.created,meeting.booked", "lead.created , meeting.booked",
                  " lead.created", "lead.created,", ",lead.created", "lead.created,,meeting.booked",
                  "lead.exploded", "LEAD.CREATED", ""]:
        yield "/api/v1/analytics/activity", "type", value
    for value in [f"lead_{'a' * 32}", f"lead_{'A' * 32}", f"conv_{'a' * 32}", "lead_1", ""]:
        yield "/api/v1/analytics/activity", "leadId", value
    for value in ["ab", " ab ", "a b", "a", " a", "  ", "", "x" * 200, "x" * 201]:
        yield "/api/v1/leads/search", "q", value
    for value in ["new", "New", "disqualified", ""]:
        yield "/api/v1/leads", "status", value
    for value in ["true", "false", "1", "maybe", ""]:
        yield "/api/v1/conversations/{id}", "includeMessages", value
    for path in ("/api/v1/leads", "/api/v1/users", "/api/v1/analytics/activity", "/api/leads",
                 "/api/admin/knowledge-base"):
        for value in LIMITS:
            yield path, "limit", value
    for value in ["", " ", "  ", "a", " a", "ab", " ab "]:
        yield "/api/leads", "q", value


def _parameter_schema(path: str, name: str) -> dict:
    document = schema_dict("v1" if path.startswith("/api/v1/") else "legacy")
    parameter = next(p for p in document["paths"][path]["get"]["parameters"] if p["name"] == name)
    return {**parameter["schema"], "components": document["components"]}


def _as_typed(schema: dict, value: str):
    """The query string's text as the schema's type reads it: a number; a boolean, spelt true,
    false, 1 or 0 (as fuzzers read a boolean in a URL; DRF also reads yes/no and on/off)."""
    if schema.get("type") == "integer" and re.fullmatch(r"-?[0-9]+", value):
        return int(value)
    if schema.get("type") == "boolean" and value in ("true", "false", "1", "0"):
        return value in ("true", "1")
    return value


@pytest.mark.parametrize(("path", "name", "value"), list(_cases()))
def test_the_schema_and_the_endpoint_agree_on_each_value(api, kit, path, name, value):
    schema = _parameter_schema(path, name)
    valid = OAS30Validator(schema, format_checker=oas30_format_checker).is_valid(
        _as_typed(schema, value))
    if path == "/api/v1/conversations/{id}":
        path = f"/api/v1/conversations/conv_{'0' * 32}"  # 404 once the parameters are valid
    params = {name: value}
    if path == "/api/v1/leads/search" and name != "q":
        params["q"] = "ada"
    r = api.get(f"{path}?{urlencode(params)}", headers=kit.auth("admin"))
    assert (r.status_code != 400) == valid, (value, schema, r.status_code, r.text)
    if r.status_code == 400 and path.startswith("/api/v1/"):
        assert [d["field"] for d in r.json()["error"]["details"]] == [name]


@pytest.mark.parametrize("path", ["/api/v1/leads?page=", "/api/v1/leads?limit=",
                                  "/api/v1/analytics/overview?granularity=",
                                  "/api/v1/analytics/funnel?channel=",
                                  "/api/v1/conversations?sortBy=", "/api/v1/webhooks?page=",
                                  "/api/v1/knowledge-base?type=", "/api/v1/users?limit="])
def test_an_empty_value_is_refused_and_named(api, kit, path):
    r = api.get(path, headers=kit.auth("admin"))
    assert r.status_code == 400
    name = path.rsplit("?", 1)[1].rstrip("=")
    assert r.json()["error"]["details"] == [{
        "field": name, "code": "invalid_format",
        "message": "Must not be empty: leave the parameter out for its default."}]


def test_a_legacy_empty_value_is_refused_but_an_empty_search_lists_every_lead(api, kit):
    r = api.get("/api/leads?page=", headers=kit.auth("read"))
    assert r.status_code == 400 and r.json() == {
        "error": "page: Must not be empty: leave the parameter out for its default."}
    assert api.get("/api/leads?q=", headers=kit.auth("read")).status_code == 200


def test_the_parameters_left_out_take_their_defaults(api, kit):
    r = api.get("/api/v1/analytics/activity", headers=kit.auth("read"))
    assert r.status_code == 200 and r.json()["pagination"]["limit"] == 50
    r = api.get("/api/v1/leads", headers=kit.auth("read"))
    assert r.status_code == 200 and r.json()["pagination"] == {
        "page": 1, "limit": 25, "total": 0, "totalPages": 0, "hasMore": False}


def test_a_kept_answer_is_the_answer_of_its_own_query_string(api, kit):
    """A valid query string's validated parameters are kept (config/api/query.py): the same
    string gets the same answer, another string its own, and a refused one is refused each
    time, never answered from what was kept."""
    for _ in range(2):
        for limit in ("1", "2", "1"):
            r = api.get(f"/api/v1/leads?limit={limit}", headers=kit.auth("read"))
            assert r.status_code == 200
            assert r.json()["pagination"]["limit"] == int(limit)
        for bad in ("0", "abc", ""):
            r = api.get(f"/api/v1/leads?limit={bad}", headers=kit.auth("read"))
            assert r.status_code == 400
            assert r.json()["error"]["details"][0]["field"] == "limit"
    r = api.get("/api/v1/leads?limit=1&status=qualified", headers=kit.auth("read"))
    assert r.status_code == 200
    r = api.get("/api/v1/conversations?limit=1&status=qualified", headers=kit.auth("read"))
    assert r.status_code == 400  # another serializer: its own answer, not the leads'
