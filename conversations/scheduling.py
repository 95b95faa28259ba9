"""Meeting slots from a tenant's availability: working days and hours in its time zone, one
meeting length, minus the meetings already booked, and, when the sales reps connected their
calendars, minus the times when none of them is free.

The calendars are another app's (``calendars``, which imports this one): it registers itself with
``use_calendars`` and this module asks it through the small ``CalendarSource`` protocol, so the
booking path never waits on a calendar server inside a transaction (docs/calendars.md).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any, Protocol
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from conversations.agent.types import Slot
from tenants.models import Tenant

from .models import Meeting, MeetingStatus

LEAD_TIME = timedelta(hours=2)  # no meeting sooner than this
HORIZON_DAYS = 21


class CalendarSource(Protocol):
    def prepare(self, tenant: Tenant, *, now: datetime) -> None:
        """Gets the reps' free/busy ready (bounded in time); called outside any transaction."""

    def free_starts(self, tenant: Tenant, starts: list[datetime], *, minutes: int
                    ) -> set[datetime] | None:
        """Which ``starts`` some rep is free at, from what ``prepare`` got; None: no opinion."""

    def pick_host(self, tenant: Tenant, starts_at: datetime, ends_at: datetime) -> Any:
        """The rep (a tenant user) a meeting at this slot is with, or None."""


_calendars: CalendarSource | None = None


def use_calendars(source: CalendarSource | None) -> None:
    global _calendars
    _calendars = source


def prepare_calendars(tenant: Tenant, *, now: datetime) -> None:
    """Before a turn that may offer or book slots, outside its transaction."""
    if _calendars is not None:
        _calendars.prepare(tenant, now=now)


def calendar_free(tenant: Tenant, starts: list[datetime]) -> set[datetime] | None:
    if _calendars is None or not starts:
        return None
    return _calendars.free_starts(tenant, starts, minutes=tenant.meeting_minutes)


def pick_host(tenant: Tenant, starts_at: datetime, ends_at: datetime) -> Any:
    """The rep free at this slot per their calendar (round-robin), or None: no calendar decides."""
    return None if _calendars is None else _calendars.pick_host(tenant, starts_at, ends_at)


def zone_of(tenant: Tenant) -> ZoneInfo:
    return _zone(tenant)


def _zone(tenant: Tenant) -> ZoneInfo:
    try:
        return ZoneInfo(tenant.meeting_timezone or "UTC")
    except (ZoneInfoNotFoundError, ValueError):
        return ZoneInfo("UTC")


def _days(tenant: Tenant) -> set[int]:
    return set(tenant.meeting_days or [0, 1, 2, 3, 4])


def make_slot(tenant: Tenant, start: datetime) -> Slot:
    zone = _zone(tenant)
    local = start.astimezone(zone)
    label = f"{local:%a %d %b, %H:%M} {local.tzname()}"
    return Slot(start=start.astimezone(UTC), end=start.astimezone(UTC)
                + timedelta(minutes=tenant.meeting_minutes), label=label)


def is_bookable(tenant: Tenant, start: datetime, *, now: datetime) -> bool:
    """Whether ``start`` is a slot of the tenant's availability (not whether it is free)."""
    if start < now + LEAD_TIME or start > now + timedelta(days=HORIZON_DAYS):
        return False
    local = start.astimezone(_zone(tenant))
    minutes = local.hour * 60 + local.minute - tenant.meeting_start_hour * 60
    end_minutes = minutes + tenant.meeting_minutes
    return (
        local.weekday() in _days(tenant)
        and minutes >= 0
        and minutes % tenant.meeting_minutes == 0
        and end_minutes <= (tenant.meeting_end_hour - tenant.meeting_start_hour) * 60
        and local.second == 0
    )


def booked_starts(tenant: Tenant, livemode: bool, *, since: datetime) -> set[datetime]:
    return set(
        Meeting.objects.filter(tenant=tenant, livemode=livemode, status=MeetingStatus.SCHEDULED,
                               starts_at__gte=since).values_list("starts_at", flat=True)
    )


def is_free(tenant: Tenant, start: datetime) -> bool:
    """Whether the reps' calendars leave ``start`` free (True when no calendar decides)."""
    free = calendar_free(tenant, [start])
    return free is None or start in free


def free_slots(tenant: Tenant, livemode: bool, *, now: datetime, count: int = 3) -> list[Slot]:
    """The next ``count`` free slots, at most one per day so the choice spans several days."""
    taken = booked_starts(tenant, livemode, since=now)
    days = [[s for s in starts if s not in taken] for starts in _bookable_days(tenant, now)]
    free = calendar_free(tenant, [s for starts in days for s in starts])
    firsts = [_first_free(starts, free) for starts in days]
    return [make_slot(tenant, start) for start in firsts if start][:count]


def _first_free(starts: list[datetime], free: set[datetime] | None) -> datetime | None:
    return next((s for s in starts if free is None or s in free), None)


def _bookable_days(tenant: Tenant, now: datetime) -> list[list[datetime]]:
    """The bookable starts (UTC) of each day of the horizon, day by day."""
    zone = _zone(tenant)
    day = now.astimezone(zone).date()
    found: list[list[datetime]] = []
    for _ in range(HORIZON_DAYS):
        starts: list[datetime] = []
        if day.weekday() in _days(tenant):
            start = datetime(day.year, day.month, day.day, tenant.meeting_start_hour, tzinfo=zone)
            while start.hour < tenant.meeting_end_hour:
                utc = start.astimezone(UTC)
                if is_bookable(tenant, utc, now=now):
                    starts.append(utc)
                start += timedelta(minutes=tenant.meeting_minutes)
        found.append(starts)
        day += timedelta(days=1)
    return found


def parse_token(token: str) -> datetime | None:
    try:
        return datetime.strptime(token, "%Y-%m-%dT%H:%MZ").replace(tzinfo=UTC)
    except (TypeError, ValueError):
        return None
