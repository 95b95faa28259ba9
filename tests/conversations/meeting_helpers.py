"""Booking a meeting through /api/v1/chat, as a visitor does, for the meeting and email tests."""

from __future__ import annotations

import re
import uuid

from conversations.models import Meeting
from tests.chat_helpers import chat, take

LINK = re.compile(r"https?://\S+/meetings/[^/\s]+/")


def book(api, kit, *, visitor="visitor-1", email="sam@umbrella.io", name="Sam Lee",
         choice: int = 0, mode="live"):
    """The visitor gives their details, asks for a demo and takes the offered slot ``choice``;
    returns the meeting and the booking reply."""
    sid = chat(api, kit, f"I'm {name}, CTO at Umbrella, {email}", visitor=visitor,
               mode=mode).json()["sessionId"]
    offered = chat(api, kit, "Can we book a demo?", session=sid, visitor=visitor, mode=mode).json()
    slots = [a for a in offered["suggestedActions"] if a["type"] == "reply"]
    reply = take(api, kit, slots[choice], session=sid, visitor=visitor, mode=mode)
    assert reply.status_code == 200, reply.text
    meeting = Meeting.objects.filter(conversation_id=uuid.UUID(hex=sid[5:])).get()
    return meeting, reply.json()


def links_in(text: str) -> dict[str, str]:
    """The reschedule and cancel links of an email's plain text."""
    found = {}
    for line in text.splitlines():
        if line.startswith("Need another time? "):
            found["reschedule"] = line.split("? ", 1)[1].strip()
        elif line.startswith("Can't make it? "):
            found["cancel"] = line.split("? ", 1)[1].strip()
    assert set(found) == {"reschedule", "cancel"}, text
    assert all(LINK.fullmatch(url) for url in found.values()), found
    return found


def path_of(url: str) -> str:
    return "/" + url.split("://", 1)[1].split("/", 1)[1]
