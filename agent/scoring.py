"""The explainable lead score: every point comes from a named signal, stored with its reason.

The score is a function of what is known (contact details, signals seen), not a running sum, so
replaying a turn never inflates it.
"""

from __future__ import annotations

from dataclasses import dataclass

from .types import Contact

# signal -> (points, why it counts)
POINTS: dict[str, tuple[int, str]] = {
    "email": (20, "gave an email address"),
    "name": (5, "gave a name"),
    "company": (5, "named their company"),
    "phone": (5, "gave a phone number"),
    "authority": (15, "decision-maker (title)"),
    "budget": (15, "mentioned a budget"),
    "need": (10, "described a need"),
    "timeline": (15, "has a timeline"),
    "team_size": (5, "gave a team size"),
    "demo_interest": (10, "asked for a demo or meeting"),
    "purchase_intent": (15, "expressed buying intent"),
    "pricing_interest": (5, "asked about pricing"),
    "meeting_booked": (10, "booked a meeting"),
    "objection": (-10, "raised an objection"),
}

BANT = ("budget", "authority", "need", "timeline")
SCORE_CHANGE_EVENT_THRESHOLD = 10  # lead.score_changed fires on a move of at least this


@dataclass(frozen=True)
class Score:
    value: int
    reasons: list[dict]  # [{signal, points, reason}]

    @property
    def bant(self) -> list[str]:
        return [r["signal"] for r in self.reasons if r["signal"] in BANT]


def score(contact: Contact, signals: frozenset[str]) -> Score:
    present = set(signals)
    for field in ("email", "name", "company", "phone"):
        if getattr(contact, field):
            present.add(field)
    reasons = [
        {"signal": name, "points": points, "reason": why}
        for name, (points, why) in POINTS.items()
        if name in present
    ]
    total = sum(r["points"] for r in reasons)
    return Score(value=max(0, min(100, total)), reasons=reasons)


def qualifies(result: Score, contact: Contact, *, min_score: int, min_bant: int) -> str | None:
    """The qualification reason when the default BANT-style rule is met, else None.

    Rule: an email to follow up on, a score of at least ``min_score``, and at least ``min_bant``
    of budget, authority, need and timeline.
    """
    bant = result.bant
    if contact.email and result.value >= min_score and len(bant) >= min_bant:
        return f"Score {result.value} with {', '.join(bant)} ({len(bant)} of 4 BANT criteria)"
    return None
