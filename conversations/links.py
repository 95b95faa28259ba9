"""The signed links of a meeting email: the visitor reschedules or cancels without signing in.

A link carries the meeting id and the action, signed with ``SECRET_KEY`` (Django's
``TimestampSigner`` under ``signing.dumps``, with its own salt) and dated: it cannot be forged,
cannot be turned into a link for another meeting or another action, and stops working after
``MEETING_LINK_MAX_AGE_DAYS``. What it may do is still checked when it is used: a cancelled or
past meeting cannot be changed (docs/meetings.md, "Links").
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.core import signing
from django.urls import reverse

SALT = "conversations.meeting-link"
ACTIONS = ("cancel", "reschedule")


class LinkInvalid(Exception):
    """Not a link we signed (or tampered with)."""


class LinkExpired(LinkInvalid):
    """A link we signed, too long ago."""


@dataclass(frozen=True)
class MeetingLink:
    meeting_id: uuid.UUID
    action: str


def link_token(meeting_id: uuid.UUID, action: str) -> str:
    if action not in ACTIONS:
        raise ValueError(action)
    return signing.dumps({"m": meeting_id.hex, "a": action}, salt=SALT)


def link_url(meeting_id: uuid.UUID, action: str) -> str:
    """The absolute URL of the link (emails leave the service: ``PUBLIC_BASE_URL``)."""
    path = reverse("meeting-link", kwargs={"token": link_token(meeting_id, action)})
    return settings.PUBLIC_BASE_URL + path


def link_read(token: str) -> MeetingLink:
    """What a token says, or ``LinkInvalid``/``LinkExpired``."""
    max_age = timedelta(days=settings.MEETING_LINK_MAX_AGE_DAYS)
    try:
        value = signing.loads(token, salt=SALT, max_age=max_age)
    except signing.SignatureExpired:
        raise LinkExpired() from None
    except signing.BadSignature:
        raise LinkInvalid() from None
    try:
        meeting_id, action = uuid.UUID(hex=value["m"]), value["a"]
    except (TypeError, KeyError, ValueError):
        raise LinkInvalid() from None
    if action not in ACTIONS:
        raise LinkInvalid()
    return MeetingLink(meeting_id=meeting_id, action=action)
