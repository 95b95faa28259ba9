"""Where a CalDAV URL may point: as webhook URLs (core/outbound.py), https only and public
addresses only, unless ``CALENDARS_ALLOW_HTTP`` / ``CALENDARS_ALLOW_PRIVATE_TARGETS`` lift the
rules (tests, or a calendar server on the service's own network).

The CalDAV client connects by name itself, so unlike a webhook request the address is not pinned:
the check runs when a calendar is connected and again before every request to it (the calendar's
own URL, found at verification, included), and redirects are never followed.
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

from django.conf import settings

from core.outbound import is_public, resolve

from .errors import CalendarUrlFailed

MAX_URL_LENGTH = 2048


def check_url(url: str) -> None:
    """Raises CalendarUrlFailed unless ``url`` may be connected to now."""
    if len(url) > MAX_URL_LENGTH:
        raise CalendarUrlFailed(f"The URL is longer than {MAX_URL_LENGTH} characters.")
    try:
        parts = urlsplit(url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        raise CalendarUrlFailed("This is not a valid URL.") from None
    allow_http = bool(getattr(settings, "CALENDARS_ALLOW_HTTP", False))
    if parts.scheme not in (("https", "http") if allow_http else ("https",)):
        raise CalendarUrlFailed("CalDAV URLs must start with https://.")
    if not parts.hostname:
        raise CalendarUrlFailed("The URL has no host.")
    if parts.username is not None or parts.password is not None:
        raise CalendarUrlFailed("Put the username and password in their own fields, not in the URL.")
    _check_host(parts.hostname, port)


def _check_host(host: str, port: int) -> None:
    try:
        addresses = resolve(host, port)
    except (OSError, UnicodeError):
        raise CalendarUrlFailed(f"The host {host!r} does not resolve.") from None
    if not addresses:
        raise CalendarUrlFailed(f"The host {host!r} does not resolve.")
    if getattr(settings, "CALENDARS_ALLOW_PRIVATE_TARGETS", False):
        return
    for address in addresses:
        if not is_public(ipaddress.ip_address(address)):
            # The host, never the address: that would map the service's own network.
            raise CalendarUrlFailed(
                f"The host {host!r} resolves to an address that is not public. For local "
                "development, set CALENDARS_ALLOW_PRIVATE_TARGETS=1.")
