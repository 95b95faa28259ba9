"""The CalDAV side (RFC 4791), through the ``caldav`` client and ``icalendar``: finding a
calendar behind a URL, reading its busy times, writing and removing one meeting's VEVENT.

Every request has the ``CALENDARS_TIMEOUT_SECONDS`` timeout, sends Basic credentials at once (no
401 round trip: app passwords are Basic everywhere), follows no redirect and does no DNS-based
service discovery (RFC 6764): the URL given is the one used.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta, tzinfo
from typing import Any

import caldav
import icalendar
from caldav.elements import dav
from caldav.lib import error as dav_error
from django.conf import settings

from . import targets
from .errors import CalendarAuthFailed, CalendarUnavailable, CalendarUrlFailed, NotACalendar

logger = logging.getLogger("salesagent.calendars")

CALENDAR_TYPE = "{urn:ietf:params:xml:ns:caldav}calendar"
ADDRESSBOOK_TYPE = "{urn:ietf:params:carddav}addressbook"
COLLECTION_TYPE = "{DAV:}collection"
BUSY_TYPES = {"BUSY", "BUSY-UNAVAILABLE", "BUSY-TENTATIVE"}
Period = tuple[datetime, datetime]


@dataclass(frozen=True)
class Account:
    """What a request needs: the calendar's URL and the rep's credentials."""

    url: str
    username: str
    password: str


@dataclass(frozen=True)
class Found:
    calendar_url: str
    freebusy_query: bool


def timeout_seconds() -> float:
    return float(getattr(settings, "CALENDARS_TIMEOUT_SECONDS", 2))


def _client(account: Account) -> caldav.DAVClient:
    client = caldav.DAVClient(
        url=account.url, username=account.username, password=account.password,
        auth_type="basic", timeout=timeout_seconds(), enable_rfc6764=False,
        require_tls=not getattr(settings, "CALENDARS_ALLOW_HTTP", False),
        rate_limit_handle=False)
    client.session.max_redirects = 0
    return client


# --- connecting -----------------------------------------------------------------------------

def verify(account: Account) -> Found:
    """The calendar at (or under) ``account.url``; raises the CalendarRefused that names what
    failed: authentication, the URL, or that there is no calendar there."""
    targets.check_url(account.url)
    client = _client(account)
    try:
        calendar_url = _calendar_url(client, account.url)
        targets.check_url(calendar_url)
        return Found(calendar_url=calendar_url, freebusy_query=_answers_freebusy(client, calendar_url))
    except dav_error.AuthorizationError:
        raise CalendarAuthFailed("Authentication failed: the server refused this username and "
                                 "password (use an app password where the provider has them).") from None
    except dav_error.NotFoundError:
        raise CalendarUrlFailed("Nothing at this URL (404): check the CalDAV URL.") from None
    except dav_error.DAVError as exc:
        raise CalendarUrlFailed(f"This URL is not a CalDAV server ({_short(exc)}).") from None
    except (OSError, ValueError) as exc:  # niquests' errors are OSErrors
        raise CalendarUrlFailed(f"Could not reach the URL: {_reason(exc)}.") from None


def _calendar_url(client: caldav.DAVClient, url: str) -> str:
    types = _resource_types(client, url)
    if CALENDAR_TYPE in types:
        return url
    if ADDRESSBOOK_TYPE in types:
        raise NotACalendar("This URL is an address book, not a calendar.")
    if COLLECTION_TYPE not in types:
        raise NotACalendar("This URL is not a calendar: give the calendar's URL or the "
                           "account's CalDAV URL.")
    # A principal, a calendar home or the server's root: the account's first event calendar.
    for calendar in client.principal().calendars():
        if "VEVENT" in calendar.get_supported_components():
            return str(calendar.url)
    raise NotACalendar("Signed in, but the account has no calendar for events: create one, or "
                       "give the calendar's own URL.")


def _resource_types(client: caldav.DAVClient, url: str) -> set[str]:
    props = client.calendar(url=url).get_properties([dav.ResourceType()])
    found: Any = props.get(dav.ResourceType.tag) or []
    return {found} if isinstance(found, str) else set(found)


def _answers_freebusy(client: caldav.DAVClient, calendar_url: str) -> bool:
    start = datetime.now(UTC).replace(microsecond=0)
    try:
        client.calendar(url=calendar_url).freebusy_request(start, start + timedelta(days=1))
    except dav_error.AuthorizationError:
        raise
    except dav_error.DAVError:
        return False
    return True


# --- free/busy ------------------------------------------------------------------------------

def busy_periods(account: Account, *, start: datetime, end: datetime, freebusy_query: bool,
                 zone: tzinfo) -> list[Period]:
    """The busy times of the calendar between ``start`` and ``end`` (UTC), from a free-busy
    REPORT or, where the server has none, from the events of a time-range REPORT. Dates and
    floating times are read in ``zone`` (the tenant's). Raises CalendarUnavailable."""
    try:
        targets.check_url(account.url)
        calendar = _client(account).calendar(url=account.url)
        if freebusy_query:
            reply = calendar.freebusy_request(start, end)
            return _freebusy_periods(icalendar.Calendar.from_ical(reply.data), zone)
        found = calendar.search(start=start, end=end, event=True, expand=True)
        return [p for r in found if (p := _event_period(r.icalendar_component, zone))]
    except (dav_error.DAVError, CalendarUrlFailed, OSError, ValueError) as exc:
        raise CalendarUnavailable(_reason(exc)) from exc


def _freebusy_periods(reply: icalendar.Calendar, zone: tzinfo) -> list[Period]:
    periods: list[Period] = []
    for component in reply.walk("VFREEBUSY"):
        values = component.get("FREEBUSY") or []
        for value in values if isinstance(values, list) else [values]:
            if str(value.params.get("FBTYPE", "BUSY")).upper() not in BUSY_TYPES:
                continue
            begin, until = value.dt
            begin = _utc(begin, zone)
            periods.append((begin, begin + until if isinstance(until, timedelta)
                            else _utc(until, zone)))
    return periods


def _event_period(event: icalendar.Component, zone: tzinfo) -> Period | None:
    if str(event.get("TRANSP", "OPAQUE")).upper() == "TRANSPARENT":
        return None
    if str(event.get("STATUS", "")).upper() == "CANCELLED" or "DTSTART" not in event:
        return None
    begin = event.decoded("DTSTART")
    if "DTEND" in event:
        until = event.decoded("DTEND")
    elif "DURATION" in event:
        until = begin + event.decoded("DURATION")
    else:  # RFC 5545: a day for a date, an instant for a date-time
        until = begin + timedelta(days=1) if not isinstance(begin, datetime) else begin
    return _utc(begin, zone), _utc(until, zone)


def _utc(value: date | datetime, zone: tzinfo) -> datetime:
    if not isinstance(value, datetime):
        value = datetime(value.year, value.month, value.day)
    if value.tzinfo is None:
        value = value.replace(tzinfo=zone)
    return value.astimezone(UTC)


# --- writing --------------------------------------------------------------------------------

def put_event(account: Account, href: str, ics: bytes) -> str:
    """PUTs the calendar object at ``href``; its ETag. Raises CalendarUnavailable."""
    response = _send(account, href, "PUT", ics)
    return str(response.headers.get("ETag", ""))[:255]


def delete_event(account: Account, href: str) -> None:
    """Removes the calendar object at ``href`` (already gone is fine). Raises
    CalendarUnavailable."""
    _send(account, href, "DELETE", b"", missing_ok=True)


def _send(account: Account, href: str, method: str, body: bytes, *, missing_ok: bool = False):
    headers = {"Content-Type": "text/calendar; charset=utf-8"} if body else {}
    try:
        targets.check_url(href)
        response = _client(account).request(href, method, body, headers)
    except (dav_error.DAVError, CalendarUrlFailed, OSError, ValueError) as exc:
        raise CalendarUnavailable(_reason(exc)) from exc
    if response.status == 404 and missing_ok:
        return response
    if response.status in (401, 403):
        raise CalendarUnavailable(f"The calendar refused the credentials ({response.status}): "
                                  f"connect it again.")
    if not 200 <= response.status < 300:
        raise CalendarUnavailable(f"The calendar answered {response.status} to the {method}.")
    return response


def _reason(exc: BaseException) -> str:
    if isinstance(exc, CalendarUrlFailed):
        return exc.message
    if isinstance(exc, dav_error.AuthorizationError):
        return "The calendar refused the credentials: connect it again."
    if isinstance(exc, TimeoutError) or "timed out" in str(exc).lower():
        return f"No answer within {timeout_seconds():g} s."
    if "refused" in str(exc).lower():
        return "Connection refused."
    return _short(exc)


def _short(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}"[:300]
