"""Lead statuses: the one stored status and the word each surface shows for it.

This module is the only place that knows the mapping (ARCHITECTURE.md, "Lead status"). The
database stores one status from the union of both vocabularies; each surface reads and writes
its own words through the functions below.
"""

from __future__ import annotations

from django.db import models


class LeadStatus(models.TextChoices):
    """The stored status: the union of both surfaces' vocabularies."""

    NEW = "new", "New"
    QUALIFYING = "qualifying", "Qualifying"
    QUALIFIED = "qualified", "Qualified"
    BOOKED = "booked", "Meeting booked"
    CONTACTED = "contacted", "Contacted"
    NURTURING = "nurturing", "Nurturing"
    CONVERTED = "converted", "Converted"
    LOST = "lost", "Lost"


class LeadSource(models.TextChoices):
    CHAT = "chat", "Chat"
    API = "api", "API"
    IMPORT = "import", "Import"
    FORM = "form", "Form"


V1_STATUSES = ("new", "qualified", "contacted", "converted", "lost")
LEGACY_STATUSES = ("new", "qualifying", "qualified", "booked", "disqualified", "nurturing")

# stored -> shown. Every stored status appears exactly once in each table.
V1_OF_STORED: dict[str, str] = {
    LeadStatus.NEW: "new",
    LeadStatus.QUALIFYING: "new",
    LeadStatus.QUALIFIED: "qualified",
    LeadStatus.BOOKED: "qualified",
    LeadStatus.CONTACTED: "contacted",
    LeadStatus.NURTURING: "contacted",
    LeadStatus.CONVERTED: "converted",
    LeadStatus.LOST: "lost",
}
LEGACY_OF_STORED: dict[str, str] = {
    LeadStatus.NEW: "new",
    LeadStatus.QUALIFYING: "qualifying",
    LeadStatus.QUALIFIED: "qualified",
    LeadStatus.BOOKED: "booked",
    LeadStatus.CONTACTED: "qualifying",
    LeadStatus.NURTURING: "nurturing",
    LeadStatus.CONVERTED: "booked",
    LeadStatus.LOST: "disqualified",
}

# shown -> stored, for a write that starts from no particular stored status.
_STORED_OF_V1: dict[str, str] = {
    "new": LeadStatus.NEW,
    "qualified": LeadStatus.QUALIFIED,
    "contacted": LeadStatus.CONTACTED,
    "converted": LeadStatus.CONVERTED,
    "lost": LeadStatus.LOST,
}
_STORED_OF_LEGACY: dict[str, str] = {
    "new": LeadStatus.NEW,
    "qualifying": LeadStatus.QUALIFYING,
    "qualified": LeadStatus.QUALIFIED,
    "booked": LeadStatus.BOOKED,
    "disqualified": LeadStatus.LOST,
    "nurturing": LeadStatus.NURTURING,
}


def v1_status(stored: str) -> str:
    return V1_OF_STORED[stored]


def legacy_status(stored: str) -> str:
    return LEGACY_OF_STORED[stored]


def stored_from_v1(word: str, *, current: str | None = None) -> str:
    """The stored status for a v1 write of ``word``.

    Writing the word the surface already shows keeps the stored status: a v1 client that sends
    back ``qualified`` for a lead whose meeting is booked must not erase the booking.
    """
    if current is not None and V1_OF_STORED[current] == word:
        return current
    return _STORED_OF_V1[word]


def stored_from_legacy(word: str, *, current: str | None = None) -> str:
    """The stored status for a legacy write of ``word`` (``disqualified`` stores ``lost``)."""
    if current is not None and LEGACY_OF_STORED[current] == word:
        return current
    return _STORED_OF_LEGACY[word]


def stored_for_v1_filter(word: str) -> list[str]:
    """Every stored status that the v1 surface shows as ``word``."""
    return [stored for stored, shown in V1_OF_STORED.items() if shown == word]
