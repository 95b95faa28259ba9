"""The OpenAPI schemas of both surfaces: public, valid, complete. (Every response in the suite
is also validated against them: see tests/openapi.py.)"""

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
