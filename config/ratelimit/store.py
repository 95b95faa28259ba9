"""Where the counts live: Redis in production, the local-memory cache on the embedded default.

Both stores keep the same data under the same cache keys (the cache's key prefix applies) and
answer the same question in one step: "may this request pass every one of these counters and,
if asked, take a concurrency slot?" A request passes only if every counter is below its limit
and a slot is free; then, and only then, every counter is incremented and the slot taken. A
refused request changes nothing.

- :class:`RedisStore` does that in one Lua script, atomic across every process that shares the
  Redis, in one round trip. Counters are integers with a TTL; a semaphore is a sorted set of
  holder ids scored by the time their lease ends, so a holder that dies without releasing drops
  out when its lease ends.
- :class:`LocalStore` does the same under a process-wide lock in the local-memory cache, which
  is private to the process: right for the embedded default, which serves from one process.

Times come from the caller (``at``), so the limiter's clock is the only clock (see core.now).

django-ratelimit's ``get_usage`` counts one limit per call, always increments, and ends each
key's window at a point of its own on ``time.time()``; all limits at once, clock-aligned windows
and a refusal that costs nothing need this one atomic step instead (docs/decisions.md).
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from django.conf import settings
from django.core.cache import caches
from django.core.cache.backends.locmem import LocMemCache
from django.core.cache.backends.redis import RedisCache
from django.core.exceptions import ImproperlyConfigured
from django.core.signals import setting_changed
from django.dispatch import receiver

logger = logging.getLogger("salesagent.ratelimit")

KEY_PREFIX = "rl:"
# Counters outlive their window by a little, so that a request at the very end of a window never
# finds its counter already gone.
GRACE_SECONDS = 5
# After the store fails, requests pass unlimited for this long before it is tried again, so that
# an outage of Redis costs each request nothing rather than a timeout.
RETRY_AFTER_FAILURE_SECONDS = 5.0


@dataclass(frozen=True)
class Counter:
    key: str
    limit: int
    ttl: int  # seconds


@dataclass(frozen=True)
class SlotClaim:
    key: str
    limit: int
    holder: str
    expires_at: float
    ttl: int  # seconds the whole semaphore lives without activity


@dataclass(frozen=True)
class Outcome:
    allowed: bool
    counts: tuple[int, ...]  # after this request when allowed; as found when refused
    held: int  # slots held, this request's included when allowed


class StoreUnavailable(Exception):
    """The store cannot be reached; the limiter fails open."""


class Store(Protocol):
    def hit(self, counters: Sequence[Counter], slot: SlotClaim | None, at: float) -> Outcome: ...

    def release(self, key: str, holder: str) -> None: ...

    def refresh(self, key: str, holder: str, expires_at: float, ttl: int) -> bool: ...

    def holders(self, key: str, at: float) -> int: ...

    def peek(self, keys: Sequence[str]) -> tuple[int, ...]: ...

    def add(self, counter: Counter, delta: int) -> int: ...

    def clear(self) -> None: ...


_HIT = """
local now = tonumber(ARGV[1])
local slots = tonumber(ARGV[2])
local n = #KEYS - 1
local counts = {}
local allowed = 1
for j = 1, n do
  local count = tonumber(redis.call('GET', KEYS[j + 1]) or '0')
  counts[j] = count
  if count >= tonumber(ARGV[4 + 2 * j]) then allowed = 0 end
end
local held = 0
if slots > 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
  held = redis.call('ZCARD', KEYS[1])
  if held >= slots then allowed = 0 end
end
if allowed == 0 then
  return {0, held, unpack(counts)}
end
for j = 1, n do
  counts[j] = redis.call('INCR', KEYS[j + 1])
  if counts[j] == 1 then redis.call('EXPIRE', KEYS[j + 1], ARGV[5 + 2 * j]) end
end
if slots > 0 then
  redis.call('ZADD', KEYS[1], ARGV[4], ARGV[3])
  redis.call('EXPIRE', KEYS[1], ARGV[5])
  held = held + 1
