"""Meeting slots from a tenant's availability: working days and hours in its time zone, one
meeting length, minus the meetings already booked, and, when the sales reps connected their
calendars, minus the times when none of them is free.

The calendars are another app's (``calendars``, which imports this one): it registers itself with
``use_calendars`` and this module asks it through the small ``CalendarSource`` protocol, so the
booking path never waits on a calendar server inside a transaction (docs/calendars.md).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any, Protocol
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from agent.interface import Slot, Wish
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


# --- how a visitor reads a slot ---------------------------------------------------------------

# An IANA name: letters, digits, "_", "+", "-" in "/"-separated parts ("America/Los_Angeles",
# "Etc/GMT+5"); nothing that could be a path or hold a NUL.
_ZONE_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_+\-]*(?:/[A-Za-z0-9_+\-]+){0,2}")
_MAX_ZONE_NAME = 64


def visitor_zone(name: Any) -> str | None:
    """``name`` if it is an IANA time zone of the tz database, else None (docs/conversations.md,
    "Time zone"): whatever a client sends, an unknown zone is ignored, never an error."""
    if not isinstance(name, str) or len(name) > _MAX_ZONE_NAME or not _ZONE_NAME.fullmatch(name):
        return None
    try:
        return ZoneInfo(name).key
    except (ZoneInfoNotFoundError, ValueError, OSError):
        return None


@dataclass(frozen=True)
class SlotView:
    """How a visitor reads the slots: in their time zone, with the day and month in their
    language (the agent's seven, ``core.languages.SPOKEN``; another reads English)."""

    zone: ZoneInfo
    language: str = "en"


def view_for(tenant: Tenant, zone_name: str | None, language: str) -> SlotView:
    """The visitor's zone when the conversation knows a valid one, else the tenant's."""
    known = visitor_zone(zone_name)
    return SlotView(zone=ZoneInfo(known) if known else _zone(tenant), language=language)


def meeting_view(meeting: Meeting) -> SlotView:
    """How the visitor of ``meeting`` reads its time: in the zone of the chat that booked it,
    in English as the emails and the pages of its links are written."""
    conversation = meeting.conversation
    zone = (conversation.metadata or {}).get("timezone") if conversation is not None else None
    return view_for(meeting.tenant, zone, "en")


# Short day and month names, Monday and January first (CLDR's abbreviations), in every
# language the agent speaks (tests/agent/test_phrases.py checks that none is missing).
_DAYS = {
    "en": ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"),
    "de": ("Mo.", "Di.", "Mi.", "Do.", "Fr.", "Sa.", "So."),
    "fr": ("lun.", "mar.", "mer.", "jeu.", "ven.", "sam.", "dim."),
    "es": ("lun", "mar", "mié", "jue", "vie", "sáb", "dom"),
    "it": ("lun", "mar", "mer", "gio", "ven", "sab", "dom"),
    "pt": ("seg.", "ter.", "qua.", "qui.", "sex.", "sáb.", "dom."),
    "nl": ("ma", "di", "wo", "do", "vr", "za", "zo"),
}
_MONTHS = {
    "en": ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"),
    "de": ("Jan.", "Feb.", "März", "Apr.", "Mai", "Juni", "Juli", "Aug.", "Sept.", "Okt.",
           "Nov.", "Dez."),
    "fr": ("janv.", "févr.", "mars", "avr.", "mai", "juin", "juil.", "août", "sept.", "oct.",
           "nov.", "déc."),
    "es": ("ene", "feb", "mar", "abr", "may", "jun", "jul", "ago", "sept", "oct", "nov", "dic"),
    "it": ("gen", "feb", "mar", "apr", "mag", "giu", "lug", "ago", "set", "ott", "nov", "dic"),
    "pt": ("jan.", "fev.", "mar.", "abr.", "mai.", "jun.", "jul.", "ago.", "set.", "out.",
           "nov.", "dez."),
    "nl": ("jan", "feb", "mrt", "apr", "mei", "jun", "jul", "aug", "sep", "okt", "nov", "dec"),
}
_DATE = {"en": "{day} {d} {month}", "de": "{day} {d}. {month}", "fr": "{day} {d} {month}",
         "es": "{day} {d} {month}", "it": "{day} {d} {month}", "pt": "{day}, {d} de {month}",
         "nl": "{day} {d} {month}"}


def zone_label(zone: ZoneInfo) -> str:
    """The zone as a visitor recognises it: its city ("Paris", "Los Angeles"), or the whole
    name when it has none ("UTC", "Etc/GMT+5")."""
    area, _, city = zone.key.rpartition("/")
    if not area or area == "Etc":
        return zone.key
    return city.replace("_", " ")


def slot_label(start: datetime, view: SlotView) -> str:
    """"Tue 24 Nov, 10:00 (Paris)": the day, the time in the visitor's zone, and that zone."""
    local = start.astimezone(view.zone)
    language = view.language if view.language in _DAYS else "en"
    date = _DATE[language].format(day=_DAYS[language][local.weekday()], d=local.day,
                                  month=_MONTHS[language][local.month - 1])
    return f"{date}, {local:%H:%M} ({zone_label(view.zone)})"


def make_slot(tenant: Tenant, start: datetime, view: SlotView | None = None) -> Slot:
    """The slot starting at ``start``, labelled for ``view`` (a visitor), or without one in
    the tenant's zone with its abbreviation ("Tue 24 Nov, 10:00 CET"), as the staff read it."""
    utc = start.astimezone(UTC)
    if view is None:
        local = start.astimezone(_zone(tenant))
        label = f"{local:%a %d %b, %H:%M} {local.tzname()}"
    else:
        label = slot_label(start, view)
    return Slot(start=utc, end=utc + timedelta(minutes=tenant.meeting_minutes), label=label)


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


def free_slots(tenant: Tenant, livemode: bool, *, now: datetime, count: int = 3,
               view: SlotView | None = None, wish: Wish | None = None) -> list[Slot]:
    """The next ``count`` free slots, at most one per day so the choice spans several days;
    labelled for ``view`` (``make_slot``). With the visitor's ``wish`` (``agent.when``: days
    and parts of the day, in the visitor's zone), the free slots it fits come first
    (``_wished``), then the next ones as without."""
    taken = booked_starts(tenant, livemode, since=now)
    days = [[s for s in starts if s not in taken] for starts in _bookable_days(tenant, now)]
    free = calendar_free(tenant, [s for starts in days for s in starts])
    firsts = [start for start in (_first_free(starts, free) for starts in days) if start]
    chosen = [] if wish is None else _wished(days, free, wish, _view_zone(tenant, view), count)
    chosen += [start for start in firsts if start not in chosen]
    return [make_slot(tenant, start, view) for start in chosen[:count]]


def fits(wish: Wish, start: datetime, tenant: Tenant, view: SlotView | None) -> bool:
    """Whether the slot at ``start`` is one the visitor's ``wish`` asked for."""
    local = start.astimezone(_view_zone(tenant, view))
    return wish.fits(local.date(), local.hour)


def _view_zone(tenant: Tenant, view: SlotView | None) -> ZoneInfo:
    return view.zone if view is not None else _zone(tenant)


def _wished(days: list[list[datetime]], free: set[datetime] | None, wish: Wish, zone: ZoneInfo,
            count: int) -> list[datetime]:
    """Up to ``count`` free starts that ``wish`` fits, in time order: spread over the days it
    names (the first of each day, then the second...), and over each day (its first, middle
    and last start first), so that "next week" offers several days and "Friday afternoon"
    several hours."""
    by_day: dict[date, list[datetime]] = {}
    for starts in days:
        for start in starts:
            local = start.astimezone(zone)
            if (free is None or start in free) and wish.fits(local.date(), local.hour):
                by_day.setdefault(local.date(), []).append(start)
    spread = [_spread(starts) for _day, starts in sorted(by_day.items())]
    picked = [starts[i] for i in range(count) for starts in spread if i < len(starts)]
    return sorted(picked[:count])


def _spread(starts: list[datetime]) -> list[datetime]:
    """A day's starts, its first, middle and last first, then the others in order."""
    ends = [starts[0], starts[len(starts) // 2], starts[-1]]
    return list(dict.fromkeys([*ends, *starts]))


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
            midnight = datetime(day.year, day.month, day.day, tzinfo=zone)
            start = midnight + timedelta(hours=tenant.meeting_start_hour)
            # Compared as times, not hours: a day that ends at 24:00 ends at the next midnight.
            day_end = midnight + timedelta(hours=tenant.meeting_end_hour)
            while start < day_end:
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
