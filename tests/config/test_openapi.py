"""The OpenAPI schemas of both surfaces: public, valid, complete. (Every response in the suite
is also validated against them: see tests/openapi.py.)"""

import json
import re

import pytest
import yaml
from openapi_spec_validator import validate


def _schema(api, path):
    r = api.get(path)
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("application/vnd.oai.openapi+json")
    return r.json()


def test_v1_schema_is_public_valid_and_describes_the_routes(api, db):
    schema = _schema(api, "/api/v1/schema")
    validate(schema)
    assert "/api/v1/users" in schema["paths"] and "/api/v1/users/{id}" in schema["paths"]
    assert not any(p.startswith("/api/") and not p.startswith("/api/v1/") for p in schema["paths"])
    assert schema["components"]["securitySchemes"]["apiKey"]["scheme"] == "bearer"
    listing = schema["paths"]["/api/v1/users"]["get"]
    assert {"400", "401", "403", "429", "500"} <= set(listing["responses"])
    assert {p["name"] for p in listing["parameters"]} == {"page", "limit"}
    error = schema["components"]["schemas"]["V1ErrorBody"]
    assert set(error["required"]) == {"code", "message", "doc_url"}
    code = error["properties"]["code"]
    enum = code.get("enum") or _resolve(schema, code["allOf"][0] if "allOf" in code else code)["enum"]
    assert "unprocessable" in enum and "rate_limit_exceeded" in enum


def test_the_agents_phrasings_are_in_the_v1_schema(api, db):
    schema = _schema(api, "/api/v1/schema")
    phrasings = schema["paths"]["/api/v1/agent/phrasings"]
    assert {"get", "post"} <= set(phrasings)
    assert {"409", "422", "400"} <= set(phrasings["post"]["responses"])
    assert "delete" in schema["paths"]["/api/v1/agent/phrasings/{id}"]
    phrasing = schema["components"]["schemas"]["AgentPhrasing"]
    assert phrasing["properties"]["id"]["pattern"] == "^phr_[0-9a-f]{32}$"
    body = operation_body(schema, "/api/v1/agent/phrasings")
    assert (body["properties"]["text"]["minLength"], body["properties"]["text"]["maxLength"]) == (
        1, 300)
    assert set(body["required"]) == {"decision", "text"}


def test_legacy_schema_is_public_valid_and_separate(api, db):
    schema = _schema(api, "/api/schema")
    validate(schema)
    assert {"/api/health", "/api/admin/auth"} <= set(schema["paths"])
    assert not any(p.startswith("/api/v1/") for p in schema["paths"])
    assert schema["components"]["securitySchemes"]["adminCookie"]["in"] == "cookie"
    # Public endpoints need no authentication.
    assert schema["paths"]["/api/health"]["get"].get("security", []) in ([], [{}])
    assert {"apiKey": []} in schema["paths"]["/api/admin/auth"]["get"]["security"]


def test_swagger_ui_is_served_with_its_own_assets(api, db):
    r = api.get("/api/v1/docs")
    assert r.status_code == 200
    assert "/api/v1/schema" in r.text
    assert "cdn." not in r.text and "jsdelivr" not in r.text  # no third-party requests


def _resolve(schema, node):
    ref = node["$ref"]
    name = ref.rsplit("/", 1)[1]
    return schema["components"]["schemas"][name]


def test_chat_schemas_describe_the_time_zone_and_a_slot_actions_metadata(api, db):
    for path, operation in (("/api/v1/schema", "/api/v1/chat"), ("/api/schema", "/api/chat")):
        schema = _schema(api, path)
        action = schema["components"]["schemas"]["SuggestedAction"]
        assert action["properties"]["metadata"]["type"] == "object"
        assert "slot" in action["properties"]["metadata"]["description"]
        body = operation_body(schema, operation)
        described = body["properties"]["metadata"]["description"]
        assert "timezone" in described and "IANA" in described and "slot" in described


def operation_body(schema, path):
    content = schema["paths"][path]["post"]["requestBody"]["content"]["application/json"]
    return _resolve(schema, content["schema"])


# --- query parameters: generated from each endpoint's query serializer ----------------------------

