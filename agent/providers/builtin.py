"""The builtin agent: deterministic, offline, and useful on its own.

It greets, answers questions with the best knowledge passage, asks qualifying questions one at a
time, captures contact details, offers meeting slots, recognises requests for a human and says
goodbye, in the seven languages of core.languages.SPOKEN (English, German, French, Spanish,
Italian, Portuguese, Dutch).
"""

from __future__ import annotations

import asyncio
import dataclasses
import re
from collections.abc import AsyncIterator

from django.conf import settings

from .. import answers, rules, understanding
from ..phrases import handoff_text, phrase
from ..types import Analysis, Handoff, ReplyPlan, TurnContext
from .base import Provider

QUESTION_INTENTS = {"product_question", "pricing", "other", "objection", "support"}
# What the rules read with less certainty than the examples' meaning: a decision by meaning
# replaces these (a request for a person or a meeting replaces any of them; the others replace
# only "other"). What the rules are sure of (a request for a person, a meeting, a slot, a
# support problem, a goodbye) stands.
_WEAK_INTENTS = {"other", "greeting", "product_question", "contact_info", "pricing", "objection"}
_BY_MEANING = (  # decision → intent, the first that applies wins
    ("person", "human_request", _WEAK_INTENTS),
    ("meeting", "demo_request", _WEAK_INTENTS),
    ("support", "support", {"other", "product_question"}),
    ("not_interested", "objection", {"other", "greeting"}),
    ("objection", "objection", {"other"}),
    ("pricing", "pricing", {"other"}),
    ("goodbye", "goodbye", {"other"}),
    ("greeting", "greeting", {"other"}),
)


class BuiltinProvider(Provider):
    name = "builtin"

    async def analyze(self, ctx: TurnContext) -> Analysis:
        reading = rules.read(ctx.message)
        understood = None
        if settings.AGENT_UNDERSTANDING == "meaning" and reading.slot_token is None:
            understood = understanding.understand(
                ctx.message, tenant_examples=understanding.tenant_examples(ctx.tenant_examples))
            reading = by_meaning(reading, understood)
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
            cited = _knowledge(ctx, ctx.passages, reading.intent).cited
        return Analysis(
            intent=reading.intent,
            confidence=reading.confidence,
            contact=reading.contact,
            signals=reading.signals | ({"objection"} if reading.intent == "objection" else set()),
            handoff=handoff,
            wants_meeting=reading.intent in ("demo_request", "booking", "purchase_intent"),
            chosen_slot=reading.slot_token,
            ends_conversation=reading.intent == "goodbye",
            # The turn told the language already (ctx.language, from the request or the message
            # with the conversation's as the prior); the builtin reads no other.
            language=None,
            cited=cited,
            decisions=understood.as_turn() if understood else {},
        )

    async def reply(self, ctx: TurnContext, analysis: Analysis, plan: ReplyPlan) -> AsyncIterator[str]:
        text = compose(ctx, analysis, plan)
        # Chunks of a few words, as a model would stream them.
        for chunk in re.findall(r"\S+\s*(?:\S+\s*){0,2}", text):
            yield chunk
            await asyncio.sleep(0)


def by_meaning(reading: rules.Reading, understood: understanding.Understanding) -> rules.Reading:
    """The rules' reading, with its intent replaced by what the message means when the rules
    were unsure of it (``_BY_MEANING``)."""
    for decision, intent, replaces in _BY_MEANING:
        if understood.has(decision) and reading.intent in replaces and reading.intent != intent:
            signals = reading.signals | ({"not_interested"} if decision == "not_interested" else set())
            return dataclasses.replace(reading, intent=intent, signals=frozenset(signals),
                                       confidence=round(understood.evidence[decision].score, 2))
    return reading


def compose(ctx: TurnContext, analysis: Analysis, plan: ReplyPlan) -> str:
    lang = ctx.language
    if plan.handoff:
        return handoff_text(lang, plan)
    name = ctx.known_contact.merged(analysis.contact).name
    named = f", {name.split()[0]}" if name else ""
    parts = [
        *_welcome(ctx, analysis, plan, named=named),
        *_answer(ctx, analysis),
        _meeting(lang, plan),
        phrase(lang, "qualified") if plan.qualified and not plan.booked_slot else None,
        _next_step(lang, analysis, plan, named=named),
    ]
    said = [part for part in parts if part is not None]
    return "\n\n".join(said or [phrase(lang, "fallback")])