end
return {1, held, unpack(counts)}
"""


# Adds to one counter whatever it holds (no limit); a negative delta takes back what a caller
# added before and never creates a counter (it may have ended with its window).
_ADD = """
local delta = tonumber(ARGV[1])
if delta < 0 and redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local count = redis.call('INCRBY', KEYS[1], delta)
if redis.call('TTL', KEYS[1]) < 0 then redis.call('EXPIRE', KEYS[1], ARGV[2]) end
return count
"""


class RedisStore:
    """Counters and semaphores in the Redis of the default cache, one round trip per request."""

    def __init__(self, backend: RedisCache):
        self._backend = backend
        # One client for the process: redis-py clients are thread-safe and share the cache's
        # connection pool, so no request pays for a connection. (Django hands each thread its
        # own cache object; the pool behind _cache is what we want to keep.)
        self._client = backend._cache.get_client(write=True)
        self._hit = self._client.register_script(_HIT)
        self._add = self._client.register_script(_ADD)
        self._prefix = backend.make_and_validate_key("")

    def _key(self, key: str) -> str:
        return self._prefix + key

    def hit(self, counters: Sequence[Counter], slot: SlotClaim | None, at: float) -> Outcome:
        keys = [self._key(slot.key if slot else KEY_PREFIX + "none")]
        args: list[str | int | float] = [
            repr(at), slot.limit if slot else 0, slot.holder if slot else "",
            repr(slot.expires_at) if slot else 0, slot.ttl if slot else 0,
        ]
        for counter in counters:
            keys.append(self._key(counter.key))
            args.extend((counter.limit, counter.ttl))
        result = self._hit(keys=keys, args=args)
        return Outcome(allowed=bool(result[0]), held=int(result[1]),
                       counts=tuple(int(c) for c in result[2:]))

    def release(self, key: str, holder: str) -> None:
        self._client.zrem(self._key(key), holder)

    def refresh(self, key: str, holder: str, expires_at: float, ttl: int) -> bool:
        pipe = self._client.pipeline()
        pipe.zadd(self._key(key), {holder: expires_at}, xx=True, ch=True)
        pipe.expire(self._key(key), ttl)
        changed, _ = pipe.execute()
        return bool(changed)

    def holders(self, key: str, at: float) -> int:
        return int(self._client.zcount(self._key(key), f"({at!r}", "+inf"))

    def peek(self, keys: Sequence[str]) -> tuple[int, ...]:
        if not keys:
            return ()
        return tuple(int(v or 0) for v in self._client.mget([self._key(k) for k in keys]))

    def add(self, counter: Counter, delta: int) -> int:
        return int(self._add(keys=[self._key(counter.key)], args=[delta, counter.ttl]))

    def clear(self) -> None:
        """Forgets every counter and slot (and nothing else that shares the Redis)."""
        pattern = self._key(KEY_PREFIX).replace("[", "\\[").replace("*", "\\*") + "*"
        batch = []
        for key in self._client.scan_iter(match=pattern, count=500):
            batch.append(key)
            if len(batch) >= 500:
                self._client.delete(*batch)
                batch.clear()
        if batch:
            self._client.delete(*batch)


_LOCAL_LOCK = threading.Lock()


def _has_room(counters: Sequence[Counter], counts: Sequence[int], slot: SlotClaim | None,
              holders: dict[str, float]) -> bool:
    """Whether every counter is below its limit and, when a slot is asked for, one is free."""
    if any(count >= c.limit for count, c in zip(counts, counters, strict=True)):
        return False
    return slot is None or len(holders) < slot.limit


class LocalStore:
    """The same semantics in the process's local-memory cache, under one lock."""

    def __init__(self, backend: LocMemCache):
        self._cache = backend

    def hit(self, counters: Sequence[Counter], slot: SlotClaim | None, at: float) -> Outcome:
        with _LOCAL_LOCK:
            found = self._cache.get_many([c.key for c in counters])
            counts = [int(found.get(c.key, 0)) for c in counters]
            holders = self._live_holders(slot, at)
            if not _has_room(counters, counts, slot, holders):
                return Outcome(False, tuple(counts), len(holders))
            counts = [count + 1 for count in counts]
            for counter, count in zip(counters, counts, strict=True):
                self._cache.set(counter.key, count, counter.ttl)
            if slot is not None:
                holders[slot.holder] = slot.expires_at
                self._cache.set(slot.key, holders, slot.ttl)
            return Outcome(True, tuple(counts), len(holders))

    def _live_holders(self, slot: SlotClaim | None, at: float) -> dict[str, float]:
        """The semaphore's holders whose lease has not ended (none when no slot is asked for)."""
        if slot is None:
            return {}
        return {h: exp for h, exp in (self._cache.get(slot.key) or {}).items() if exp > at}

    def release(self, key: str, holder: str) -> None:
        with _LOCAL_LOCK:
            holders = self._cache.get(key) or {}
            if holders.pop(holder, None) is None:
                return
            if holders:
                self._cache.set(key, holders, settings.RATE_LIMIT_SLOT_LEASE_SECONDS + GRACE_SECONDS)
            else:
                self._cache.delete(key)

    def refresh(self, key: str, holder: str, expires_at: float, ttl: int) -> bool:
        with _LOCAL_LOCK:
            holders = self._cache.get(key) or {}
            if holder not in holders:
                return False
            holders[holder] = expires_at
            self._cache.set(key, holders, ttl)
            return True

    def holders(self, key: str, at: float) -> int:
        with _LOCAL_LOCK:
            return sum(1 for exp in (self._cache.get(key) or {}).values() if exp > at)

    def peek(self, keys: Sequence[str]) -> tuple[int, ...]:
        with _LOCAL_LOCK:
            found = self._cache.get_many(list(keys))
            return tuple(int(found.get(k, 0)) for k in keys)

    def add(self, counter: Counter, delta: int) -> int:
        with _LOCAL_LOCK:
            current = self._cache.get(counter.key)
            if current is None and delta < 0:
                return 0
            count = max(0, int(current or 0) + delta)
            self._cache.set(counter.key, count, counter.ttl)
            return count

    def clear(self) -> None:
        """Forgets every counter and slot; the local-memory cache is cleared with them."""
        self._cache.clear()


