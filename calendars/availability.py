"""The reps' free/busy, as the scheduler asks for it (``conversations.scheduling``'s calendar
source), and the choice of the rep a meeting is with.

A chat turn that may offer or book slots first calls ``prepare`` outside any transaction: it
reads each connected rep's busy times for the scheduling horizon from the cache, or from the
calendars (in parallel, ``CALENDARS_TIMEOUT_SECONDS`` at most for all of them together), and
caches them for ``CALENDARS_FREEBUSY_SECONDS``. A calendar that fails or is late is cached as
down for as long, and logged. The turn's transaction then reads only the cache:

- a slot is free when at least one rep is free at it;
- a rep whose calendar is down or not cached counts as free, so with any such rep (or no
  connected calendar at all) the availability table alone decides, as before calendars.
"""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor, wait
from datetime import UTC, datetime, timedelta
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.utils import timezone

from conversations import scheduling
from tenants.models import Tenant

from . import dav, selectors
from .errors import CalendarUnavailable
from .models import CalendarConnection

logger = logging.getLogger("salesagent.calendars")

DOWN = "down"  # the cached value of a calendar that could not be read
_pool = ThreadPoolExecutor(max_workers=8, thread_name_prefix="calendars")
Spans = list[tuple[float, float]]  # busy periods as POSIX seconds, for a compact cache value


def cache_seconds() -> int:
    return int(getattr(settings, "CALENDARS_FREEBUSY_SECONDS", 60))


def window(now: datetime) -> tuple[datetime, datetime]:
    """The period read of every calendar: from the start of today (UTC) past the horizon. One
    window a day, so that the turns of a day share the cached answer."""
    start = now.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    return start, start + timedelta(days=scheduling.HORIZON_DAYS + 2)


def cache_key(connection: CalendarConnection, start: datetime) -> str:
    # The verification time is in the key: connecting again forgets what was cached.
    stamp = int(connection.verified_at.timestamp()) if connection.verified_at else 0
    return f"calendars:busy:{connection.pk.hex}:{stamp}:{start:%Y%m%d}"


def prepare(tenant: Tenant, *, now: datetime) -> None:
    """Makes sure every connected rep's free/busy is in the cache (or known to be down)."""
    connections = selectors.connected(tenant)
    if not connections:
        return
    start, end = window(now)
    keys = {c.pk: cache_key(c, start) for c in connections}
    cached = cache.get_many(list(keys.values()))
    missing = [c for c in connections if keys[c.pk] not in cached]
    if not missing:
        return
    zone = scheduling.zone_of(tenant)
    futures = {_pool.submit(_fetch, _account(c), keys[c.pk], start, end, c.freebusy_query, zone,
                            c.user_id): c for c in missing}
    _done, late = wait(futures, timeout=dav.timeout_seconds())
    for future in late:
        connection = futures[future]
        logger.warning("Calendar of user %s did not answer within %g s: its slots come from the "
                       "availability table for now", connection.user_id, dav.timeout_seconds())
        cache.add(keys[connection.pk], DOWN, cache_seconds())  # unless the answer came meanwhile


def _account(connection: CalendarConnection) -> dav.Account:
    return dav.Account(url=connection.calendar_url, username=connection.username,
                       password=connection.password)


def _fetch(account: dav.Account, key: str, start: datetime, end: datetime, freebusy: bool,
           zone: Any, user_id: int) -> None:
    try:
        periods = dav.busy_periods(account, start=start, end=end, freebusy_query=freebusy,
                                   zone=zone)
    except CalendarUnavailable as exc:
        logger.warning("Calendar of user %s could not be read (%s): its slots come from the "
                       "availability table for now", user_id, exc)
        cache.set(key, DOWN, cache_seconds())
        return
    cache.set(key, [(a.timestamp(), b.timestamp()) for a, b in periods], cache_seconds())


def _busy_by_rep(tenant: Tenant, connections: list[CalendarConnection]
                 ) -> list[tuple[CalendarConnection, Spans | None]]:
    """Each rep's cached busy spans; None where unknown (not cached, or down)."""
    start, _ = window(timezone.now())
    keys = {c.pk: cache_key(c, start) for c in connections}
    cached = cache.get_many(list(keys.values()))
    return [(c, v if isinstance(v := cached.get(keys[c.pk]), list) else None) for c in connections]


def _free(spans: Spans | None, start: datetime, end: datetime) -> bool:
    if spans is None:
        return True
    a, b = start.timestamp(), end.timestamp()
    return not any(busy_from < b and busy_to > a for busy_from, busy_to in spans)


class CalendarSource:
    """What ``conversations.scheduling`` asks of the calendars (``use_calendars``)."""

    def prepare(self, tenant: Tenant, *, now: datetime) -> None:
        prepare(tenant, now=now)

    def free_starts(self, tenant: Tenant, starts: list[datetime], *, minutes: int
                    ) -> set[datetime] | None:
        """The starts at which at least one connected rep is free; None when the table alone
        decides (no connected calendar, or one whose free/busy is unknown)."""
        connections = selectors.connected(tenant)
        if not connections:
            return None
        reps = _busy_by_rep(tenant, connections)
        if any(spans is None for _c, spans in reps):
            return None
        length = timedelta(minutes=minutes)
        return {s for s in starts if any(_free(spans, s, s + length) for _c, spans in reps)}

    def pick_host(self, tenant: Tenant, starts_at: datetime, ends_at: datetime) -> Any:
        return pick_host(tenant, starts_at, ends_at)


SOURCE = CalendarSource()


def pick_host(tenant: Tenant, starts_at: datetime, ends_at: datetime) -> Any:
    """The rep a meeting at this slot is with: round-robin (booked longest ago first) among the
    reps with a connected calendar who are free then (a calendar that is down or not cached
    counts as free); None when no rep has a calendar, or none is free.

    The seam for the booking path's host picking (docs/calendars.md, "Which rep"): call it in
    the booking's transaction, after ``prepare``: it reads only the cache, and it moves the
    round-robin (the chosen rep's ``last_booked_at``).
    """
    connections = selectors.connected(tenant)
    free = [c for c, spans in _busy_by_rep(tenant, connections) if _free(spans, starts_at, ends_at)]
    if not free:
        return None
    never = datetime.min.replace(tzinfo=UTC)
    chosen = min(free, key=lambda c: (c.last_booked_at or never, c.created_at, c.pk))
    CalendarConnection.objects.filter(pk=chosen.pk).update(last_booked_at=timezone.now())
    return chosen.user
