"""When a person works: their time zone and working hours, the tenant's where they set none
(docs/dashboard.md, "Availability and routing"). Pure reads of the rows they are given."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from core.errors import FieldError, Unprocessable

from .models import Tenant, User

WEEKDAYS = (0, 1, 2, 3, 4)
LOOKAHEAD_DAYS = 8  # a weekly schedule repeats within a week; one more day for time zones


@dataclass(frozen=True)
class Hours:
    """Working days (0 = Monday) and hours, ``start_hour`` up to ``end_hour`` (24: midnight),
    in ``zone``."""

    zone: ZoneInfo
    days: frozenset[int]
    start_hour: int
    end_hour: int


def zone_named(name: str | None, fallback: str = "UTC") -> ZoneInfo:
    for candidate in (name, fallback, "UTC"):
        if candidate:
            try:
                return ZoneInfo(candidate)
            except (ZoneInfoNotFoundError, ValueError):
                continue
    return ZoneInfo("UTC")


def tenant_hours(tenant: Tenant) -> dict[str, Any]:
    """The tenant's meeting days and hours, in the shape of ``User.working_hours``."""
    return {"days": sorted(tenant.meeting_days or WEEKDAYS),
            "start_hour": tenant.meeting_start_hour, "end_hour": tenant.meeting_end_hour}


def hours_of(user: User, tenant: Tenant) -> Hours:
    """The person's working hours: their own, or the tenant's, in their zone or the tenant's."""
    shape = user.working_hours or tenant_hours(tenant)
    return Hours(zone=zone_named(user.timezone, tenant.meeting_timezone),
                 days=frozenset(shape.get("days") or WEEKDAYS),
                 start_hour=int(shape.get("start_hour", 9)), end_hour=int(shape.get("end_hour", 17)))


def within_hours(hours: Hours, now: datetime) -> bool:
    local = now.astimezone(hours.zone)
    return (local.weekday() in hours.days
            and hours.start_hour <= local.hour + local.minute / 60 < hours.end_hour)


def next_start(hours: Hours, now: datetime) -> datetime | None:
    """The first start of a working period after ``now``; None for hours that never start."""
    local_today = now.astimezone(hours.zone).date()
    for offset in range(LOOKAHEAD_DAYS + 1):
        day = local_today + timedelta(days=offset)
        if day.weekday() not in hours.days or hours.start_hour >= hours.end_hour:
            continue
        start = datetime.combine(day, time(hours.start_hour), tzinfo=hours.zone)
        if start > now:
            return start
    return None


def next_opening(people: Iterable[User], tenant: Tenant, now: datetime) -> datetime | None:
    """The earliest start of any of ``people``'s working hours after ``now``."""
    starts = [start for person in people
              if (start := next_start(hours_of(person, tenant), now)) is not None]
    return min(starts, default=None)


def clean_working_hours(raw: Any) -> dict[str, Any] | None:
    """``raw`` as ``User.working_hours`` (None: the tenant's); Unprocessable with the reasons."""
    if raw in (None, {}, ""):
        return None
    if not isinstance(raw, dict):
        raise Unprocessable(details=[FieldError("working_hours", "invalid_format",
                                                "Days, a start hour and an end hour.")])
    days, start, end = raw.get("days"), raw.get("start_hour"), raw.get("end_hour")
    problems = _problems(days, start, end)
    if problems:
        raise Unprocessable("Working hours: " + " ".join(p.message for p in problems),
                            details=problems)
    return {"days": sorted(set(days)), "start_hour": start, "end_hour": end}


def _is_hour(value: Any, low: int, high: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


def _problems(days: Any, start: Any, end: Any) -> list[FieldError]:
    problems = []
    if not (isinstance(days, list) and days and all(_is_hour(d, 0, 6) for d in days)):
        problems.append(FieldError("days", "invalid_format", "Choose at least one day."))
    if not _is_hour(start, 0, 23):
        problems.append(FieldError("start_hour", "out_of_range", "An hour from 0 to 23."))
    if not _is_hour(end, 1, 24):
        problems.append(FieldError("end_hour", "out_of_range", "An hour from 1 to 24."))
    elif _is_hour(start, 0, 23) and end <= start:
        problems.append(FieldError("end_hour", "out_of_range", "The end comes after the start."))
    return problems
