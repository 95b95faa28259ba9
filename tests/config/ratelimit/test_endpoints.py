"""The real endpoints sit in their buckets (docs/rate-limits.md) and take Idempotency-Key."""

from config.ratelimit import policy
from leads.models import Lead
from tests.limits import assert_v1_429, preset, standing, v1_identity


def test_lead_create_has_its_own_limit(api, kit, clock):
    preset(v1_identity(kit, "write"), "endpoint.lead_create", 29)
    r = api.post("/api/v1/leads", json={"email": "ada@example.com"}, headers=kit.auth("write"))
    assert r.status_code == 201
    assert standing(r) == ("endpoint.lead_create", 0) and r.headers["X-RateLimit-Limit"] == "30"
    r = api.post("/api/v1/leads", json={"email": "bob@example.com"}, headers=kit.auth("write"))
    assert_v1_429(r, limit=30, policy_name="endpoint.lead_create", retry_after=50)
    # Listing leads is "all other endpoints".
    assert standing(api.get("/api/v1/leads", headers=kit.auth("write")))[0] == "minute"


def test_lead_search_has_its_own_limit(api, kit, clock):
    preset(v1_identity(kit, "read"), "endpoint.lead_search", 20)
    r = api.get("/api/v1/leads/search?q=ada", headers=kit.auth("read"))
    assert_v1_429(r, limit=20, policy_name="endpoint.lead_search", retry_after=50)


def test_chat_and_streaming_chat_have_their_own_limits(api, kit, clock):
    body = {"message": "Hello", "visitorId": "v-1"}
    r = api.post("/api/v1/chat", json=body, headers=kit.auth("write"))
    assert r.status_code == 200
    assert standing(r) == ("endpoint.chat", 29)
    api.validate_schema = False  # the chat's schema documents its JSON answer, not the stream
    r = api.post("/api/v1/chat", json={**body, "stream": True},
                 headers={**kit.auth("write"), "Accept": "text/event-stream"})
    api.validate_schema = True
    assert r.status_code == 200 and "message_end" in r.text
    assert standing(r) == ("endpoint.chat_stream", 14)
    preset(v1_identity(kit, "write"), "endpoint.chat_stream", 15)
    r = api.post("/api/v1/chat", json={**body, "stream": True}, headers=kit.auth("write"))
    assert_v1_429(r, limit=15, policy_name="endpoint.chat_stream", retry_after=50)
    assert api.post("/api/v1/chat", json=body, headers=kit.auth("write")).status_code == 200


def test_public_chat_is_limited_per_address_and_per_tenant(api, kit, clock):
    r = api.post(f"/api/chat?tenant={kit.tenant.public_id}", json={"message": "Hi", "visitorId": "w"})
    assert r.status_code == 200 and standing(r) == ("address", 19)
    preset(policy.tenant_identity(kit.tenant, "public_chat"), "tenant", 120)
    r = api.post("/api/chat", json={"message": "Hi", "visitorId": "w", "tenant": kit.tenant.public_id})
    assert r.status_code == 429 and r.headers["X-RateLimit-Policy"] == "tenant"
    assert set(r.json()) == {"error"} and r.headers["Retry-After"] == "50"


def test_lead_create_replays_with_the_same_idempotency_key(api, kit):
    headers = {**kit.auth("write"), "Idempotency-Key": "lead-ada-1"}
    first = api.post("/api/v1/leads", json={"email": "ada@example.com", "name": "Ada"}, headers=headers)
    again = api.post("/api/v1/leads", json={"name": "Ada", "email": "ada@example.com"}, headers=headers)
    assert first.status_code == again.status_code == 201
    assert again.json() == first.json() and again.headers["Idempotent-Replayed"] == "true"
    assert Lead.objects.filter(tenant=kit.tenant).count() == 1
    # Without the key, the retry is a second create: the duplicate email is a 409.
    assert api.post("/api/v1/leads", json={"email": "ada@example.com"},
                    headers=kit.auth("write")).status_code == 409


def test_widget_configuration_is_limited_per_address_and_per_tenant(api, kit, clock):
    r = api.get(f"/api/widget?tenant={kit.tenant.public_id}")
    assert r.status_code == 200 and standing(r) == ("address", 119)
    preset(policy.tenant_identity(kit.tenant, "public_widget"), "tenant", 1_200)
    r = api.get(f"/api/widget?tenant={kit.tenant.public_id}")
    assert r.status_code == 429 and r.headers["X-RateLimit-Policy"] == "tenant"
    assert "1200 requests per minute" in r.json()["error"]
    r = api.get("/api/widget?tenant=tn_unknown")  # an unknown tenant: per address only
    assert r.status_code == 404 and standing(r) == ("address", 118)


def test_the_widgets_live_stream_counts_with_the_widget(api, kit, clock):
    r = api.get(f"/api/chat/stream?tenant={kit.tenant.public_id}&sessionId=00000000-0000-0000-0000-"
                "000000000000&visitorId=v")
    assert r.status_code == 404 and standing(r) == ("address", 119)
    assert r.headers["X-RateLimit-Limit"] == "120"
