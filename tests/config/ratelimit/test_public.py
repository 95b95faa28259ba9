"""Public endpoints: limited per client address, and per tenant where the request names one."""

import pytest

from config.ratelimit import client_address, policy, tables
from tests.limits import preset, standing

HEALTH = "/api/health"


@pytest.fixture
def probes(settings):
    settings.ROOT_URLCONF = "tests.urls_limits"


def _from(address: str) -> dict[str, str]:
    return {"X-Forwarded-For": f"203.0.113.99, {address}"}


def test_health_allows_60_requests_a_minute_per_address(api, clock, db):
    for n in range(1, 61):
        r = api.get(HEALTH)
        assert r.status_code == 200
        assert standing(r) == ("address", 60 - n)
    r = api.get(HEALTH)
    assert r.status_code == 429
    assert set(r.json()) == {"error"} and "60 requests per minute per client address" in r.json()["error"]
    assert r.headers["Retry-After"] == "50" and r.headers["X-RateLimit-Remaining"] == "0"
    clock.advance(60)
    assert api.get(HEALTH).status_code == 200


def test_forwarded_addresses_count_only_behind_a_trusted_proxy(api, clock, db, settings):
    settings.TRUST_X_FORWARDED_FOR = False
    preset(policy.address_identity("127.0.0.1", "public_health"), "address", 60)
    assert api.get(HEALTH, headers=_from("198.51.100.7")).status_code == 429  # header ignored
    settings.TRUST_X_FORWARDED_FOR = True
    r = api.get(HEALTH, headers=_from("198.51.100.7"))
    assert r.status_code == 200 and r.headers["X-RateLimit-Remaining"] == "59"
    # The entry the proxy appended is the last one; what the client wrote before it is ignored.
    r = api.get(HEALTH, headers={"X-Forwarded-For": "198.51.100.8, 198.51.100.7"})
    assert r.headers["X-RateLimit-Remaining"] == "58"


def test_client_address_rules(rf, settings):
    settings.TRUST_X_FORWARDED_FOR = True
    request = rf.get("/", REMOTE_ADDR="10.0.0.1", HTTP_X_FORWARDED_FOR="2001:db8:1:2:3:4:5:6")
    assert client_address(request) == "2001:db8:1:2::/64"  # one budget per IPv6 /64
    request = rf.get("/", REMOTE_ADDR="::ffff:192.0.2.1")
    assert client_address(request) == "192.0.2.1"
    settings.TRUST_X_FORWARDED_FOR = False
    assert client_address(rf.get("/", REMOTE_ADDR="")) == "unknown"


def test_public_chat_is_limited_per_address_and_per_tenant(api, kit, stranger, clock, probes,
                                                         settings):
    settings.TRUST_X_FORWARDED_FOR = True
    body = {"tenantId": kit.tenant.public_id, "message": "hi"}
    visitor = {"X-Forwarded-For": "198.51.100.10"}
    for n in range(1, 21):
        r = api.post("/api/_probe/chat", json=body, headers=visitor)
        assert r.status_code == 200
        assert standing(r) == ("address", 20 - n)
    r = api.post("/api/_probe/chat", json=body, headers=visitor)
    assert r.status_code == 429 and "20 requests per minute per client address" in r.json()["error"]
    # Another visitor of the same tenant is not blocked by the first one...
    r = api.post("/api/_probe/chat", json=body, headers={"X-Forwarded-For": "198.51.100.20"})
    assert r.status_code == 200
    # ...until the tenant's public chat budget (Starter: 120 a minute) is used up.
    preset(policy.tenant_identity(kit.tenant, "public_chat"), "tenant", 120)
    r = api.post("/api/_probe/chat", json=body, headers={"X-Forwarded-For": "198.51.100.21"})
    assert r.status_code == 429 and r.headers["X-RateLimit-Policy"] == "tenant"
    assert "120 requests per minute" in r.json()["error"]
    # Another tenant's visitors are unaffected.
    r = api.post("/api/_probe/chat", json={"tenantId": stranger.tenant.public_id},
                 headers={"X-Forwarded-For": "198.51.100.22"})
    assert r.status_code == 200


@pytest.mark.parametrize("plan", ["starter", "growth", "enterprise"])
@pytest.mark.parametrize("bucket", ["public_chat", "public_widget"])
def test_public_tenant_limits_of_each_plan(api, clock, probes, plan, bucket):
    from tests.factories import make_tenant

    kit = make_tenant("Public Co", plan=plan)
    n = tables.PUBLIC[bucket].per_tenant[plan]
    preset(policy.tenant_identity(kit.tenant, bucket), "tenant", n - 1)
    if bucket == "public_chat":
        send = lambda: api.post("/api/_probe/chat", json={"tenantId": kit.tenant.public_id})  # noqa: E731
    else:
        send = lambda: api.get(f"/api/_probe/widget?tenant={kit.tenant.public_id}")  # noqa: E731
    r = send()
    assert r.status_code == 200 and r.headers["X-RateLimit-Remaining"] == "0"
    assert r.headers["X-RateLimit-Policy"] == "tenant" and r.headers["X-RateLimit-Limit"] == str(n)
    assert send().status_code == 429


def test_widget_per_address_and_unknown_tenants(api, clock, probes, db):
    r = api.get("/api/_probe/widget?tenant=tn_nope")
    assert r.status_code == 200 and r.headers["X-RateLimit-Limit"] == "120"  # address only


def test_a_public_view_without_a_public_bucket_is_limited_like_anonymous_requests(api, clock, probes, db):
    r = api.get("/api/_probe/open")
    assert r.headers["X-RateLimit-Limit"] == "60" and r.headers["X-RateLimit-Policy"] == "address"


def test_an_unknown_bucket_is_refused_when_the_class_is_defined():
    from django.core.exceptions import ImproperlyConfigured

    from config.api.views import V1APIView

    with pytest.raises(ImproperlyConfigured, match="unknown bucket"):
        class Typo(V1APIView):  # noqa: F841
            rate_limit_bucket = {"POST": "lead_creat"}


def test_a_broken_body_is_counted_per_address_and_still_400(api, clock, probes, db):
    r = api.post("/api/_probe/chat", content=b"{broken", headers={"Content-Type": "application/json"})
    assert r.status_code == 400 and set(r.json()) == {"error"}
    assert standing(r) == ("address", 19)
