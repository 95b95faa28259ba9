"""The numbers: the specification's Limits tables, and ours where it gives none.

Every limit counts requests in a fixed window (a UTC minute or a UTC day) and belongs to one
identity (an API key, a legacy cookie session, a client address or a tenant). ``None`` means
unlimited. These are constants rather than settings: they are what the plans sell, and the tests
check them against the specification line by line.
"""

from __future__ import annotations

from dataclasses import dataclass

from tenants.models import Plan

MINUTE = 60
DAY = 24 * 60 * 60

STARTER, PRO, ENTERPRISE = Plan.STARTER, Plan.GROWTH, Plan.ENTERPRISE


@dataclass(frozen=True)
class PlanQuota:
    per_minute: int
    per_day: int | None
    concurrent: int


# v1, per API key: "Rate limits, v1 surface, per API key".
V1_PLAN: dict[str, PlanQuota] = {
    STARTER: PlanQuota(per_minute=60, per_day=10_000, concurrent=5),
    PRO: PlanQuota(per_minute=300, per_day=100_000, concurrent=25),
    ENTERPRISE: PlanQuota(per_minute=1_500, per_day=None, concurrent=100),
}

# v1, per API key and endpoint bucket, per minute: "Per-endpoint limits per minute". Views declare
# their bucket (``rate_limit_bucket``); a view that declares none is in "default" ("all other
# endpoints").
V1_ENDPOINT: dict[str, dict[str, int]] = {
    "chat": {STARTER: 30, PRO: 150, ENTERPRISE: 750},
    "chat_stream": {STARTER: 15, PRO: 75, ENTERPRISE: 400},
    "analytics": {STARTER: 20, PRO: 100, ENTERPRISE: 500},
    "lead_create": {STARTER: 30, PRO: 150, ENTERPRISE: 750},
    "lead_search": {STARTER: 20, PRO: 100, ENTERPRISE: 500},
    "default": {STARTER: 60, PRO: 300, ENTERPRISE: 1_500},
}

# A streaming chat is also a POST /v1/chat: it counts against both rows of the chat endpoint.
V1_BUCKET_LIMITS: dict[str, tuple[str, ...]] = {
    "chat": ("chat",),
    "chat_stream": ("chat", "chat_stream"),
    "analytics": ("analytics",),
    "lead_create": ("lead_create",),
    "lead_search": ("lead_search",),
    "default": ("default",),
}

ENDPOINT_LABELS: dict[str, str] = {
    "chat": "POST /v1/chat",
    "chat_stream": "streaming POST /v1/chat",
    "analytics": "GET /v1/analytics/*",
    "lead_create": "POST /v1/leads",
    "lead_search": "GET /v1/leads/search",
    "default": "this endpoint group (all other endpoints)",
}

# v1, per API key, by the key's scope, per minute: "Per-scope limits per minute".
V1_SCOPE: dict[str, dict[str, int]] = {
    "read": {STARTER: 120, PRO: 600, ENTERPRISE: 3_000},
    "write": {STARTER: 60, PRO: 300, ENTERPRISE: 1_500},
    "admin": {STARTER: 30, PRO: 150, ENTERPRISE: 750},
}

# Legacy, per key (or per tenant for the admin cookie session), per minute.
LEGACY_PLAN: dict[str, int] = {STARTER: 100, PRO: 500, ENTERPRISE: 2_000}


@dataclass(frozen=True)
class PublicQuota:
    """A public endpoint's limits per minute: per client address, and per tenant by plan."""

    per_address: int
    per_tenant: dict[str, int] | None


# Public legacy endpoints (no authentication). The specification gives no numbers; these are
# ours (docs/rate-limits.md). Per address: a person chatting sends a message every few seconds
# at most; a page embedding the widget fetches its configuration a few times per view. Per
# tenant: twice the tenant's v1 per-minute budget for chat (a chat costs a language-model call),
# twenty times for the widget's cheap reads, so that one abusive page cannot exhaust a tenant
# while a busy site with many visitors is not throttled.
PUBLIC: dict[str, PublicQuota] = {
    "public_chat": PublicQuota(
        per_address=20, per_tenant={STARTER: 120, PRO: 600, ENTERPRISE: 3_000}
    ),
    "public_widget": PublicQuota(
        per_address=120, per_tenant={STARTER: 1_200, PRO: 6_000, ENTERPRISE: 30_000}
    ),
    "public_health": PublicQuota(per_address=60, per_tenant=None),
}

# Requests that carry no valid credentials (401s, the legacy login, unknown paths), per client
# address and minute, both surfaces together: they cost a key lookup each and deserve no more.
ANONYMOUS_PER_ADDRESS = 60

V1_BUCKETS = frozenset(V1_BUCKET_LIMITS)
PUBLIC_BUCKETS = frozenset(PUBLIC)
BUCKETS = V1_BUCKETS | PUBLIC_BUCKETS
