"""Legacy rate limits: per key (or per tenant for the admin cookie) per minute, the legacy 429."""

import pytest

from config.ratelimit import policy, tables
from tests.limits import caller, limit_headers, preset

AUTH = "/api/admin/auth"  # GET: who am I (an authenticated legacy endpoint)
START_RESET = 1_800_000_060


def _assert_legacy_429(r, *, limit: int, retry_after: int = 50):
    assert r.status_code == 429, r.content
    assert set(r.json()) == {"error"}
    assert f"{limit} requests per minute" in r.json()["error"]
    assert r.headers["Retry-After"] == str(retry_after)
    assert r.headers["X-RateLimit-Limit"] == str(limit)
    assert r.headers["X-RateLimit-Remaining"] == "0"
    assert r.headers["X-RateLimit-Reset"] == str(START_RESET)


def test_starter_key_gets_exactly_100_requests_a_minute(api, kit, clock):
    for n in range(1, 101):
        r = api.get(AUTH, headers=kit.auth("admin"))
        assert r.status_code == 200, n
        assert limit_headers(r) == {"X-RateLimit-Limit": "100", "X-RateLimit-Remaining": str(100 - n),
                                    "X-RateLimit-Reset": str(START_RESET),
                                    "X-RateLimit-Policy": "minute"}
    _assert_legacy_429(api.get(AUTH, headers=kit.auth("admin")), limit=100)
    clock.advance(60)
    assert api.get(AUTH, headers=kit.auth("admin")).status_code == 200


@pytest.mark.parametrize("plan", ["starter", "growth", "enterprise"])
def test_per_minute_limit_of_each_plan(api, clock, plan):
    from tests.factories import make_tenant

    kit = make_tenant("Legacy Co", plan=plan)
    n = tables.LEGACY_PLAN[plan]
    preset(policy.legacy_identity(caller(kit, "read")), "minute", n - 1)
    r = api.get(AUTH, headers=kit.auth("admin"))  # another key: untouched
    assert r.headers["X-RateLimit-Remaining"] == str(n - 1)
    r = api.get("/api/admin/auth", headers=kit.auth("read"))  # 403 (admin only), still counted
    assert r.status_code == 403 and r.headers["X-RateLimit-Remaining"] == "0"
    _assert_legacy_429(api.get(AUTH, headers=kit.auth("read")), limit=n)
    plan_name = {"starter": "Starter", "growth": "Growth", "enterprise": "Enterprise"}[plan]
    assert plan_name in api.get(AUTH, headers=kit.auth("read")).json()["error"]


def test_the_admin_cookie_is_one_caller_per_tenant(api, kit, clock):
    from tests.conftest import ApiClient

    api.post(AUTH, json={"token": kit.admin_token})
    other_browser = ApiClient()
    other_browser.post(AUTH, json={"token": kit.admin_token})
    assert api.get(AUTH).headers["X-RateLimit-Remaining"] == "99"
    assert other_browser.get(AUTH).headers["X-RateLimit-Remaining"] == "98"
    # Keys of the tenant have budgets of their own.
    assert api.get(AUTH, headers=kit.auth("admin")).headers["X-RateLimit-Remaining"] == "99"
    preset(f"legacy:session:{kit.tenant.pk.hex}", "minute", 100)
    _assert_legacy_429(other_browser.get(AUTH), limit=100)


def test_legacy_and_v1_budgets_of_one_key_are_separate(api, kit, clock):
    for _ in range(3):
        api.get("/api/v1/users", headers=kit.auth("admin"))
    assert api.get(AUTH, headers=kit.auth("admin")).headers["X-RateLimit-Remaining"] == "99"


def test_login_attempts_count_per_address(api, kit, clock):
    for _ in range(60):
        assert api.post(AUTH, json={"token": "at_wrong"}).status_code == 401
    r = api.post(AUTH, json={"token": kit.admin_token})
    assert r.status_code == 429 and r.headers["Retry-After"] == "50"
    assert "per client address" in r.json()["error"]
