"""What the conversation's page shows of its visitor (docs/dashboard.md, "Inbox"): where they
are on the site, where they came from, their time zone and the time it is there, their language,
device and browser. Read from what the chat requests recorded (``Conversation.metadata``: the
widget sends the page, the referrer and the time zone with each message; the user agent is the
request's) and the conversation's language."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from zoneinfo import ZoneInfo

from . import scheduling
from .models import Conversation
from .useragent import parse

LANGUAGES = {"en": "English", "de": "German", "fr": "French", "es": "Spanish",
             "it": "Italian", "pt": "Portuguese", "nl": "Dutch"}


@dataclass(frozen=True)
class Visitor:
    page: str
    referrer: str
    time_zone: str
    local_time: str  # "Tue 14:32 (UTC+02:00)", or "" without a time zone
    language: str
    device: str
    system: str
    browser: str


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def visitor_of(conversation: Conversation, *, now: datetime) -> Visitor:
    metadata = conversation.metadata or {}
    zone = scheduling.visitor_zone(metadata.get("timezone"))
    local = ""
    if zone:
        there = now.astimezone(ZoneInfo(zone))
        offset = there.strftime("%z")
        local = f"{there:%a %H:%M} (UTC{offset[:3]}:{offset[3:]})"
    agent = parse(_text(metadata.get("userAgent")))
    code = conversation.language
    return Visitor(
        page=_text(metadata.get("landingPage")), referrer=_text(metadata.get("referrer")),
        time_zone=zone or "", local_time=local,
        language=f"{LANGUAGES[code]} ({code})" if code in LANGUAGES else code,
        device=agent.device, system=agent.system, browser=agent.browser)
