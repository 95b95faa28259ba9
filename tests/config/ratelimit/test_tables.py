"""The numbers of the specification's Limits section, and which of them apply to a request."""

import pytest

from config.ratelimit import policy, tables
from tests.limits import caller

SPEC_PLAN = {  # requests per minute, per day, concurrent connections
    "starter": (60, 10_000, 5),
    "growth": (300, 100_000, 25),
    "enterprise": (1_500, None, 100),
}
SPEC_ENDPOINT = {  # per minute: Starter, Pro, Enterprise
    "chat": (30, 150, 750),
    "chat_stream": (15, 75, 400),
    "analytics": (20, 100, 500),
    "lead_create": (30, 150, 750),
    "lead_search": (20, 100, 500),
    "default": (60, 300, 1_500),
}
SPEC_SCOPE = {"read": (120, 600, 3_000), "write": (60, 300, 1_500), "admin": (30, 150, 750)}
SPEC_LEGACY = {"starter": 100, "growth": 500, "enterprise": 2_000}
PLANS = ("starter", "growth", "enterprise")


def test_the_tables_are_the_specifications():
    for plan, (minute, day, concurrent) in SPEC_PLAN.items():
        quota = tables.V1_PLAN[plan]
        assert (quota.per_minute, quota.per_day, quota.concurrent) == (minute, day, concurrent)
    for row, numbers in SPEC_ENDPOINT.items():
        assert tuple(tables.V1_ENDPOINT[row][plan] for plan in PLANS) == numbers
    for scope, numbers in SPEC_SCOPE.items():
        assert tuple(tables.V1_SCOPE[scope][plan] for plan in PLANS) == numbers
    assert tables.LEGACY_PLAN == SPEC_LEGACY


@pytest.mark.parametrize("plan", PLANS)
@pytest.mark.parametrize("scope", ["read", "write", "admin"])
@pytest.mark.parametrize("bucket", sorted(tables.V1_BUCKETS))
def test_every_v1_request_meets_plan_endpoint_and_scope_limits_at_once(db, plan, scope, bucket):
    from tests.factories import make_tenant

    kit = make_tenant("Plan Co", plan=plan)
    limits = {limit.policy: limit for limit in policy.v1_limits(caller(kit, scope), bucket)}
    minute, day, concurrent = SPEC_PLAN[plan]
    index = PLANS.index(plan)
    expected = {"minute": (minute, 60), f"scope.{scope}": (SPEC_SCOPE[scope][index], 60)}
    if day is not None:
        expected["day"] = (day, 86_400)
    rows = ("chat", "chat_stream") if bucket == "chat_stream" else (bucket,)
    for row in rows:
        expected[f"endpoint.{row}"] = (SPEC_ENDPOINT[row][index], 60)
    assert {name: (lim.limit, lim.period) for name, lim in limits.items()} == expected
    # One budget per key: every limit of this key counts under the key's identity.
    assert {lim.identity for lim in limits.values()} == {policy.v1_identity(kit.key_rows["live"][scope])}
    assert policy.v1_slots(caller(kit, scope)).limit == concurrent


def test_plan_names_follow_the_surface():
    assert policy.V1_PLAN_LABEL["growth"] == "Pro"
    assert policy.LEGACY_PLAN_LABEL["growth"] == "Growth"
