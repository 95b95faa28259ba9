"""Which limits apply to a request: its surface, its caller, its endpoint bucket, its address.

- v1 with an API key: the plan's per-minute and per-day limits, the endpoint bucket's per-minute
  limit(s), the key scope's per-minute limit, all per key; and the plan's concurrent requests.
- legacy with a key: the plan's per-minute limit per key; with the admin cookie, per tenant.
- public endpoints (no credentials by design): per client address, and per tenant where the
  endpoint names one.
- every other request without valid credentials (401s, the login, unknown paths): per address.
"""

from __future__ import annotations

from functools import lru_cache

from tenants.models import Tenant

from . import tables
from .core import Limit, Slots
from .tables import DAY, MINUTE

V1_PLAN_LABEL = {tables.STARTER: "Starter", tables.PRO: "Pro", tables.ENTERPRISE: "Enterprise"}
LEGACY_PLAN_LABEL = {tables.STARTER: "Starter", tables.PRO: "Growth", tables.ENTERPRISE: "Enterprise"}


def _plan(tenant: Tenant) -> str:
    # A plan name the tables do not know (a bad row) gets the smallest plan, not an outage.
    return tenant.plan if tenant.plan in tables.V1_PLAN else tables.STARTER


def v1_identity(api_key) -> str:
    return f"v1:key:{api_key.pk.hex}"


def legacy_identity(caller) -> str:
    if caller.api_key is not None:
        return f"legacy:key:{caller.api_key.pk.hex}"
    # The admin cookie: every session of a tenant is one caller.
    return f"legacy:session:{caller.tenant.pk.hex}"


def address_identity(address: str, bucket: str) -> str:
    return f"addr:{address}:{bucket}"


def tenant_identity(tenant: Tenant, bucket: str) -> str:
    return f"tenant:{tenant.pk.hex}:{bucket}"


def v1_limits(caller, bucket: str) -> tuple[Limit, ...]:
    return _v1_limits(v1_identity(caller.api_key), _plan(caller.tenant), caller.scope, bucket)


# Every request of a key asks for the same few limits: build them once (this is on the path of
# every v1 request; the plan is part of the key, so an upgrade takes effect at once).
@lru_cache(maxsize=8192)
def _v1_limits(who: str, plan: str, scope: str, bucket: str) -> tuple[Limit, ...]:
    label = V1_PLAN_LABEL[plan]
    quota = tables.V1_PLAN[plan]
    limits = [Limit("minute", who, quota.per_minute, MINUTE,
                    f"{quota.per_minute} requests per minute per API key on the {label} plan")]
    if quota.per_day is not None:
        limits.append(Limit("day", who, quota.per_day, DAY,
                            f"{quota.per_day} requests per day per API key on the {label} plan"))
    for row in tables.V1_BUCKET_LIMITS[bucket]:
        n = tables.V1_ENDPOINT[row][plan]
        limits.append(Limit(f"endpoint.{row}", who, n, MINUTE,
                            f"{n} requests per minute per API key to {tables.ENDPOINT_LABELS[row]} "
                            f"on the {label} plan"))
    n = tables.V1_SCOPE[scope][plan]
    limits.append(Limit(f"scope.{scope}", who, n, MINUTE,
                        f"{n} requests per minute per API key with the {scope} scope "
                        f"on the {label} plan"))
    return tuple(limits)


def v1_slots(caller) -> Slots:
    return _v1_slots(v1_identity(caller.api_key), _plan(caller.tenant))


@lru_cache(maxsize=8192)
def _v1_slots(who: str, plan: str) -> Slots:
    n = tables.V1_PLAN[plan].concurrent
    return Slots(who, n, f"{n} concurrent requests per API key on the {V1_PLAN_LABEL[plan]} plan")


def legacy_limits(caller) -> list[Limit]:
    plan = _plan(caller.tenant)
    n = tables.LEGACY_PLAN[plan]
    per = "key" if caller.api_key is not None else "tenant for the admin session"
    return [Limit("minute", legacy_identity(caller), n, MINUTE,
                  f"{n} requests per minute per {per} on the {LEGACY_PLAN_LABEL[plan]} plan")]


def public_limits(bucket: str, address: str, tenant: Tenant | None) -> list[Limit]:
    quota = tables.PUBLIC[bucket]
    limits = [Limit("address", address_identity(address, bucket), quota.per_address, MINUTE,
                    f"{quota.per_address} requests per minute per client address to this endpoint")]
    if tenant is not None and quota.per_tenant is not None:
        plan = _plan(tenant)
        n = quota.per_tenant[plan]
        limits.append(Limit("tenant", tenant_identity(tenant, bucket), n, MINUTE,
                            f"{n} requests per minute to this endpoint for one tenant on the "
                            f"{LEGACY_PLAN_LABEL[plan]} plan"))
    return limits


def anonymous_limits(address: str) -> list[Limit]:
    n = tables.ANONYMOUS_PER_ADDRESS
    return [Limit("address", address_identity(address, "anonymous"), n, MINUTE,
                  f"{n} requests per minute per client address without valid credentials")]
