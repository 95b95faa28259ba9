"""The async drivers of a chat turn: the provider's calls between the turn's transactions, for a
request answered whole (``run_turn``) and for a stream of Server-Sent Events (``stream_turn``).

Whatever the provider does, the turn ends with a complete, sensible reply (docs/agent.md, "Reply
limits", "Grounding", "When the model misbehaves"):

- the whole turn has a deadline (the tenant's ``agent_turn_seconds``);
- a provider that fails (cannot be reached, answers an error, or not within its timeout) leaves
  the rest of the turn to the builtin agent: the visitor gets its reply, and the turn records
  why (``Message.turn["provider_failure"]``, the provider's health on the dashboard's home).
  Only a stream that already showed part of the model's reply ends with an error instead;
- an analysis the model cannot give (no call, another function, arguments that are no JSON
  object) or does not give in time is the deterministic one (``rules``), and the turn records
  that it fell back;
- what the rules are sure of is decided whatever the model read: a request for a person hands
  off, a request for a demo or a meeting offers one (small models miss both);
- the reply passes through ``ReplyGuard``: capped on a whole sentence, stopped when it loops,
  and cut before any figure that nothing in the turn supports, with a truthful sentence instead;
- a reply that says nothing is the builtin agent's.

What the visitor was shown is what is stored.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field, replace
from typing import Any

from asgiref.sync import sync_to_async

from agent.interface import (
    Analysis,
    AnalysisUnusable,
    BuiltinProvider,
    Passage,
    Provider,
    ReplyGuard,
    ReplyPlan,
    TurnContext,
    classify,
    compose,
    fit,
    phrase,
    private_instructions,
)
from core import metrics
from core.errors import ServiceError

from .turn import (
    OpenedTurn,
    TurnOutcome,
    turn_apply,
    turn_close,
    turn_quiet,
    with_visitor_choice,
)

logger = logging.getLogger("salesagent.chat")


def _asked(plan: ReplyPlan | None, *, stopped: str | None) -> dict[str, str]:
    """What the reply asked the visitor for, as the plan has it (their email address first,
    else a qualifying question: the BANT signal it is about), for ``Message.turn["asked"]``:
    later turns do not ask again (``turn._follow_up``). A reply that ended early may not have
    asked."""
    if plan is None or stopped:
        return {}
    if plan.handoff:  # a waiting handoff asks for the address the answer can reach
        return {"asked": "email"} if plan.handoff_waiting and plan.needs_email else {}
    asked = "email" if plan.needs_email else plan.next_question
    return {"asked": asked} if asked else {}


def _silent_analysis(ctx: TurnContext) -> Analysis:
    intent, confidence = classify(ctx.message)
    return Analysis(intent=intent, confidence=confidence)


class _Deadline:
    def __init__(self, seconds: float):
        self.at = time.monotonic() + seconds

    def left(self) -> float:
        return max(0.0, self.at - time.monotonic())


@dataclass
class _Turn:
    """One turn between ``turn_open`` and ``turn_close``: what has been decided and said."""

    opened: OpenedTurn
    provider: Provider
    deadline: _Deadline
    analysis: Analysis
    plan: ReplyPlan | None = None
    cited: list[Passage] = field(default_factory=list)
    parts: list[str] = field(default_factory=list)
    info: dict[str, Any] = field(default_factory=dict)  # the path the turn took (Message.turn)
    streaming: bool = False  # what is said reaches the visitor at once
    # For the provider's health: None when no model is asked this turn, "" while it answers,
    # else why it failed.
    provider_failure: str | None = None
    # For /metrics (core/metrics.py): the tenant's agent kind, whatever answers in the end.
    agent: str = BuiltinProvider.name
    clock: metrics.Stopwatch = field(default_factory=metrics.Stopwatch)

    @classmethod
    def start(cls, opened: OpenedTurn, provider: Provider, *, streaming: bool = False) -> _Turn:
        asks = not opened.silent and provider.name != BuiltinProvider.name
        return cls(opened=opened, provider=provider,
                   deadline=_Deadline(opened.ctx.limits.turn_seconds),
                   analysis=_silent_analysis(opened.ctx), streaming=streaming,
                   provider_failure="" if asks else None, agent=provider.name)

    def _provider_failed(self, exc: ServiceError) -> None:
        """The provider failed: the rest of the turn is the builtin agent's, and the turn
        records why."""
        logger.warning("provider failed in conversation %s, the builtin agent answers: %s",
                       self.opened.conversation_id, exc.message)
        self.provider_failure = self.info["provider_failure"] = exc.message
        metrics.PROVIDER_ERRORS.labels(self.agent).inc()
        self.info["reply"] = "builtin (provider failed)"
        self.provider = BuiltinProvider()

    async def apply(self) -> None:
        """Analysis (the model's, or the rules' when it cannot give one), then the decisions."""
        analysis, self.info["analysis"] = await self._analyze()
        self.analysis = with_visitor_choice(self.opened, analysis)
        if self.analysis.decisions:
            self.info["decisions"] = self.analysis.decisions
        self.plan = await sync_to_async(turn_apply)(opened=self.opened, analysis=self.analysis)
        self.cited = [self.opened.ctx.passages[i] for i in self.analysis.cited]
        self.info.update(("retrieval", p.retrieval) for p in self.opened.ctx.passages[:1] if p.retrieval)

    async def _analyze(self) -> tuple[Analysis, str]:
        ctx = self.opened.ctx
        try:
            async with asyncio.timeout(self.deadline.left()):
                analysis = await self.provider.analyze(ctx)
            return await self._with_rules(analysis), "model"
        except AnalysisUnusable:
            return await BuiltinProvider().analyze(ctx), "fallback"
        except ServiceError as exc:  # ProviderUnavailable, ProviderTimeout
            self._provider_failed(exc)
            return await self.provider.analyze(ctx), "fallback (provider failed)"
        except TimeoutError:
            logger.warning("analysis past the turn's deadline in conversation %s",
                           self.opened.conversation_id)
            return await BuiltinProvider().analyze(ctx), "fallback (deadline)"

    async def _with_rules(self, analysis: Analysis) -> Analysis:
        """The model's analysis, with the decisions the deterministic rules are sure of when the
        model missed them (recorded in ``Message.turn["rules"]``): an explicit request for a
        person is handed off, and a request for a demo or a meeting is offered one."""
        if self.provider.name == BuiltinProvider.name:
            return analysis
        net = await BuiltinProvider().analyze(self.opened.ctx)
        taken = []
        if net.decisions:
            self.info["decisions"] = net.decisions
        if net.intent == "human_request" and analysis.handoff is None:
            analysis = replace(analysis, intent=net.intent, confidence=net.confidence,
                               handoff=net.handoff)
            taken.append("handoff")
        if net.intent == "demo_request" and not analysis.wants_meeting:
            analysis = replace(analysis, wants_meeting=True)
            taken.append("meeting")
        if taken:
            self.info["rules"] = taken
        return analysis

    async def chunks(self) -> AsyncIterator[str]:
        """The reply as the visitor sees it (also collected in ``parts``)."""
        if self.opened.silent:
            self.info["reply"] = "template"
            yield self._say(phrase(self.opened.ctx.language, "handoff_active"))
            return
        # The model's reply; if the provider fails before the visitor saw any of it, the builtin
        # agent's instead, from the start.
        for attempt in (1, 2):
            guard, truncated = self._guard(), False
            try:
                async for chunk, late in self._model_chunks(guard):
                    truncated = truncated or late
                    if chunk:
                        yield self._say(chunk)
                break
            except ServiceError as exc:
                if attempt == 2 or not self._falls_back(exc):
                    raise
        truncated = truncated or self.provider.finish_reason == "length"
        for text in (guard.finish(truncated=truncated), self._ending(guard)):
            if text:
                yield self._say(text)
        stopped = guard.stopped or ("deadline" if truncated else None)
        self.info.update(reply=self.info.get("reply", self.provider.name), stopped=stopped,
                         unsupported=guard.unsupported, **_asked(self.plan, stopped=stopped))

    def _guard(self) -> ReplyGuard:
        return ReplyGuard(max_chars=self.opened.ctx.limits.max_chars,
                          max_chunks=self.opened.ctx.limits.max_tokens,
                          sources=self._sources(),
                          private=private_instructions(tenant=self.opened.ctx.tenant_name))

    def _falls_back(self, exc: ServiceError) -> bool:
        """After the provider failed during its reply: whether the builtin agent replies
        instead. Not in a stream that showed part of the model's reply already: it ends with
        its error, and what was shown is kept (the failure is recorded all the same)."""
        if self.streaming and self.parts:
            self.provider_failure = self.info["provider_failure"] = exc.message
            metrics.PROVIDER_ERRORS.labels(self.agent).inc()
            return False
        self._provider_failed(exc)
        self.parts.clear()  # not shown: a reply that is not a stream is sent whole, at the end
        return True

    async def _model_chunks(self, guard: ReplyGuard) -> AsyncIterator[tuple[str, bool]]:
        """The provider's chunks through ``guard``, until it ends, the guard stops it or the
        deadline passes (then ``("", True)``). The provider is closed either way."""
        stream = self.provider.reply(self.opened.ctx, self.analysis, self.plan)
        model = self.provider.name != BuiltinProvider.name
        asked, chunks = metrics.Stopwatch(), 0
        try:
            while not guard.done:
                try:
                    async with asyncio.timeout(self.deadline.left()):
                        chunk = await anext(stream)
                except StopAsyncIteration:
                    return
                except TimeoutError:
                    yield "", True
                    return
                if model and chunk:
                    if not chunks:
                        metrics.MODEL_FIRST_TOKEN_SECONDS.labels(self.agent).observe(
                            asked.seconds())
                    chunks += 1
                yield guard.feed(chunk), False
        finally:
            if chunks:
                metrics.MODEL_TOKENS.labels(self.agent, "reply").inc(chunks)
            await stream.aclose()

    def _sources(self) -> list[str]:
        ctx, plan = self.opened.ctx, self.plan
        sources = ctx.grounding_sources()
        if plan is not None:
            sources += [s.label for s in plan.offer_slots] + [plan.booking_url]
            sources += [plan.booked_slot.label] if plan.booked_slot else []
            sources += [plan.handoff_opening] if plan.handoff_opening else []
        return sources

    def _ending(self, guard: ReplyGuard) -> str:
        """What closes a reply the guard ended early, or replaces one with nothing in it; within
        what is left of the cap, like the rest of the reply."""
        ctx = self.opened.ctx
        room = ctx.limits.max_chars - len(guard.shown)
        if guard.stopped == "grounding":
            logger.warning("reply cut before unsupported figures %s in conversation %s",
                           guard.unsupported, self.opened.conversation_id)
            return _grounding_ending(ctx, guard, room)
        if guard.stopped == "leak":
            logger.warning("reply cut before repeating its instructions in conversation %s",
                           self.opened.conversation_id)
        if not guard.shown.strip():
            self.info["reply"] = "builtin (empty reply)"
            return fit(compose(ctx, self.analysis, self.plan), room)
        return "…" if guard.dangling else ""

    def _say(self, text: str) -> str:
        self.parts.append(text)
        return text

    async def close(self, *, interrupted: bool = False) -> TurnOutcome:
        outcome = await sync_to_async(turn_close)(
            opened=self.opened, analysis=self.analysis, plan=self.plan,
            content="".join(self.parts), cited=self.cited, interrupted=interrupted,
            turn=self.info, provider_failure=self.provider_failure)
        if not interrupted:
            path = self.path()
            metrics.CHAT_TURNS.labels(self.agent, path).inc()
            metrics.CHAT_TURN_SECONDS.labels(self.agent, path).observe(self.clock.seconds())
        return outcome

    def path(self) -> str:
        """What answered (core/metrics.py): ``builtin`` when no model was asked (the tenant's
        agent is the builtin one, or a handed-off conversation's fixed notice), ``model`` when
        the model analysed and replied, ``rules_fallback`` when the builtin agent's rules took
        over any of it (an unusable analysis, a failed or late provider, an empty reply)."""
        if self.agent == BuiltinProvider.name or self.opened.silent:
            return "builtin"
        if self.info.get("analysis") == "model" and self.info.get("reply") == self.agent:
            return "model"
        return "rules_fallback"

    async def save_partial(self) -> None:
        if not self.parts:
            return
        try:
            await self.close(interrupted=True)
        except Exception:
            logger.exception("could not save the partial reply of conversation %s",
                             self.opened.conversation_id)


def _grounding_ending(ctx: TurnContext, guard: ReplyGuard, room: int) -> str:
    """The truthful close of a reply cut before an unsupported figure: that the agent would
    rather check than guess, a call, the pricing page. As much of it as the cap leaves room for,
    in whole sentences, or at least the "…" of an unfinished sentence: the figure is never shown,
    and the cap never passed."""
    close = phrase(ctx.language, "cut") if guard.dangling else ""
    gap = "\n\n" if guard.shown.strip() else ""
    unsure = phrase(ctx.language, "unsure")
    link = (" " + phrase(ctx.language, "pricing_link", url=ctx.facts.pricing_url)
            if ctx.facts.pricing_url else "")
    for text in (unsure + link, unsure, fit(unsure, room - len(close + gap), words=False)):
        if text and len(close + gap + text) <= room:
            return close + gap + text
    if close and len(close) <= room:
        return close
    return "…" if guard.dangling else ""


async def run_turn(opened: OpenedTurn, provider: Provider) -> TurnOutcome:
    """The rest of a turn that ``turn_open`` began, for a non-streaming request."""
    turn = _Turn.start(opened, provider)
    try:
        if opened.quiet:
            return await sync_to_async(turn_quiet)(opened=opened, analysis=turn.analysis)
        if not opened.silent:
            await turn.apply()
        async for _ in turn.chunks():
            pass
        return await turn.close()
    finally:
        await provider.close()


async def stream_turn(opened: OpenedTurn, provider: Provider) -> AsyncIterator[tuple[str, dict]]:
    """The rest of a turn that ``turn_open`` began, as Server-Sent Events: ``message_start``,
    ``content_delta``…, ``message_end`` (or ``error``). If the client goes away, generation stops
    and what was produced is kept.

    ``turn_open`` runs before the stream starts, so that its failures (an unknown session) are
    ordinary error responses rather than a broken stream."""
    # Ids are UUIDs here; each surface's view shows them in its own form.
    start: dict[str, Any] = {"id": opened.reply_id, "sessionId": opened.conversation_id}
    if opened.attachments:  # the visitor's own files, as stored (only the widget sends any)
        start["attachments"] = list(opened.attachments)
    yield "message_start", start
    turn = _Turn.start(opened, provider, streaming=True)
    finished = False
    try:
        if opened.quiet:
            outcome = await sync_to_async(turn_quiet)(opened=opened, analysis=turn.analysis)
            finished = True
            yield "message_end", _message_end(turn.analysis, outcome)
            return
        if not opened.silent:
            await turn.apply()
        async for chunk in turn.chunks():
            yield "content_delta", {"delta": chunk}
        outcome = await turn.close()
        finished = True
        yield "message_end", _message_end(turn.analysis, outcome)
    except ServiceError as exc:
        await turn.save_partial()
        finished = True
        yield "error", {"code": exc.kind, "message": exc.message}
    except Exception:
        logger.exception("chat stream failed")
        await turn.save_partial()
        finished = True
        yield "error", {"code": "internal_error", "message": "The reply could not be completed."}
    finally:
        if not finished:
            # The client went away (the task is being cancelled): keep what was produced.
            await asyncio.shield(turn.save_partial())
        await provider.close()


def _message_end(analysis: Analysis, outcome: TurnOutcome) -> dict:
    end = {"intent": analysis.intent, "confidence": outcome.confidence,
           "leadScore": outcome.conversation.lead_score,
           "suggestedActions": [] if outcome.quiet else outcome.message.suggested_actions,
           "outcome": outcome}
    if outcome.handoff:
        end["handoff"] = outcome.handoff
    return end
