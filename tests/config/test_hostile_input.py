"""Input that no endpoint accepts, whatever its fields (config/api/input.py): NUL and lone
surrogates, in query parameters and anywhere inside a JSON body (keys, values, nested objects),
and JSON nested deeper than 64 levels. Each is a 400 in the surface's envelope, names the field
by its path where there is one, and changes nothing. On PostgreSQL these were 500s (``jsonb``
and query parameters refuse NUL; Python's decoder overflows near 1,000 levels)."""

from __future__ import annotations

import json

import pytest

from conversations.models import Conversation
from leads.models import Lead
from tests.factories import make_lead

NUL, SURROGATE = "\u0000", "\udfff"


def _raw(document) -> bytes:
    """JSON text with escapes (``\\u0000``, ``\\udfff``) as a careless client sends it."""
    return json.dumps(document).encode()


def _nested(levels: int) -> bytes:
    return b'{"a":' * levels + b"1" + b"}" * levels


def _v1_details(r, status: int = 400) -> list[dict]:
    assert r.status_code == status, r.content
    error = r.json()["error"]
    assert error["code"] == "invalid_request"
    return error["details"]


def _legacy_error(r) -> str:
    assert r.status_code == 400, r.content
    assert set(r.json()) == {"error"}
    return r.json()["error"]


# --- query parameters --------------------------------------------------------------------------

@pytest.mark.parametrize("path", ["/api/widget?tenant=%00", "/api/widget?tenant=tn_%00x",
                                  "/api/chat/stream?tenant=%00&sessionId=s&visitorId=v"])
def test_a_nul_in_a_public_query_parameter_is_a_legacy_400(api, path):
    assert "tenant" in _legacy_error(api.get(path))


def test_a_nul_in_the_chat_tenant_is_a_400_and_starts_no_conversation(api, kit):
    r = api.post("/api/chat?tenant=%00", json={"message": "Hi", "visitorId": "v-1"})
    assert "tenant" in _legacy_error(r)
    r = api.post("/api/chat", content=_raw({"tenant": NUL, "message": "Hi", "visitorId": "v-1"}),
                 headers={"Content-Type": "application/json"})
    assert "tenant" in _legacy_error(r)
    assert not Conversation.objects.exists()


def test_a_nul_in_a_v1_query_parameter_names_it(api, kit):
    details = _v1_details(api.get("/api/v1/leads?status=%00&limit=5", headers=kit.auth("read")))
    assert [d["field"] for d in details] == ["status"]
    details = _v1_details(api.get("/api/v1/leads/search?q=ab%00", headers=kit.auth("read")))
    assert [d["field"] for d in details] == ["q"]


def test_a_nul_in_a_path_is_a_404(api, kit):
    r = api.get("/api/v1/leads/lead_%00", headers=kit.auth("read"))
    assert r.status_code == 404 and r.json()["error"]["code"] == "not_found"


# --- object fields -------------------------------------------------------------------------------

@pytest.mark.parametrize(("custom_fields", "field"), [
    ({"a": NUL}, "customFields.a"),
    ({"a": f"x{SURROGATE}y"}, "customFields.a"),
    ({"a": {"b": [1, f"ok{NUL}"]}}, "customFields.a.b[1]"),
    ({f"k{NUL}": "v"}, "customFields.k\\u0000"),
    ({SURROGATE: "v"}, "customFields.\\udfff"),
])
def test_v1_lead_create_refuses_bad_text_inside_custom_fields(api, kit, custom_fields, field):
    body = _raw({"email": "ada@example.com", "customFields": custom_fields})
    r = api.post("/api/v1/leads", content=body,
                 headers={**kit.auth("write"), "Content-Type": "application/json"})
    assert [d["field"] for d in _v1_details(r)] == [field]
    assert not Lead.objects.exists()


def test_v1_lead_update_refuses_bad_text_and_changes_nothing(api, kit):
    lead = make_lead(kit, email="ada@example.com", custom_fields={"plan": "pro"})
    r = api.patch(f"/api/v1/leads/lead_{lead.pk.hex}",
                  content=_raw({"customFields": {"plan": SURROGATE}, "company": "Acme"}),
                  headers={**kit.auth("write"), "Content-Type": "application/json"})
    assert [d["field"] for d in _v1_details(r)] == ["customFields.plan"]
    lead.refresh_from_db()
    assert (lead.custom_fields, lead.company) == ({"plan": "pro"}, "")


def test_legacy_lead_writes_refuse_bad_text_in_metadata(api, kit):
    lead = make_lead(kit, email="ada@example.com")
    assert api.post("/api/admin/auth", json={"token": kit.admin_token}).status_code == 200
    headers = {**kit.auth("admin"), "Content-Type": "application/json"}
    r = api.post("/api/admin/leads", headers=headers,
                 content=_raw({"email": "bob@example.com", "metadata": {"src": NUL}}))
    assert "metadata.src" in _legacy_error(r)
    r = api.patch(f"/api/leads/{lead.pk}", headers=headers,
                  content=_raw({"metadata": {"a": {"b": SURROGATE}}}))
    assert "metadata.a.b" in _legacy_error(r)
    assert list(Lead.objects.values_list("email", "custom_fields")) == [("ada@example.com", {})]


