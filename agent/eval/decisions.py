"""The decisions a turn took, as the evaluation reads them from the turn's record (docs/agent.md,
"Evaluation", "Decisions"): what the reply did and what the turn recorded, not a reading of the
reply's words."""

from __future__ import annotations

from typing import Any

# What a visitor's messages can express, as the cases' ``expect.decisions`` name it
# (agent/eval/data/README.md).
DECISIONS = ("person", "meeting", "pricing", "contact", "objection", "not_interested", "support",
             "goodbye", "greeting", "product_question")
# The decisions that are also acts of the turn: a handoff, a meeting offered, details captured.
ACTS = ("person", "meeting", "contact")
# A message's intent (agent.types.INTENTS) as the decision it stands for; the others
# (purchase_intent, contact_info, other) stand for none: buying shows as a meeting offered, and
# contact details count when something was captured.
INTENT_DECISIONS = {
    "pricing": "pricing", "objection": "objection", "support": "support", "goodbye": "goodbye",
    "greeting": "greeting", "product_question": "product_question", "human_request": "person",
    "demo_request": "meeting", "booking": "meeting",
}


def turn_decisions(*, intent: str, turn: dict[str, Any], handoff: dict[str, Any] | None,
                   offered_meeting: bool, captured: list[str]) -> dict[str, Any]:
    """The decisions one turn took, each with its evidence: the union of three records.

    - What the turn did: ``person`` when it handed the conversation off (the reply's
      ``Message.handoff``) — unless it did so for a support problem (the message's intent
      ``support``), which is the ``support`` decision: a customer whose widget broke asked for
      no one; ``meeting`` when the reply offered meeting slots or the booking link; ``contact``
      when it captured a contact detail (``captured``: the fields it set or changed).
    - The message's intent (``Message.intent``, the turn's final reading), as ``INTENT_DECISIONS``
      maps it: ``pricing``, ``objection``, ``support``, ``goodbye``, ``greeting`` and
      ``product_question`` as themselves, ``human_request`` as ``person``, ``demo_request`` and
      ``booking`` as ``meeting``.
    - ``Message.turn["decisions"]`` (decision -> evidence), what the agent records it decided by
      meaning. It is recorded only when something was taken, and names no ``product_question``
      or ``contact``: so it joins the intent rather than replacing it.

    A recorded decision outside ``DECISIONS`` is kept, so that a name the cases do not know
    shows in the report instead of vanishing.
    """
    taken: dict[str, dict[str, Any]] = {}

    def take(decision: str, **evidence: Any) -> None:
        taken.setdefault(decision, {}).update(evidence)

    recorded = turn.get("decisions")
    if isinstance(recorded, dict):
        for decision, evidence in recorded.items():
            take(str(decision), recorded=evidence)
    if intent in INTENT_DECISIONS:
        take(INTENT_DECISIONS[intent], intent=intent)
    if handoff and intent != "support":
        take("person", handoff=handoff)
    if offered_meeting:
        take("meeting", offered=True)
    if captured:
        take("contact", captured=sorted(captured))
    return taken
