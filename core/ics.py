"""The one VEVENT of a meeting, in the two places it goes: the visitor's invitation email
(``METHOD:REQUEST`` or ``CANCEL``, RFC 5546) and the host rep's CalDAV calendar (no METHOD: a
calendar collection stores plain objects, RFC 4791 4.1). The callers differ only in the
parameters below; the event's shape is written once."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime

import icalendar

PRODID = "-//Sales Agent Service//Meetings//EN"


@dataclass(frozen=True)
class Party:
    """An ORGANIZER or ATTENDEE: a mailbox and the name shown for it (CN), if any."""

    email: str
    name: str = ""
    params: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class MeetingEvent:
    uid: str
    sequence: int
    stamp: datetime
    starts_at: datetime
    ends_at: datetime
    summary: str
    attendee: Party
    organizer: Party | None = None
    description: str = ""
    cancelled: bool = False


def calendar(event: MeetingEvent, *, method: str | None = None, transp: str | None = None) -> bytes:
    """One VCALENDAR holding ``event``; ``method`` for an iTIP message (email), none for storage."""
    cal = icalendar.Calendar()
    cal.add("prodid", PRODID)
    cal.add("version", "2.0")
    if method:
        cal.add("method", method)
    vevent = icalendar.Event()
    vevent.add("uid", event.uid)
    vevent.add("sequence", event.sequence)
    vevent.add("dtstamp", event.stamp.astimezone(UTC))
    vevent.add("dtstart", event.starts_at.astimezone(UTC))
    vevent.add("dtend", event.ends_at.astimezone(UTC))
    vevent.add("summary", event.summary)
    if event.description:
        vevent.add("description", event.description)
    vevent.add("status", "CANCELLED" if event.cancelled else "CONFIRMED")
    if transp:
        vevent.add("transp", transp)
    if event.organizer is not None:
        vevent.add("organizer", _address(event.organizer))
    vevent.add("attendee", _address(event.attendee))
    cal.add_component(vevent)
    return cal.to_ical()


def _address(party: Party) -> icalendar.vCalAddress:
    address = icalendar.vCalAddress(f"mailto:{party.email}")
    if party.name:
        address.params["CN"] = icalendar.vText(party.name)
    address.params.update(party.params)
    return address
