"""v1 rate limits per API key, over HTTP: plan, endpoint and scope limits at once, the headers of
every response, the 429 body, window reset, and what a refused request costs."""

import pytest
from django.test import override_settings

from config.ratelimit import tables
from tests.limits import assert_v1_429, limit_headers, preset, standing, v1_identity

USERS = "/api/v1/users"
START_RESET = 1_800_000_060  # the end of the clock fixture's first minute
PLANS = ("starter", "growth", "enterprise")


@pytest.fixture
def probes(settings):
    settings.ROOT_URLCONF = "tests.urls_limits"


def test_starter_key_gets_exactly_60_requests_a_minute_then_429(api, kit, clock):
    auth = kit.auth("read")
    for n in range(1, 61):
        r = api.get(USERS, headers=auth)
        assert r.status_code == 200, (n, r.content)
        assert limit_headers(r) == {"X-RateLimit-Limit": "60", "X-RateLimit-Remaining": str(60 - n),
                                    "X-RateLimit-Reset": str(START_RESET),
                                    "X-RateLimit-Policy": "minute"}
    r = api.get(USERS, headers=auth)
    assert_v1_429(r, limit=60, policy_name="minute", retry_after=50)  # 10.25 s into the minute
    assert r.headers["X-RateLimit-Reset"] == str(START_RESET)
    assert "60 requests per minute per API key on the Starter plan" in r.json()["error"]["message"]


def test_the_window_resets_at_the_minute(api, kit, clock):
    auth = kit.auth("read")
    preset(v1_identity(kit), "minute", 60)
    assert api.get(USERS, headers=auth).status_code == 429
    clock.advance(49.5)  # 59.75 s into the minute: still refused, one second to wait
    r = api.get(USERS, headers=auth)
    assert r.status_code == 429 and r.json()["retryAfter"] == 1
    clock.advance(0.25)  # the next minute
    r = api.get(USERS, headers=auth)
    assert r.status_code == 200
    assert r.headers["X-RateLimit-Remaining"] == "59"
    assert r.headers["X-RateLimit-Reset"] == str(START_RESET + 60)


@pytest.mark.parametrize("plan", PLANS)
def test_per_minute_plan_limit_of_each_plan(api, clock, plan):
    from tests.factories import make_tenant

    kit = make_tenant("Minute Co", plan=plan)
    n = tables.V1_PLAN[plan].per_minute
    # The read scope allows twice the plan's minute, so the plan limit is the one that binds.
    preset(v1_identity(kit), "minute", n - 1)
    r = api.get(USERS, headers=kit.auth("read"))
    assert r.status_code == 200
    assert (r.headers["X-RateLimit-Limit"], r.headers["X-RateLimit-Remaining"]) == (str(n), "0")
    assert_v1_429(api.get(USERS, headers=kit.auth("read")), limit=n, policy_name="minute",
                  retry_after=50)


