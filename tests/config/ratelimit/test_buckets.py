"""Each endpoint counts against its bucket of the specification's per-endpoint table (Starter
plan: chat 30, chat streaming 15, analytics 20, lead create 30, lead search 20 per minute)."""

import pytest

from tests.chat_helpers import chat


@pytest.mark.parametrize("method, path, body, policy, limit", [
    ("POST", "/api/v1/leads", {"email": "bucket@example.com"}, "endpoint.lead_create", 30),
    ("GET", "/api/v1/leads/search?q=bu", None, "endpoint.lead_search", 20),
    ("GET", "/api/v1/analytics/overview", None, "endpoint.analytics", 20),
    ("GET", "/api/v1/analytics/funnel", None, "endpoint.analytics", 20),
    ("POST", "/api/v1/chat", {"message": "Hi", "visitorId": "b"}, "endpoint.chat", 30),
])
def test_the_binding_limit_is_the_endpoints(api, kit, method, path, body, policy, limit):
    r = api.request(method, path, json=body, headers=kit.auth("admin"))
    assert r.status_code in (200, 201), r.content
    assert r.headers["X-RateLimit-Policy"] == policy
    assert r.headers["X-RateLimit-Limit"] == str(limit)
    assert r.headers["X-RateLimit-Remaining"] == str(limit - 1)


def test_widget_loads_count_as_funnel_visitors(api, kit):
    for visitor in ("v1", "v1", "v2"):
        r = api.get(f"/api/widget?tenant={kit.tenant.public_id}&visitorId={visitor}")
        assert r.status_code == 200
    api.get(f"/api/widget?tenant={kit.tenant.public_id}")  # no visitor: not counted
    chat(api, kit, "Hi")  # a visitor too: one who chatted through the API
    stages = api.get("/api/v1/analytics/funnel", headers=kit.auth("read")).json()["stages"]
    assert stages[0]["name"] == "Visitors" and stages[0]["count"] == 3
