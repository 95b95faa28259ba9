"""The builtin agent's subject and summary of a conversation, from what the turns established.

The OpenAI provider writes its own (``Analysis.subject``/``summary``); these serve the builtin
agent and stand in when a model gives none.
"""

from __future__ import annotations

from .types import Contact

TOPICS = {
    "pricing": "Pricing question",
    "demo_request": "Demo request",
    "booking": "Meeting booking",
    "purchase_intent": "Purchase inquiry",
    "product_question": "Product question",
    "support": "Support request",
    "human_request": "Request for a person",
    "objection": "Concerns raised",
}
ACTIVITIES = {
    "pricing": "asked about pricing",
    "demo_request": "asked for a demo",
    "booking": "booked a meeting",
    "purchase_intent": "expressed buying intent",
    "product_question": "asked about the product",
    "support": "reported a support issue",
    "human_request": "asked for a person",
    "objection": "raised concerns",
}


def subject(intents: list[str], contact: Contact) -> str:
    topic = next((TOPICS[i] for i in intents if i in TOPICS), "Website conversation")
    return f"{topic} from {contact.company}"[:200] if contact.company else topic


def summary(*, intents: list[str], contact: Contact, signals: list[str], score: int,
            meeting: str | None, handed_off: bool) -> str:
    bant = [s for s in signals if s in ("budget", "authority", "need", "timeline")]
    parts = [
        _what_happened(intents, contact),
        f"Signals: {', '.join(bant)}." if bant else "",
        f"Contact: {contact.email}." if contact.email else "",
        f"Lead score {score}.",
        f"Meeting booked for {meeting}." if meeting else "",
        "Handed off to a person." if handed_off else "",
    ]
    return " ".join(part for part in parts if part)


def _what_happened(intents: list[str], contact: Contact) -> str:
    """Who the visitor is and what they did, as one sentence."""
    who = contact.name or "The visitor"
    details = ", ".join(x for x in (contact.title, contact.company) if x)
    if details:
        who = f"{who} ({details})"
    done = [ACTIVITIES[i] for i in intents if i in ACTIVITIES]
    return f"{who} {_join(done)}." if done else f"{who} chatted with the assistant."


def _join(items: list[str]) -> str:
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]