def _query_parameters(schema):
    """(path, method, parameter) of every query parameter of the schema."""
    for path, item in schema["paths"].items():
        for method, operation in item.items():
            for parameter in operation.get("parameters", []):
                if parameter["in"] == "query":
                    yield path, method, parameter


def _parameter(schema, path, name, method="get"):
    return next(p for p in schema["paths"][path][method]["parameters"] if p["name"] == name)


@pytest.mark.parametrize("surface", ["/api/v1/schema", "/api/schema"])
def test_every_query_parameter_states_its_limits(api, db, surface):
    """No parameter is a bare ``integer`` or ``string``: numbers have their minimum and maximum,
    text its enum, pattern, format or length, so a client (or a fuzzer) knows what is valid."""
    schema = _schema(api, surface)
    bare = []
    for path, method, parameter in _query_parameters(schema):
        stated = parameter["schema"]
        if (path, parameter["name"]) == ("/api/chat", "tenant"):
            continue  # any text: an unknown tenant is a 404, not a bad parameter
        if stated.get("type") == "integer":
            ok = "minimum" in stated and "maximum" in stated
        elif stated.get("type") == "string":
            ok = any(key in stated for key in ("enum", "pattern", "format", "maxLength"))
        else:
            ok = "anyOf" in stated or stated.get("type") == "boolean"
        if not ok:
            bare.append((method, path, parameter["name"], stated))
    assert bare == []


@pytest.mark.parametrize(("surface", "path", "default"), [
    ("/api/v1/schema", "/api/v1/leads", 25), ("/api/v1/schema", "/api/v1/leads/search", 25),
    ("/api/v1/schema", "/api/v1/conversations", 25), ("/api/v1/schema", "/api/v1/users", 25),
    ("/api/v1/schema", "/api/v1/webhooks", 25), ("/api/v1/schema", "/api/v1/knowledge-base", 25),
    ("/api/v1/schema", "/api/v1/webhooks/{id}/deliveries", 25),
    ("/api/v1/schema", "/api/v1/agent/phrasings", 25),
    ("/api/v1/schema", "/api/v1/analytics/activity", 50),
    ("/api/schema", "/api/leads", 50), ("/api/schema", "/api/admin/knowledge-base", 50),
    ("/api/schema", "/api/leads/{id}/conversations", 20),
])
def test_page_and_limit_state_their_range_and_default(api, db, surface, path, default):
    schema = _schema(api, surface)
    limit = _parameter(schema, path, "limit")
    assert limit["schema"] == {"type": "integer", "minimum": 1, "maximum": 100, "default": default}
    assert limit["description"].startswith(("Items per page", "Leads per page",
                                            "Documents per page", "Conversations per page"))
    page = _parameter(schema, path, "page")
    assert page["schema"]["minimum"] == 1 and page["schema"]["default"] == 1
    assert page["description"] == "Page number, from 1."


def test_v1_enums_dates_and_ids_are_stated(api, db):
    schema = _schema(api, "/api/v1/schema")
    status = _parameter(schema, "/api/v1/leads", "status")["schema"]
    assert set(status["enum"]) == {"new", "qualified", "contacted", "converted", "lost"}
    assert status["minLength"] == 1  # an empty value is no status
    assert _parameter(schema, "/api/v1/leads", "sortBy")["schema"]["default"] == "createdAt"
    after = _parameter(schema, "/api/v1/leads", "createdAfter")
    assert after["schema"]["format"] == "date" and after["schema"]["pattern"].startswith("^")
    assert "created on or after it" in after["description"]
    assert "1900-01-01 to 9998-12-31" in after["description"]
    for path in ("/api/v1/analytics/activity", "/api/v1/conversations"):
        start = _parameter(schema, path, "startDate")["schema"]
        assert [s["format"] for s in start["anyOf"]] == ["date", "date-time"]
    granularity = _parameter(schema, "/api/v1/analytics/overview", "granularity")["schema"]
    assert granularity["enum"] == ["day", "week", "month"] and granularity["default"] == "day"
    lead_id = _parameter(schema, "/api/v1/analytics/activity", "leadId")["schema"]
    assert lead_id["pattern"] == "^lead_[0-9a-f]{32}$"
    types = _parameter(schema, "/api/v1/analytics/activity", "type")
    assert r"lead\.created" in types["schema"]["pattern"] and "lead.created" in types["description"]
    q = _parameter(schema, "/api/v1/leads/search", "q")
    assert q["required"] and q["schema"]["minLength"] == 2 and q["schema"]["maxLength"] == 200
    assert "custom field values" in q["description"]
    limit = _parameter(schema, "/api/v1/conversations/{id}", "messageLimit")["schema"]
    assert (limit["minimum"], limit["maximum"]) == (1, 200)