def _welcome(ctx: TurnContext, analysis: Analysis, plan: ReplyPlan, *, named: str) -> list[str]:
    """A greeting to open the conversation, thanks for the contact details just given."""
    parts = []
    if analysis.intent == "greeting" and not ctx.history:
        parts.append(phrase(ctx.language, "greeting", tenant=ctx.tenant_name))
    if plan.lead_captured:
        parts.append(phrase(ctx.language, "thanks_contact", name=named))
    return parts


# What the agent says to these intents when no passage answers the message.
_INTENT_ANSWERS = {"product_question": "no_answer", "objection": "objection"}


def _said(ctx: TurnContext) -> answers.Said:
    return answers.Said(m.content for m in ctx.history if m.role == "assistant")


def _knowledge(ctx: TurnContext, passages: list, intent: str) -> answers.Answer:
    return answers.select(passages, ctx.message, _said(ctx), figures_wanted=intent == "pricing")


def _answer(ctx: TurnContext, analysis: Analysis) -> list[str]:
    """The cited passages' answer, with its source; else what the intent calls for. Nothing
    the agent said earlier in the conversation is said again."""
    lang = ctx.language
    passages = [ctx.passages[i] for i in analysis.cited if i < len(ctx.passages)]
    parts = [_from_passages(ctx, passages, analysis.intent)]
    answered = bool(parts[0])
    if analysis.intent == "pricing":
        parts.append(_pricing(ctx, answered=answered))
    elif not answered and analysis.intent in _INTENT_ANSWERS:
        parts.append(phrase(lang, _INTENT_ANSWERS[analysis.intent]))
    return [part for part in parts if part]


def _from_passages(ctx: TurnContext, passages: list, intent: str) -> str | None:
    """One or two sentences of the passages, naming their documents; or, when the agent said
    those already, a reference to its answer above."""
    lang = ctx.language
    answer = _knowledge(ctx, passages, intent)
    if answer.sentences:
        titles = list(dict.fromkeys(passages[i].title for i in answer.cited))
        return phrase(lang, "answer", source=_titles(lang, titles),
                      answer=" ".join(s.text for s in answer.sentences))
    if answer.repeated is not None:
        return phrase(lang, "answer_again", source=_titles(lang, [passages[answer.repeated].title]))
    return None


def _titles(lang: str, titles: list[str]) -> str:
    return phrase(lang, "and").join(phrase(lang, "title", title=title) for title in titles)


def _pricing(ctx: TurnContext, *, answered: bool) -> str:
    """What the agent says about its prices besides the passages: that they depend on the
    team, the pricing page, a call; each once, so that asking again gets something new. No
    figure: only passages and the tenant's facts may state one."""
    lang, said = ctx.language, _said(ctx)
    lines = []
    if not answered:
        lines.append(_unsaid(said, phrase(lang, "pricing"), phrase(lang, "pricing_again")))
    link = phrase(lang, "pricing_link", url=ctx.facts.pricing_url) if ctx.facts.pricing_url else ""
    if link and not said(link):
        lines.append(link)
    elif "pricing_interest" in ctx.signals:  # asked before: a call gets a figure of one's own
        # Not knowing is true only when no passage answered.
        lines.append(_unsaid(said, phrase(lang, "pricing_call"),
                             *(() if answered else (phrase(lang, "unsure"),))))
    return " ".join(line for line in lines if line)


def _unsaid(said: answers.Said, *lines: str) -> str:
    return next((line for line in lines if not said(line)), "")


def _meeting(lang: str, plan: ReplyPlan) -> str | None:
    if plan.booked_slot:
        key = "booked" if plan.confirmation_email else "booked_no_email"
        return phrase(lang, key, slot=plan.booked_slot.label)
    if plan.slot_unavailable and plan.offer_slots:
        return phrase(lang, "slot_taken")
    if plan.wish_unmet and plan.offer_slots:
        return phrase(lang, "slots_not_then")
    if plan.offer_slots:
        return phrase(lang, "offer_slots")
    if plan.booking_url:
        return phrase(lang, "offer_link")
    return None


def _next_step(lang: str, analysis: Analysis, plan: ReplyPlan, *, named: str) -> str | None:
    """A goodbye, the request for an email address, or the next qualifying question."""
    if analysis.intent == "goodbye":
        return phrase(lang, "goodbye", name=named)
    if plan.needs_email:
        return phrase(lang, "need_email_to_book" if analysis.wants_meeting else "ask_email")
    if plan.next_question and not plan.offer_slots and not plan.booked_slot:
        return phrase(lang, f"ask_{plan.next_question}")
    return None


def _excerpt(text: str, limit: int) -> str:
    text = text.strip()
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit(" ", 1)[0]
    return cut + "…"
