"""The builtin agent: deterministic, offline, and useful on its own.

It greets, answers questions with the best knowledge passage, asks qualifying questions one at a
time, captures contact details, offers meeting slots, recognises requests for a human and says
goodbye, in English, German, French or Spanish.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator

from .. import signals
from ..phrases import phrase
from ..types import Analysis, Handoff, Plan, TurnContext
from .base import Provider

QUESTION_INTENTS = {"product_question", "pricing", "other", "objection", "support"}
EXCERPT_CHARS = 600


class BuiltinProvider(Provider):
    name = "builtin"

    async def analyze(self, ctx: TurnContext) -> Analysis:
        reading = signals.read(ctx.message)
        handoff = None
        if reading.intent == "human_request":
            high_value = bool(ctx.lead and ctx.lead.score >= 60) or "purchase_intent" in ctx.signals
            handoff = Handoff(reason="The visitor asked to talk to a person.",
                              priority="high" if high_value else "normal", suggested_team="sales")
        elif reading.intent == "support":
            handoff = Handoff(reason="Support request: " + _excerpt(ctx.message, 160),
                              priority="normal", suggested_team="support")
        cited: tuple[int, ...] = ()
        if ctx.passages and reading.intent in QUESTION_INTENTS:
            cited = (0,)
        return Analysis(
            intent=reading.intent,
            confidence=reading.confidence,
            contact=reading.contact,
            signals=reading.signals | ({"objection"} if reading.intent == "objection" else set()),
            handoff=handoff,
            wants_meeting=reading.intent in ("demo_request", "booking", "purchase_intent"),
            chosen_slot=reading.slot_token,
            ends_conversation=reading.intent == "goodbye",
            language=signals.detect_language(ctx.message),
            cited=cited,
        )

    async def reply(self, ctx: TurnContext, analysis: Analysis, plan: Plan) -> AsyncIterator[str]:
        text = compose(ctx, analysis, plan)
        # Chunks of a few words, as a model would stream them.
        for chunk in re.findall(r"\S+\s*(?:\S+\s*){0,2}", text):
            yield chunk
            await asyncio.sleep(0)


def compose(ctx: TurnContext, analysis: Analysis, plan: Plan) -> str:
    lang = ctx.language
    name = ctx.known_contact.merged(analysis.contact).name
    named = f", {name.split()[0]}" if name else ""
    parts: list[str] = []
    intent = analysis.intent

    if plan.handoff:
        parts.append(phrase(lang, "support" if plan.handoff.suggested_team == "support" else "handoff"))
        return "\n\n".join(parts)

    if intent == "greeting" and not ctx.history:
        parts.append(phrase(lang, "greeting", tenant=ctx.tenant_name))
    if plan.lead_captured:
        parts.append(phrase(lang, "thanks_contact", name=named))

    if analysis.cited and ctx.passages:
        passage = ctx.passages[analysis.cited[0]]
        quote = "\n".join("> " + line for line in _excerpt(passage.excerpt, EXCERPT_CHARS).splitlines())
        parts.append(f"{phrase(lang, 'answer_intro')}\n\n{quote}\n\n_{phrase(lang, 'sources')}: "
                     f"{passage.title}_")
    elif intent == "pricing":
        parts.append(phrase(lang, "pricing"))
    elif intent == "product_question":
        parts.append(phrase(lang, "no_answer"))
    elif intent == "objection":
        parts.append(phrase(lang, "objection"))

    if plan.booked_slot:
        parts.append(phrase(lang, "booked", slot=plan.booked_slot.label))
    elif plan.slot_unavailable and plan.offer_slots:
        parts.append(phrase(lang, "slot_taken"))
    elif plan.offer_slots:
        parts.append(phrase(lang, "offer_slots"))
    elif plan.booking_url:
        parts.append(phrase(lang, "offer_link"))

    if plan.qualified and not plan.booked_slot:
        parts.append(phrase(lang, "qualified"))

    if intent == "goodbye":
        parts.append(phrase(lang, "goodbye", name=named))
    elif plan.needs_email:
        parts.append(phrase(lang, "need_email_to_book" if analysis.wants_meeting else "ask_email"))
    elif plan.next_question and not plan.offer_slots and not plan.booked_slot:
        parts.append(phrase(lang, f"ask_{plan.next_question}"))

    if not parts:
        parts.append(phrase(lang, "fallback"))
    return "\n\n".join(parts)


def _excerpt(text: str, limit: int) -> str:
    text = text.strip()
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit(" ", 1)[0]
    return cut + "…"