def test_legacy_parameters_are_stated(api, db):
    schema = _schema(api, "/api/schema")
    q = _parameter(schema, "/api/leads", "q")
    assert "at least 2 characters" in q["description"]
    session = _parameter(schema, "/api/chat/stream", "sessionId")
    assert session["required"] and session["schema"]["format"] == "uuid"
    tenant = _parameter(schema, "/api/widget", "tenant")
    assert tenant["required"] and tenant["schema"]["maxLength"] == 40


def test_every_operation_may_answer_503_with_retry_after(api, db):
    """A server the service depends on may be gone at any time (docs/security.md, "Under
    faults"): every operation of both surfaces documents the 503 and its Retry-After."""
    for path in ("/api/v1/schema", "/api/schema"):
        schema = _schema(api, path)
        for route, item in schema["paths"].items():
            for method, operation in item.items():
                if method not in ("get", "post", "patch", "put", "delete"):
                    continue
                unavailable = operation["responses"].get("503")
                assert unavailable, f"{method.upper()} {route} does not document 503"
                assert "Retry-After" in unavailable["headers"], f"{method.upper()} {route}"


# Characters a YAML document may not hold raw (outside YAML's c-printable; U+0085, a line break
# to YAML 1.1), which a JSON string may.
_NOT_YAML = re.compile("[^\t\n\r\x20-\x7e\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


@pytest.mark.parametrize("surface", ["/api/v1/schema", "/api/schema"])
def test_the_schema_is_strict_json_and_strict_yaml(api, db, surface):
    """A YAML parser (as many OpenAPI tools read a schema, JSON being YAML) refused the served
    schema: the email pattern held a raw U+FFFF, which YAML forbids (issue 28). The JSON escapes
    what YAML forbids, and a YAML variant is served; each reads back, strictly, as the same
    schema."""
    served = api.get(surface)
    assert served.status_code == 200
    assert served.headers["content-type"].startswith("application/vnd.oai.openapi+json")
    text = served.content.decode("utf-8")
    raw = _NOT_YAML.search(text)
    assert raw is None, f"a raw {raw.group()!r} at character {raw.start()}"
    schema = json.loads(text)
    assert yaml.safe_load(text) == schema  # JSON is YAML
    assert json.loads(api.get(surface + "?format=json").content) == schema
    for request in ({"path": surface + "?format=yaml"},
                    {"path": surface, "headers": {"Accept": "application/yaml"}},
                    {"path": surface, "headers": {"Accept": "application/vnd.oai.openapi"}}):
        r = api.get(request["path"], headers=request.get("headers", {}))
        assert r.status_code == 200, (request, r.content[:300])
        assert r.headers["content-type"].split(";")[0] in ("application/yaml",
                                                           "application/vnd.oai.openapi")
        assert yaml.safe_load(r.content.decode("utf-8")) == schema, request
        assert r.headers["content-disposition"].endswith('.yaml"')
    assert api.get(surface).headers["content-disposition"].endswith('.json"')


def test_every_character_yaml_forbids_is_escaped_in_the_json():
    """Whatever a future pattern or description holds: C0 and C1 controls, DEL, NEL, the
    noncharacters U+FFFE and U+FFFF, beside text that stays as it is."""
    from config.api.renderers import OpenApiJsonRenderer

    data = {"pattern": "[\x00-\x1f\x7f\x80-\x9f\x85\ufffe\uffff]", "é": "ü \u2028 \U0001f600 \t"}
    text = OpenApiJsonRenderer().render(data).decode("utf-8")
    assert _NOT_YAML.search(text) is None, text
    assert json.loads(text) == data and yaml.safe_load(text) == data
    assert "ü" in text and "\U0001f600" in text  # readable text is not escaped
