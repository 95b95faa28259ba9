"""Meeting slots from a tenant's availability: working days and hours in its time zone, one
meeting length, minus the meetings already booked."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from conversations.agent.types import Slot
from tenants.models import Tenant

from .models import Meeting, MeetingStatus

LEAD_TIME = timedelta(hours=2)  # no meeting sooner than this
HORIZON_DAYS = 21


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


def free_slots(tenant: Tenant, livemode: bool, *, now: datetime, count: int = 3) -> list[Slot]:
    """The next ``count`` free slots, at most one per day so the choice spans several days."""
    zone = _zone(tenant)
    taken = booked_starts(tenant, livemode, since=now)
    slots: list[Slot] = []
    day = now.astimezone(zone).date()
    for _ in range(HORIZON_DAYS):
        if len(slots) >= count:
            break
        if day.weekday() in _days(tenant):
            start = datetime(day.year, day.month, day.day, tenant.meeting_start_hour, tzinfo=zone)
            while start.hour < tenant.meeting_end_hour:
                utc = start.astimezone(UTC)
                if is_bookable(tenant, utc, now=now) and utc not in taken:
                    slots.append(make_slot(tenant, utc))
                    break
                start += timedelta(minutes=tenant.meeting_minutes)
        day += timedelta(days=1)
    return slots


def parse_token(token: str) -> datetime | None:
    try:
        return datetime.strptime(token, "%Y-%m-%dT%H:%MZ").replace(tzinfo=UTC)
    except (TypeError, ValueError):
        return None