def test_chat_refuses_bad_text_in_metadata_on_both_surfaces(api, kit):
    r = api.post(f"/api/chat?tenant={kit.tenant.public_id}", headers={"Content-Type": "application/json"},
                 content=_raw({"message": "Hi", "visitorId": "v-1", "metadata": {"page": NUL}}))
    assert "metadata.page" in _legacy_error(r)
    r = api.post("/api/v1/chat", headers={**kit.auth("write"), "Content-Type": "application/json"},
                 content=_raw({"message": "Hi", "visitorId": "v-1", "metadata": {SURROGATE: 1}}))
    assert [d["field"] for d in _v1_details(r)] == ["metadata.\\udfff"]
    assert not Conversation.objects.exists()


# --- depth ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("levels", [65, 1_000, 100_000])
def test_json_nested_too_deep_is_a_400_on_every_surface(api, kit, levels):
    body = _nested(levels)
    r = api.post("/api/v1/leads", content=body,
                 headers={**kit.auth("write"), "Content-Type": "application/json"})
    assert "nested deeper than 64" in r.json()["error"]["message"] and r.status_code == 400
    for path in (f"/api/chat?tenant={kit.tenant.public_id}", "/api/admin/auth"):
        r = api.post(path, content=body, headers={"Content-Type": "application/json"})
        assert "nested deeper than 64" in _legacy_error(r)
    assert not Lead.objects.exists() and not Conversation.objects.exists()


def test_json_64_levels_deep_is_parsed(api, kit):
    """The limit refuses depth, not objects: 64 levels reach the endpoint's own validation."""
    r = api.post("/api/v1/leads", content=b'{"customFields":' + _nested(63) + b"}",
                 headers={**kit.auth("write"), "Content-Type": "application/json"})
    assert "nested deeper" not in r.text
    assert r.status_code in (201, 400), r.content


# --- hygiene -------------------------------------------------------------------------------------

@pytest.mark.parametrize(("path", "scope"), [
    ("/api/v1/leads", "read"), ("/api/v1/leads/lead_00000000000000000000000000000000", "read"),
    ("/api/v1/conversations", "read"), ("/api/leads", "read"), ("/api/analytics/overview", "read"),
])
def test_answers_with_tenant_data_are_never_stored_by_a_cache(api, kit, path, scope):
    make_lead(kit, email="ada@example.com")
    r = api.get(path, headers=kit.auth(scope))
    assert r.headers["cache-control"] == "no-store", (r.status_code, dict(r.headers))


def test_the_widget_configuration_keeps_its_own_cache_policy(api, kit):
    r = api.get(f"/api/widget?tenant={kit.tenant.public_id}")
    assert r.status_code == 200 and r.headers["cache-control"] == "public, max-age=60"


# --- dates at the edges of the calendar ----------------------------------------------------------

@pytest.mark.parametrize("query", [
    "/api/v1/analytics/overview?endDate=9999-12-31",
    "/api/v1/analytics/overview?startDate=0001-01-01&endDate=0001-01-31&compareWith=previous_year",
    "/api/v1/analytics/overview?startDate=0001-01-01&endDate=0001-01-31&compareWith=previous_period",
    "/api/v1/analytics/funnel?channel=slack&endDate=0001-01-01",
    "/api/v1/analytics/activity?startDate=0001-01-01T00:00:00Z",
    "/api/v1/analytics/activity?endDate=9999-12-31",
    "/api/v1/leads?createdBefore=9999-12-31",
    "/api/v1/leads?createdAfter=0001-01-01",
    "/api/v1/conversations?startDate=0001-01-01",
    "/api/v1/conversations?endDate=9999-12-31T23:59:59Z",
])
def test_a_date_outside_the_supported_days_is_out_of_range(api, kit, query):
    details = _v1_details(api.get(query, headers=kit.auth("read")))
    assert details and {d["code"] for d in details} == {"out_of_range"}, details
    assert all("1900-01-01 and 9998-12-31" in d["message"] for d in details)


def test_the_last_supported_days_still_answer(api, kit):
    for query in ("/api/v1/analytics/overview?startDate=9998-01-01&endDate=9998-12-31",
                  "/api/v1/analytics/overview?startDate=1900-01-01&endDate=1900-01-31"
                  "&compareWith=previous_year",
                  "/api/v1/leads?createdBefore=9998-12-31&createdAfter=1900-01-01"):
        r = api.get(query, headers=kit.auth("read"))
        assert r.status_code in (200, 422), (query, r.status_code, r.text)


def test_bidirectional_overrides_are_refused_and_right_to_left_text_is_not(api, kit):
    headers = {**kit.auth("write"), "Content-Type": "application/json"}
    r = api.post("/api/v1/leads", headers=headers,
                 content=_raw({"email": "rtl@example.com", "name": "invoice\u202efdp.exe"}))
    assert [(d["field"], d["message"]) for d in _v1_details(r)] == [
        ("name", "Bidirectional control characters are not allowed: U+202E.")]
    r = api.post("/api/v1/leads", headers=headers,
                 content=_raw({"email": "rtl@example.com", "name": "\u200fمحمد علي", "company": "שלום"}))
    assert r.status_code == 201 and r.json()["name"] == "\u200fمحمد علي"
