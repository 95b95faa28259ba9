"""The limiter: admits or refuses one request against all of its limits at once.

A request is admitted only if every limit that applies to it still has room (and, where asked,
a concurrency slot is free). Admission counts the request against every one of those limits; a
refusal counts it against none. What the response headers report is the *binding* limit: the
one with the fewest requests remaining after this one (ties: the one that resets last, then the
smaller limit). On a refusal it is the exhausted limit that resets last, since the request
cannot pass before that one has reset; or the concurrency limit, when only that refused.
"""

from __future__ import annotations

import contextlib
import math
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

from asgiref.sync import sync_to_async
from django.conf import settings

from core import metrics
from core.errors import RateLimited

from .store import GRACE_SECONDS, KEY_PREFIX, Counter, SlotClaim, StoreUnavailable, get_store, ttl_until

# A refused concurrent request is told to retry after this many seconds: slots free up when
# other requests end, which the limiter cannot foresee.
CONCURRENCY_RETRY_SECONDS = 1


def now() -> float:
    """The limiter's clock (Unix seconds). Windows, resets and slot leases all come from here, so
    tests move time by replacing this function."""
    return time.time()


def counter_key(identity: str, policy: str, period: int, at: float) -> str:
    """The cache key of one limit's counter in the window that contains ``at``."""
    start = int(at // period) * period
    return f"{KEY_PREFIX}{identity}:{policy}:{start}"


def slots_key(identity: str) -> str:
    return f"{KEY_PREFIX}{identity}:slots"


@dataclass(frozen=True)
class Limit:
    """At most ``limit`` requests per fixed window of ``period`` seconds (aligned to the Unix
    epoch, so UTC minutes and UTC days) for one ``identity``."""

    policy: str  # what X-RateLimit-Policy shows: minute, day, endpoint.chat, scope.admin, address…
    identity: str  # whose budget: an API key, a legacy session, a client address, a tenant
    limit: int
    period: int
    description: str  # "60 requests per minute per API key on the Starter plan"

    def reset(self, at: float) -> int:
        return (int(at // self.period) + 1) * self.period

    def key(self, at: float) -> str:
        return counter_key(self.identity, self.policy, self.period, at)


@dataclass(frozen=True)
class Slots:
    """At most ``limit`` requests of ``identity`` in flight at once."""

    identity: str
    limit: int
    description: str  # "5 concurrent requests per API key on the Starter plan"


@dataclass(frozen=True)
class Usage:
    limit: Limit
    count: int  # after this request when it was admitted; as found when it was refused
    reset: int

    @property
    def remaining(self) -> int:
        return max(0, self.limit.limit - self.count)

    @property
    def exhausted(self) -> bool:
        return self.count >= self.limit.limit


@dataclass(frozen=True)
class Report:
    """What the X-RateLimit-* headers say."""

    policy: str
    limit: int
    remaining: int
    reset: int
    description: str


class Slot:
    """One held concurrency slot. Release it exactly when the work ends; releasing twice is
    harmless. While held for long (a stream), :meth:`refresh` renews its lease."""

    def __init__(self, key: str, holder: str, lease: float):
        self.key = key
        self.holder = holder
        self.lease = lease
        self.released = False

    def release(self) -> None:
        if self.released:
            return
        self.released = True
        with contextlib.suppress(StoreUnavailable):  # if unreachable, the lease ends by itself
            get_store().release(self.key, self.holder)

    async def arelease(self) -> None:
        if not self.released:
            await sync_to_async(self.release, thread_sensitive=False)()

    def refresh(self) -> bool:
        """Renews the lease; False when the slot was already lost (its lease had ended)."""
        if self.released:
            return False
        try:
            return get_store().refresh(self.key, self.holder, now() + self.lease,
                                       math.ceil(self.lease) + GRACE_SECONDS)
        except StoreUnavailable:
            return True

    async def arefresh(self) -> bool:
        return await sync_to_async(self.refresh, thread_sensitive=False)()


@dataclass
class Decision:
    allowed: bool
    at: float
    usages: tuple[Usage, ...]
    slots: Slots | None = None
    slot: Slot | None = None  # held when admitted with a concurrency limit
    slots_refused: bool = False  # refused because every slot was held

    @cached_property
    def report(self) -> Report | None:
        if not self.allowed:
            exhausted = [u for u in self.usages if u.exhausted]
            if exhausted:
                u = max(exhausted, key=lambda u: (u.reset, -u.limit.limit))
                return Report(u.limit.policy, u.limit.limit, 0, u.reset, u.limit.description)
            assert self.slots is not None and self.slots_refused
            return Report("concurrency", self.slots.limit, 0,
                          math.ceil(self.at + CONCURRENCY_RETRY_SECONDS), self.slots.description)
        if not self.usages:
            return None
        u = min(self.usages, key=lambda u: (u.remaining, -u.reset, u.limit.limit))
        return Report(u.limit.policy, u.limit.limit, u.remaining, u.reset, u.limit.description)

    @property
    def retry_after(self) -> int:
        report = self.report
        if report is None or report.policy == "concurrency":
            return CONCURRENCY_RETRY_SECONDS
        return max(1, math.ceil(report.reset - self.at))

    def headers(self) -> dict[str, str]:
        report = self.report
        if report is None:
            return {}
        return {
            "X-RateLimit-Limit": str(report.limit),
            "X-RateLimit-Remaining": str(report.remaining),
            "X-RateLimit-Reset": str(report.reset),
            "X-RateLimit-Policy": report.policy,
        }

    def error(self) -> RateLimited:
        report = self.report
        assert report is not None and not self.allowed
        metrics.RATE_LIMIT_REFUSALS.labels(report.policy).inc()
        retry = self.retry_after
        return RateLimited(
            f"Rate limit exceeded: {report.description}. Retry in {retry} "
            f"second{'s' if retry != 1 else ''}.",
            retry_after=retry, limit=report.limit, reset=report.reset,
        )


def _claim(slots: Slots | None, at: float) -> SlotClaim | None:
    """What the store needs to take one of ``slots`` for a new holder, leased from ``at``."""
    if slots is None:
        return None
    lease = float(settings.RATE_LIMIT_SLOT_LEASE_SECONDS)
    return SlotClaim(key=slots_key(slots.identity), limit=slots.limit, holder=uuid.uuid4().hex,
                     expires_at=at + lease, ttl=math.ceil(lease) + GRACE_SECONDS)


def check(limits: Sequence[Limit], *, slots: Slots | None = None) -> Decision | None:
    """Admits (counting it against every limit, taking a slot) or refuses (changing nothing) one
    request. None when limits are off or the store is unreachable: the request then passes
    unlimited and its response carries no rate-limit headers (the service fails open)."""
    if not settings.RATE_LIMIT_ENABLED or (not limits and slots is None):
        return None
    at = now()
    counters = [Counter(limit.key(at), limit.limit, ttl_until(limit.reset(at), at)) for limit in limits]
    claim = _claim(slots, at)
    try:
        outcome = get_store().hit(counters, claim, at)
    except StoreUnavailable:
        return None
    usages = tuple(Usage(limit, count, limit.reset(at))
                   for limit, count in zip(limits, outcome.counts, strict=True))
    decision = Decision(allowed=outcome.allowed, at=at, usages=usages, slots=slots)
    if claim is not None:
        if outcome.allowed:
            decision.slot = Slot(claim.key, claim.holder, claim.expires_at - at)
        else:
            decision.slots_refused = outcome.held >= claim.limit
    return decision


def peek(limits: Sequence[Limit], *, at: float | None = None) -> tuple[int, ...] | None:
    """How many requests each limit has counted in its window at ``at`` (now), counting nothing.
    None when limits are off or the store is unreachable."""
    if not settings.RATE_LIMIT_ENABLED:
        return None
    at = now() if at is None else at
    try:
        return get_store().peek([limit.key(at) for limit in limits])
    except StoreUnavailable:
        return None


def add(limit: Limit, delta: int, *, at: float) -> None:
    """Counts ``delta`` more (or, negative, takes back what was counted) in the window of
    ``limit`` that contains ``at``, whatever its limit: for counts that an outcome decides after
    the request was admitted (a wrong password). Nothing when limits are off or the store is
    unreachable."""
    if not settings.RATE_LIMIT_ENABLED:
        return
    counter = Counter(limit.key(at), limit.limit, ttl_until(limit.reset(at), now()))
    with contextlib.suppress(StoreUnavailable):
        get_store().add(counter, delta)


class _NoSlot(Slot):
    """What :func:`acquire` gives when limits are off or the store is down: nothing to hold."""

    def __init__(self) -> None:
        super().__init__("", "", 0.0)
        self.released = True


def acquire(slots: Slots) -> Slot:
    """Takes one concurrency slot or raises :class:`RateLimited` (429) when all are held."""
    decision = check((), slots=slots)
    if decision is None:
        return _NoSlot()
    if not decision.allowed:
        raise decision.error()
    assert decision.slot is not None
    return decision.slot


async def aacquire(slots: Slots) -> Slot:
    return await sync_to_async(acquire, thread_sensitive=False)(slots)


def holders(identity: str) -> int:
    """How many slots of ``identity`` are held now (what the tests of slots observe)."""
    return get_store().holders(slots_key(identity), now())
