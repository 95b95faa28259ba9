"""Helpers of the rate-limit tests: who a key is to the limiter, and presetting its counters."""

from __future__ import annotations

import httpx
from django.core.cache import cache

from apikeys.authentication import Caller
from config import ratelimit
from config.ratelimit import core, policy
from config.ratelimit.tables import DAY, MINUTE
from tests.factories import TenantKit


def caller(kit: TenantKit, scope: str = "read", mode: str = "live") -> Caller:
    row = kit.key_rows[mode][scope]
    return Caller(tenant=kit.tenant, livemode=row.livemode, scope=row.scope, api_key=row)


def v1_identity(kit: TenantKit, scope: str = "read", mode: str = "live") -> str:
    return policy.v1_identity(kit.key_rows[mode][scope])


def preset(identity: str, policy_name: str, count: int) -> None:
    """Sets a counter of the current window through the cache API, as if ``count`` requests had
    been counted: the way to reach limits of thousands of requests in a test."""
    period = DAY if policy_name == "day" else MINUTE
    cache.set(ratelimit.counter_key(identity, policy_name, period, core.now()), count, 600)


def limit_headers(r: httpx.Response) -> dict[str, str]:
    return {name: r.headers[name] for name in
            ("X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset", "X-RateLimit-Policy")}


def assert_v1_429(r: httpx.Response, *, limit: int, policy_name: str, retry_after: int) -> None:
    assert r.status_code == 429, r.content
    body = r.json()
    assert body["error"]["code"] == "rate_limit_exceeded"
    assert body["error"]["retryAfter"] == body["retryAfter"] == retry_after
    assert body["error"]["limit"] == body["limit"] == limit
    assert body["error"]["doc_url"].endswith("/docs/errors#rate_limit_exceeded")
    assert str(limit) in body["error"]["message"]
    assert r.headers["X-RateLimit-RetryAfter"] == str(retry_after)
    assert r.headers["Retry-After"] == str(retry_after)
    assert r.headers["X-RateLimit-Limit"] == str(limit)
    assert r.headers["X-RateLimit-Remaining"] == "0"
    assert r.headers["X-RateLimit-Policy"] == policy_name


def standing(r: httpx.Response) -> tuple[str, int]:
    """(binding policy, requests remaining) of a response."""
    return r.headers["X-RateLimit-Policy"], int(r.headers["X-RateLimit-Remaining"])