class GuardedStore:
    """Fails open: while the real store is unreachable, :meth:`hit` raises StoreUnavailable at
    once (after one logged failure) instead of waiting for a timeout on every request."""

    def __init__(self, inner: Store):
        self.inner = inner
        self._down_until = 0.0

    def _call(self, name: str, *args):
        if time.monotonic() < self._down_until:
            raise StoreUnavailable("rate-limit store recently failed")
        try:
            return getattr(self.inner, name)(*args)
        except Exception as exc:  # redis errors, socket errors: all mean "unreachable"
            self._down_until = time.monotonic() + RETRY_AFTER_FAILURE_SECONDS
            logger.error("rate-limit store unreachable (%s: %s); limits are off for %.0f s",
                         type(exc).__name__, exc, RETRY_AFTER_FAILURE_SECONDS)
            raise StoreUnavailable(str(exc)) from exc

    def hit(self, counters: Sequence[Counter], slot: SlotClaim | None, at: float) -> Outcome:
        return self._call("hit", counters, slot, at)

    def release(self, key: str, holder: str) -> None:
        self._call("release", key, holder)

    def refresh(self, key: str, holder: str, expires_at: float, ttl: int) -> bool:
        return self._call("refresh", key, holder, expires_at, ttl)

    def holders(self, key: str, at: float) -> int:
        return self._call("holders", key, at)

    def peek(self, keys: Sequence[str]) -> tuple[int, ...]:
        return self._call("peek", keys)

    def add(self, counter: Counter, delta: int) -> int:
        return self._call("add", counter, delta)

    def clear(self) -> None:
        self.inner.clear()
        self._down_until = 0.0


_store: GuardedStore | None = None
_store_lock = threading.Lock()


def get_store() -> GuardedStore:
    """The process's store, built from the default cache on first use."""
    global _store
    if _store is None:
        with _store_lock:
            if _store is None:
                backend = caches["default"]
                if isinstance(backend, RedisCache):
                    _store = GuardedStore(RedisStore(backend))
                elif isinstance(backend, LocMemCache):
                    _store = GuardedStore(LocalStore(backend))
                else:
                    raise ImproperlyConfigured(
                        "Rate limits need the default cache to be Redis (REDIS_URL) or local "
                        f"memory; got {type(backend).__name__}."
                    )
    return _store


def ttl_until(reset: float, at: float) -> int:
    return max(1, math.ceil(reset - at)) + GRACE_SECONDS


@receiver(setting_changed)
def _forget_store(*, setting: str, **kwargs) -> None:
    global _store
    if setting == "CACHES":
        _store = None
