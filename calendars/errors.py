"""What connecting a calendar can fail on, each naming the part that failed (docs/calendars.md,
"When connecting fails"). All are 422s: well-formed input the calendar server did not accept."""

from __future__ import annotations

from core.errors import FieldError, Unprocessable


class CalendarRefused(Unprocessable):
    """Base of the connection errors; ``part`` is what failed: authentication, url or calendar."""

    part = "url"
    field = "url"

    def __init__(self, message: str):
        super().__init__(message, details=[FieldError(self.field, "invalid", message)],
                         extra={"part": self.part})


class CalendarAuthFailed(CalendarRefused):
    part = "authentication"
    field = "password"


class CalendarUrlFailed(CalendarRefused):
    part = "url"
    field = "url"


class NotACalendar(CalendarRefused):
    part = "calendar"
    field = "url"


class CalendarUnavailable(Exception):
    """A calendar server that could not be read or written just now (down, slow, refusing)."""