@pytest.mark.parametrize("plan", ["starter", "growth"])
def test_per_day_plan_limit_of_each_plan(api, clock, plan):
    from tests.factories import make_tenant

    kit = make_tenant("Day Co", plan=plan)
    n = tables.V1_PLAN[plan].per_day
    preset(v1_identity(kit), "day", n - 1)
    r = api.get(USERS, headers=kit.auth("read"))
    assert r.status_code == 200
    assert limit_headers(r)["X-RateLimit-Policy"] == "day"
    assert r.headers["X-RateLimit-Remaining"] == "0"
    day_end = (int(clock.time) // 86_400 + 1) * 86_400
    assert r.headers["X-RateLimit-Reset"] == str(day_end)
    r = api.get(USERS, headers=kit.auth("read"))
    assert_v1_429(r, limit=n, policy_name="day", retry_after=day_end - int(clock.time))
    # A new minute does not help; a new UTC day does.
    clock.advance(120)
    assert api.get(USERS, headers=kit.auth("read")).status_code == 429
    clock.time = day_end + 1
    assert api.get(USERS, headers=kit.auth("read")).status_code == 200


def test_enterprise_has_no_daily_limit(api, clock):
    from tests.factories import make_tenant

    kit = make_tenant("Big Co", plan="enterprise")
    preset(v1_identity(kit), "day", 10_000_000)
    r = api.get(USERS, headers=kit.auth("read"))
    assert r.status_code == 200
    assert r.headers["X-RateLimit-Limit"] == "1500"


@pytest.mark.parametrize("plan", PLANS)
@pytest.mark.parametrize("scope", ["read", "write", "admin"])
def test_per_scope_limit_of_each_plan(api, clock, plan, scope):
    from tests.factories import make_tenant

    kit = make_tenant("Scope Co", plan=plan)
    n = tables.V1_SCOPE[scope][plan]
    preset(v1_identity(kit, scope), f"scope.{scope}", n - 1)
    r = api.get(USERS, headers=kit.auth(scope))
    assert r.status_code == 200
    assert limit_headers(r)["X-RateLimit-Policy"] == f"scope.{scope}"
    assert_v1_429(api.get(USERS, headers=kit.auth(scope)), limit=n,
                  policy_name=f"scope.{scope}", retry_after=50)


def test_the_tightest_limit_decides_a_starter_admin_key_gets_30(api, kit, clock):
    # Plan 60 and "all other endpoints" 60, but the admin scope allows 30 per minute.
    for n in range(1, 31):
        r = api.get(USERS, headers=kit.auth("admin"))
        assert r.status_code == 200
        assert (r.headers["X-RateLimit-Policy"], r.headers["X-RateLimit-Limit"]) == ("scope.admin", "30")
        assert r.headers["X-RateLimit-Remaining"] == str(30 - n)
    assert_v1_429(api.get(USERS, headers=kit.auth("admin")), limit=30, policy_name="scope.admin",
                  retry_after=50)
    # Another key of the same tenant has its own budget.
    assert api.get(USERS, headers=kit.auth("read")).headers["X-RateLimit-Remaining"] == "59"
    assert api.get(USERS, headers=kit.auth("admin", "test")).status_code == 200


# Real Starter numbers of each endpoint bucket, through probe views that declare the bucket.
BUCKET_CASES = [
    ("POST", "/api/v1/_probe/chat", {"stream": False}, "endpoint.chat", 30),
    ("GET", "/api/v1/_probe/analytics", None, "endpoint.analytics", 20),
    ("POST", "/api/v1/_probe/leads", {}, "endpoint.lead_create", 30),
    ("POST", "/api/v1/_probe/vleads", {}, "endpoint.lead_create", 30),
    ("GET", "/api/v1/_probe/vleads/search", None, "endpoint.lead_search", 20),
    ("GET", "/api/v1/_probe/default", None, "minute", 60),
]


@pytest.mark.parametrize(("method", "path", "payload", "policy_name", "n"), BUCKET_CASES)
def test_each_endpoint_bucket_at_the_starter_numbers(api, kit, clock, probes, method, path,
                                                      payload, policy_name, n):
    auth = kit.auth("write")  # write: 60 a minute, so only the endpoint limit binds below 60
    for i in range(1, n + 1):
        r = api.request(method, path, json=payload, headers=auth)
        assert r.status_code in (200, 201), (i, r.content)
        assert r.headers["X-RateLimit-Remaining"] == str(n - i)
    assert_v1_429(api.request(method, path, json=payload, headers=auth), limit=n,
                  policy_name=policy_name, retry_after=50)
    if policy_name != "minute":
        # A refused request costs nothing: the plan's minute counted n requests, not n + 1.
        r = api.get("/api/v1/_probe/default", headers=auth)
        assert r.headers["X-RateLimit-Remaining"] == str(60 - n - 1)


def test_a_method_without_a_declared_bucket_is_in_default(api, kit, clock, probes):
    preset(v1_identity(kit, "write"), "endpoint.lead_create", 30)
    assert api.post("/api/v1/_probe/leads", json={}, headers=kit.auth("write")).status_code == 429
    r = api.get("/api/v1/_probe/leads", headers=kit.auth("write"))  # GET is not mapped
    assert r.status_code == 200 and r.headers["X-RateLimit-Policy"] == "minute"


@pytest.mark.parametrize("plan", PLANS)
@pytest.mark.parametrize("row", sorted(tables.V1_ENDPOINT))
def test_endpoint_limits_of_each_plan(api, clock, probes, plan, row):
    from tests.factories import make_tenant

    path = {"chat": "/api/v1/_probe/chat", "chat_stream": "/api/v1/_probe/chat",
            "analytics": "/api/v1/_probe/analytics", "lead_create": "/api/v1/_probe/leads",
            "lead_search": "/api/v1/_probe/vleads/search", "default": "/api/v1/_probe/default"}[row]
    method = "POST" if row in ("chat", "chat_stream", "lead_create") else "GET"
    payload = {"stream": False} if row == "chat" else None
    kit = make_tenant("Endpoint Co", plan=plan)
    n = tables.V1_ENDPOINT[row][plan]
    if row == "chat_stream":
        payload = {"stream": True, "hold": 0.01}
    preset(v1_identity(kit, "write"), f"endpoint.{row}", n - 1)
    r = api.request(method, path, json=payload, headers=kit.auth("write"))
    assert r.status_code in (200, 201)
    assert (r.headers["X-RateLimit-Policy"], r.headers["X-RateLimit-Limit"]) == (f"endpoint.{row}", str(n))
    assert_v1_429(api.request(method, path, json=payload, headers=kit.auth("write")), limit=n,
                  policy_name=f"endpoint.{row}", retry_after=50)


def test_a_streaming_chat_counts_against_both_chat_limits(api, kit, clock, probes):
    stream = {"stream": True, "hold": 0.01}
    for _ in range(15):
        assert api.post("/api/v1/_probe/chat", json=stream, headers=kit.auth("write")).status_code == 200
    r = api.post("/api/v1/_probe/chat", json=stream, headers=kit.auth("write"))
    assert_v1_429(r, limit=15, policy_name="endpoint.chat_stream", retry_after=50)
    # 15 of the 30 chats a minute are used; non-streaming chats have 15 left.
    r = api.post("/api/v1/_probe/chat", json={"message": "hi"}, headers=kit.auth("write"))
    assert r.status_code == 200
    assert (r.headers["X-RateLimit-Policy"], r.headers["X-RateLimit-Remaining"]) == ("endpoint.chat", "14")


def test_a_body_that_does_not_parse_is_still_counted_and_still_400(api, kit, clock, probes):
    r = api.post("/api/v1/_probe/chat", content=b'{"stream": tru',
                 headers={**kit.auth("write"), "Content-Type": "application/json"})
    assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_request"
    # Counted in the bucket the view declares (a broken body cannot say it wants a stream).
    assert (r.headers["X-RateLimit-Policy"], r.headers["X-RateLimit-Remaining"]) == ("endpoint.chat", "29")


def test_every_authenticated_response_carries_the_headers(api, kit, clock, probes):
    cases = [
        api.get(USERS, headers=kit.auth("read")),                                   # 200
        api.get(USERS + "?limit=0", headers=kit.auth("read")),                      # 400
        api.delete("/api/v1/_probe/default", headers=kit.auth("read")),             # 403
        api.get(USERS + "/user_" + "0" * 32, headers=kit.auth("read")),             # 404
        api.request("PUT", USERS, headers=kit.auth("write")),                       # 405
        api.post("/api/v1/_probe/keys", json={"fail": True}, headers=kit.auth("write")),  # 500
    ]
    assert [r.status_code for r in cases] == [200, 400, 403, 404, 405, 500]
    remaining = [int(r.headers["X-RateLimit-Remaining"]) for r in cases]
    assert remaining == [59, 58, 57, 56, 59, 58]  # each counted against its key
    for r in cases:
        assert set(limit_headers(r)) and int(r.headers["X-RateLimit-Reset"]) == START_RESET


def test_requests_without_a_valid_key_are_counted_per_address(api, kit, clock):
    for n in range(1, 61):
        r = api.get(USERS, headers={"Authorization": "Bearer sk_live_" + "x" * 40})
        assert r.status_code == 401
        assert standing(r) == ("address", 60 - n)
    r = api.get(USERS)  # no key at all: the same address budget
    assert_v1_429(r, limit=60, policy_name="address", retry_after=50)
    # A valid key is not affected by its address's failures.
    assert api.get(USERS, headers=kit.auth("read")).status_code == 200


def test_plain_http_refusals_are_counted_per_address(api, kit, clock, settings):
    settings.V1_REQUIRE_HTTPS = True
    r = api.get(USERS, headers=kit.auth("read"), base_url="http://testserver")
    assert r.status_code == 403
    assert r.headers["X-RateLimit-Policy"] == "address"


def test_unknown_paths_count_per_address(api, clock):
    r = api.get("/api/v1/nope")
    assert r.status_code == 404 and r.headers["X-RateLimit-Policy"] == "address"


@override_settings(RATE_LIMIT_ENABLED=False)
def test_limits_can_be_switched_off(api, kit, clock):
    preset(v1_identity(kit), "minute", 1000)
    r = api.get(USERS, headers=kit.auth("read"))
    assert r.status_code == 200 and "X-RateLimit-Limit" not in r.headers


@override_settings(CACHES={"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache",
                                       "LOCATION": "redis://127.0.0.1:1/0"}})
def test_an_unreachable_store_fails_open(api, kit, caplog):
    r = api.get(USERS, headers=kit.auth("read"))
    assert r.status_code == 200 and "X-RateLimit-Limit" not in r.headers
    assert any("rate-limit store unreachable" in rec.getMessage() for rec in caplog.records)
    # Further requests do not wait for the store again (see RETRY_AFTER_FAILURE_SECONDS).
    assert api.get(USERS, headers=kit.auth("read")).status_code == 200
