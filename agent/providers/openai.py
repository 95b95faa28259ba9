"""The OpenAI provider, through the official ``openai`` client (any OpenAI-compatible server).

A turn is two calls: ``analyze`` forces one function call (``record_turn``) whose arguments are
the structured outcome; ``reply`` streams the text. Visitor text and knowledge passages travel
as data in their own messages, never inside the instructions. Errors map to the domain's
provider errors (v1 502/504, legacy 503).
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import ssl
import weakref
from collections import OrderedDict
from collections.abc import AsyncIterator
from functools import lru_cache
from typing import Any

import openai
from django.conf import settings

from core import metrics
from core.errors import ProviderTimeout, ProviderUnavailable
from core.spans import model_call

from .. import prompts
from ..phrases import handoff_text
from ..types import INTENTS, PRIORITIES, TEAMS, Analysis, Contact, Handoff, ReplyPlan, TurnContext
from .base import AnalysisUnusable, Provider

logger = logging.getLogger("salesagent.agent")

SIGNALS = ("budget", "authority", "need", "timeline", "team_size", "demo_interest",
           "purchase_intent", "pricing_interest", "objection")

# A record_turn call takes about 150 tokens; a small model that rambles inside its arguments
# (a summary without end) is cut here, and its unfinished JSON falls back to the rules.
ANALYSIS_MAX_TOKENS = 400

RECORD_TURN = {
    "type": "function",
    "function": {
        "name": "record_turn",
        "description": "Record the analysis of the visitor's last message.",
        "parameters": {
            "type": "object",
            "properties": {
                "intent": {"type": "string", "enum": list(INTENTS)},
                "confidence": {"type": "number", "minimum": 0, "maximum": 1},
                "contact": {
                    "type": "object",
                    "properties": {k: {"type": "string"} for k in
                                   ("email", "name", "company", "title", "phone")},
                },
                "signals": {"type": "array", "items": {"type": "string", "enum": list(SIGNALS)}},
                "handoff": {
                    "type": "object",
                    "properties": {
                        "reason": {"type": "string"},
                        "priority": {"type": "string", "enum": list(PRIORITIES)},
                        "suggested_team": {"type": "string", "enum": list(TEAMS)},
                    },
                },
                "wants_meeting": {"type": "boolean"},
                "chosen_slot": {"type": "string"},
                "ends_conversation": {"type": "boolean"},
                "language": {"type": "string", "description": "ISO 639-1 code of the message"},
                "subject": {"type": "string"},
                "summary": {"type": "string"},
                "relevant_passages": {"type": "array", "items": {"type": "integer"}},
            },
            "required": ["intent", "confidence"],
        },
    },
}

_SECRET = re.compile(r"\b(?:sk|pk|rk)[-_](?:live_|test_|proj-)?[A-Za-z0-9_\-]{8,}|\bat_[A-Za-z0-9_\-]{20,}")


@lru_cache(maxsize=1)
def _tls_context() -> ssl.SSLContext:
    # Loading the CA bundle takes ~80 ms; every client of every turn shares one context.
    return ssl.create_default_context()


# Clients kept per event loop (a client's connections belong to the loop that opened them) and
# per configuration, so that a turn reuses the open connection, and its TLS session, of the
# turns before it instead of a new handshake with the model's API each time.
_CLIENTS_PER_LOOP = 32
_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, OrderedDict[tuple, openai.AsyncOpenAI]]
_clients = weakref.WeakKeyDictionary()
_closing: set[asyncio.Task] = set()


def _client(*, api_key: str, base_url: str | None) -> openai.AsyncOpenAI:
    loop = asyncio.get_running_loop()
    for gone in [other for other in _clients if other.is_closed()]:
        # A short-lived loop (async_to_sync) ended: its clients' connections died with it, and
        # they hold the loop, which would keep the weak entry alive.
        del _clients[gone]
    kept = _clients.setdefault(loop, OrderedDict())
    key = (api_key, base_url, settings.AGENT_TIMEOUT_SECONDS, settings.AGENT_MAX_RETRIES)
    client = kept.get(key)
    if client is None or client.is_closed():
        client = kept[key] = openai.AsyncOpenAI(
            api_key=api_key,
            base_url=base_url,
            timeout=settings.AGENT_TIMEOUT_SECONDS,
            max_retries=settings.AGENT_MAX_RETRIES,
            http_client=openai.DefaultAsyncHttpxClient(verify=_tls_context()),
        )
    kept.move_to_end(key)
    while len(kept) > _CLIENTS_PER_LOOP:  # keys rotated away, tenants long gone
        _, oldest = kept.popitem(last=False)
        task = loop.create_task(oldest.close())
        _closing.add(task)
        task.add_done_callback(_closing.discard)
    return client


class OpenAIProvider(Provider):
    name = "openai"

    def __init__(self, *, api_key: str, model: str, base_url: str | None = None):
        self.model = model
        self._api_key, self._base_url = api_key, base_url

    @property
    def client(self) -> openai.AsyncOpenAI:
        """The event loop's client for this key and server (called inside the loop)."""
        return _client(api_key=self._api_key, base_url=self._base_url)

    async def analyze(self, ctx: TurnContext) -> Analysis:
        messages = [
            {"role": "system", "content": prompts.ANALYZE.format(tenant=ctx.tenant_name)},
            _data_message(ctx),
            *_history(ctx),
            {"role": "user", "content": ctx.message},
        ]
        client = self.client
        try:
            with model_call("chat/completions", client.base_url):
                completion = await client.chat.completions.create(
                    model=self.model, messages=messages, tools=[RECORD_TURN],
                    tool_choice={"type": "function", "function": {"name": "record_turn"}},
                    temperature=0, max_tokens=ANALYSIS_MAX_TOKENS,
                )
        except Exception as exc:
            raise _provider_error(exc) from exc
        used = getattr(getattr(completion, "usage", None), "total_tokens", None)
        if isinstance(used, int) and used > 0:
            metrics.MODEL_TOKENS.labels(self.name, "analysis").inc(used)
        return _parse_analysis(completion, ctx)

    async def reply(self, ctx: TurnContext, analysis: Analysis, plan: ReplyPlan) -> AsyncIterator[str]:
        if plan.handoff:
            # Decided by the turn, so announced in fixed words: nothing a model writes can
            # contradict it.
            yield handoff_text(ctx.language, plan)
            return
        system = prompts.REPLY.format(tenant=ctx.tenant_name, language=ctx.language,
                                      words=max(20, ctx.limits.max_chars // 7),
                                      plan=_plan_instructions(ctx, analysis, plan))
        messages = [
            {"role": "system", "content": system},
            _data_message(ctx, only=analysis.cited),
            *_history(ctx),
            {"role": "user", "content": ctx.message},
        ]
        redactor = Redactor()
        self.finish_reason = None
        client = self.client
        try:
            with model_call("chat/completions", client.base_url):
                stream = await client.chat.completions.create(
                    model=self.model, messages=messages, stream=True, temperature=0.3,
                    max_tokens=ctx.limits.max_tokens,
                )
                try:
                    async for chunk in stream:
                        safe = redactor.feed(self._delta(chunk))
                        if safe:
                            yield safe
                finally:
                    # Also when the visitor went away: the model stops generating for nobody.
                    await stream.close()
        except Exception as exc:
            raise _provider_error(exc) from exc
        rest = redactor.flush()
        if rest:
            yield rest

    def _delta(self, chunk: Any) -> str:
        """A streamed chunk's text; chunks without choices or content (some servers send
        them) are empty."""
        if not chunk.choices:
            return ""
        choice = chunk.choices[0]
        self.finish_reason = getattr(choice, "finish_reason", None) or self.finish_reason
        delta = getattr(choice, "delta", None)
        content = getattr(delta, "content", None)
        return content if isinstance(content, str) else ""


class Redactor:
    """Removes anything shaped like a key or token from streamed text, across chunk borders.

    Secrets contain no white space, so only the last, perhaps unfinished, word is held back:
    the visitor sees text at most one word late.
    """

    def __init__(self) -> None:
        self.buffer = ""

    def feed(self, text: str) -> str:
        self.buffer += text
        cut = max(self.buffer.rfind(" "), self.buffer.rfind("\n"))
        if cut < 0:
            return ""
        out, self.buffer = self.buffer[: cut + 1], self.buffer[cut + 1:]
        return _SECRET.sub("[redacted]", out)

    def flush(self) -> str:
        out, self.buffer = _SECRET.sub("[redacted]", self.buffer), ""
        return out


def _history(ctx: TurnContext) -> list[dict[str, str]]:
    return [{"role": m.role, "content": m.content} for m in ctx.history[-20:]]


def _data_message(ctx: TurnContext, only: tuple[int, ...] | None = None) -> dict[str, str]:
    passages = [
        {"index": i, "title": p.title, "text": p.excerpt}
        for i, p in enumerate(ctx.passages)
        if only is None or i in only
    ]
    data: dict[str, Any] = {"reference_passages": passages}
    if ctx.facts.as_dict():
        data["tenant_facts"] = ctx.facts.as_dict()
    if ctx.slots:
        data["offered_meeting_slots"] = [{"token": s.token, "label": s.label} for s in ctx.slots]
    if ctx.known_contact.as_dict():
        data["known_visitor_details"] = ctx.known_contact.as_dict()
    return {"role": "system",
            "content": prompts.DATA_PREAMBLE + "\n" + json.dumps(data, ensure_ascii=False)}


def _plan_instructions(ctx: TurnContext, analysis: Analysis, plan: ReplyPlan) -> str:
    if plan.handoff:
        steps = ["A human colleague is taking over: tell the visitor briefly that a team member "
                 "will reply here shortly. Do not answer further."]
    else:
        steps = [
            "Thank the visitor for their contact details." if plan.lead_captured else None,
            _meeting_step(plan),
            "The visitor looks like a good fit; say so warmly, without pressure."
            if plan.qualified else None,
            _question_step(plan),
            "The visitor is leaving: thank them and say goodbye."
            if analysis.ends_conversation else None,
            "Answer the visitor's message.",
        ]
    return "\n".join(f"- {s}" for s in steps if s is not None)


def _meeting_step(plan: ReplyPlan) -> str | None:
    if plan.booked_slot:
        email = ("say that a confirmation is on its way by email" if plan.confirmation_email
                 else "do not promise an email")
        return f"Confirm the meeting booked for {plan.booked_slot.label}; {email}."
    if plan.slot_unavailable:
        return ("The chosen time is no longer free: apologise and point to the other times "
                "shown as buttons below your reply.")
    if plan.wish_unmet and plan.offer_slots:
        return ("Nothing is free at the time the visitor asked for: say so briefly; the closest "
                "times are shown as buttons below your reply, so do not list them.")
    if plan.offer_slots:
        return ("Offer a discovery call; the available times are shown as buttons below your "
                "reply, so do not list them.")
    if plan.booking_url:
        return "Offer a discovery call; a booking link is shown below your reply."
    return None


def _question_step(plan: ReplyPlan) -> str | None:
    if plan.needs_email:
        return "Ask for the visitor's email address."
    if plan.next_question:
        return f"Ask one qualifying question about their {plan.next_question}."
    return None


def _parse_analysis(completion: Any, ctx: TurnContext) -> Analysis:
    args = _record_turn_arguments(completion)
    intent = args.get("intent") if args.get("intent") in INTENTS else "other"
    confidence = _confidence(args)
    contact = _contact(args)
    handoff = _handoff(args)
    chosen = _chosen_slot(args, ctx)
    cited = _cited(args, ctx)
    signals = frozenset(s for s in _list(args, "signals") if isinstance(s, str) and s in SIGNALS)
    return Analysis(
        intent=intent, confidence=confidence, contact=contact, signals=signals, handoff=handoff,
        wants_meeting=bool(args.get("wants_meeting")), chosen_slot=chosen,
        ends_conversation=bool(args.get("ends_conversation")), language=_language(args),
        subject=_short(args.get("subject"), 200), summary=_short(args.get("summary"), 2000),
        cited=cited,
    )


def _record_turn_arguments(completion: Any) -> dict[str, Any]:
    """The arguments of the model's record_turn call, or of an analysis it wrote as text
    instead; AnalysisUnusable when there is none."""
    message = completion.choices[0].message if getattr(completion, "choices", None) else None
    for call in getattr(message, "tool_calls", None) or []:
        function = getattr(call, "function", None)
        if getattr(function, "name", None) == "record_turn":
            args = _json_object(getattr(function, "arguments", None))
            if args is not None:
                return args
    args = _json_object(getattr(message, "content", None))
    if args is not None:
        return args.get("arguments") if isinstance(args.get("arguments"), dict) else args
    logger.warning("provider returned no usable record_turn call")
    raise AnalysisUnusable("The model's answer holds no usable analysis.")


def _json_object(text: Any) -> dict[str, Any] | None:
    """The JSON object in ``text``: all of it, or the outermost braces inside prose."""
    if not isinstance(text, str) or "{" not in text:
        return None
    for candidate in (text, text[text.find("{"):text.rfind("}") + 1]):
        try:
            value = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    return None


def _list(args: dict[str, Any], key: str) -> list[Any]:
    value = args.get(key)
    return value if isinstance(value, list) else []


def _confidence(args: dict[str, Any]) -> float:
    try:
        return min(1.0, max(0.0, float(args.get("confidence", 0.5))))
    except (TypeError, ValueError):
        return 0.5


def _contact(args: dict[str, Any]) -> Contact:
    contact_args = args.get("contact") if isinstance(args.get("contact"), dict) else {}
    return Contact(**{k: _short(contact_args.get(k), 200) for k in
                      ("email", "name", "company", "title", "phone")})


def _handoff(args: dict[str, Any]) -> Handoff | None:
    """The model's handoff, if it gave a reason; an unknown priority or team is the default."""
    if not (isinstance(args.get("handoff"), dict) and args["handoff"].get("reason")):
        return None
    h = args["handoff"]
    return Handoff(
        reason=_short(h.get("reason"), 500) or "",
        priority=h.get("priority") if h.get("priority") in PRIORITIES else "normal",
        suggested_team=h.get("suggested_team") if h.get("suggested_team") in TEAMS else "sales",
    )


def _chosen_slot(args: dict[str, Any], ctx: TurnContext) -> str | None:
    """The slot the visitor chose, if it is one of those offered to them."""
    chosen = args.get("chosen_slot")
    return chosen if isinstance(chosen, str) and chosen in {s.token for s in ctx.slots} else None


def _cited(args: dict[str, Any], ctx: TurnContext) -> tuple[int, ...]:
    """The indexes of the passages the answer uses, among those given to the model."""
    return tuple(i for i in _list(args, "relevant_passages")
                 if isinstance(i, int) and not isinstance(i, bool) and 0 <= i < len(ctx.passages))


def _language(args: dict[str, Any]) -> str | None:
    """An ISO 639-1 code, from the first two letters of what the model gave."""
    language = args.get("language") if isinstance(args.get("language"), str) else None
    return language[:2].lower() if language and re.fullmatch(r"[A-Za-z]{2}", language[:2]) else None


def _short(value: Any, limit: int) -> str | None:
    if not isinstance(value, str) or not value.strip():
        return None
    return value.strip()[:limit]


# Saving the provider's settings waits for this at most (docs/agent.md, "When the provider
# fails"): a server that is there answers one token in well under it.
CHECK_SECONDS = 8.0


def check_connection(*, api_key: str, model: str, base_url: str | None,
                     timeout: float = CHECK_SECONDS) -> tuple[str, str] | None:
    """Asks the provider for a one-token completion with these settings, as a turn would call
    it (the official client, the shared TLS context, no retry); None when it answers, else the
    setting to look at ("base_url", "api_key" or "model") and why, in words a person can act
    on, never the key."""
    where = base_url or "https://api.openai.com/v1"
    client = openai.OpenAI(api_key=api_key, base_url=base_url, timeout=timeout, max_retries=0,
                           http_client=openai.DefaultHttpxClient(verify=_tls_context()))
    try:
        client.chat.completions.create(model=model, max_tokens=1,
                                       messages=[{"role": "user", "content": "ping"}])
    except openai.APITimeoutError:
        return "base_url", f"{where} did not answer within {timeout:g} seconds."
    except openai.AuthenticationError as exc:
        return "api_key", f"{where} refused the API key (HTTP {exc.status_code})."
    except openai.NotFoundError:
        return "model", (f"{where} answered 404: it has no model {model!r}, or the base URL is "
                         "not an OpenAI-compatible API (it usually ends in /v1).")
    except openai.APIStatusError as exc:
        return "base_url", f"{where} answered with an error (HTTP {exc.status_code})."
    except openai.APIConnectionError as exc:
        cause = exc.__cause__ or exc
        return "base_url", f"{where} could not be reached ({type(cause).__name__})."
    except openai.OpenAIError as exc:  # an answer the client cannot read
        return "base_url", f"{where} answered something that is no completion ({type(exc).__name__})."
    finally:
        client.close()
    return None


def _provider_error(exc: Exception) -> Exception:
    if isinstance(exc, (ProviderUnavailable, ProviderTimeout)):
        return exc
    if isinstance(exc, openai.APITimeoutError):
        return ProviderTimeout()
    if isinstance(exc, openai.APIStatusError):
        logger.warning("provider answered %s: %s", exc.status_code, str(exc)[:300])
        return ProviderUnavailable(
            f"The language-model provider answered with an error (HTTP {exc.status_code})."
        )
    if isinstance(exc, openai.APIConnectionError):
        return ProviderUnavailable("The language-model provider could not be reached.")
    logger.exception("unexpected provider failure")
    return ProviderUnavailable()
