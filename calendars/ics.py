"""The VEVENT of a booked meeting, as the host rep's calendar stores it."""

from __future__ import annotations

from datetime import UTC, datetime

import icalendar

PRODID = "-//salesagent//calendars//EN"


def meeting_event(*, uid: str, starts_at: datetime, ends_at: datetime, sequence: int,
                  summary: str, description: str, organizer: tuple[str, str] | None,
                  attendee: tuple[str, str], now: datetime) -> bytes:
    """One VCALENDAR with one VEVENT. ``organizer`` and ``attendee`` are (name, email).

    No METHOD: a calendar collection stores plain objects (RFC 4791, 4.1). The attendee carries
    SCHEDULE-AGENT=CLIENT (RFC 6638, 7.1) so that a server doing implicit scheduling does not
    send invitations of its own: the visitor's invitation is the service's email.
    """
    calendar = icalendar.Calendar()
    calendar.add("prodid", PRODID)
    calendar.add("version", "2.0")
    event = icalendar.Event()
    event.add("uid", uid)
    event.add("dtstamp", now.astimezone(UTC))
    event.add("dtstart", starts_at.astimezone(UTC))
    event.add("dtend", ends_at.astimezone(UTC))
    event.add("sequence", sequence)
    event.add("summary", summary)
    event.add("description", description)
    event.add("status", "CONFIRMED")
    event.add("transp", "OPAQUE")
    if organizer is not None:
        event.add("organizer", _address(*organizer))
    attendee_address = _address(*attendee)
    attendee_address.params.update({"ROLE": "REQ-PARTICIPANT", "PARTSTAT": "NEEDS-ACTION",
                                    "RSVP": "FALSE", "SCHEDULE-AGENT": "CLIENT"})
    event.add("attendee", attendee_address)
    calendar.add_component(event)
    return calendar.to_ical()


def _address(name: str, email: str) -> icalendar.vCalAddress:
    address = icalendar.vCalAddress(f"mailto:{email}")
    if name:
        address.params["CN"] = icalendar.vText(name)
    return address
