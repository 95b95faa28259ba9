"""The chat turn: three short transactions around the provider's two calls, so that no database
lock is held while a language model thinks.

1. ``turn_open``: find or start the session, store the visitor's message, gather the context.
2. (provider) ``analyze``.
3. ``turn_apply``: capture the lead, score, qualify, book, hand off (every state change and its
   event) and decide what the reply must say (the ``ReplyPlan``).
4. (provider) ``reply``, streamed or not.
5. ``turn_close``: store the reply, update the conversation, end it if the visitor left.

``conversations.services.drivers`` drives the five steps for the two kinds of chat request.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field, replace
from datetime import date, datetime, timedelta
from typing import Any, NamedTuple

from django.db import transaction
from django.utils import timezone

from agent.interface import (
    BANT,
    BUILTIN_LANGUAGES,
    Analysis,
    Contact,
    HistoryMessage,
    LeadSnapshot,
    Passage,
    ReplyLimits,
    ReplyPlan,
    TenantFacts,
    TurnContext,
    Wish,
    conversation_subject,
    conversation_summary,
    lead_score,
    phrase,
    qualifies,
    read_message,
    read_wish,
    said_by_visitor,
)
from core.errors import Forbidden, NotFound
from core.languages import detect_language
from core.models import EventType
from core.sql import commit_without_waiting_for_the_disk
from core.timestamps import format_timestamp, stored_timestamp
from knowledge.retrieval import Question, embed_question, retrieve
from leads.models import Lead
from leads.services import lead_seen, lead_update
from tenants.models import Tenant
from tenants.selectors import agent_phrasing_examples
from tenants.services import provider_health_record

from .. import live, scheduling
from ..attachments import Upload, attachment_payload
from ..events import emit_conversation_event, message_facts
from ..models import (
    IDLE_EXPIRY,
    Channel,
    Conversation,
    ConversationStatus,
    MeetingStatus,
    Message,
    Role,
)
from . import capture, routing
from .attachments import attachment_add, files_kept_on_success
from .lifecycle import conversation_end, conversation_start, hand_off
from .messages import append_message
from .proactive import proactive_reply_opening

HISTORY_LIMIT = 20
HIGH_VALUE_INTENTS = {"purchase_intent", "demo_request", "booking"}
HIGH_VALUE_CONFIDENCE = 0.8
HIGH_VALUE_SIGNALS = {"budget", "authority", "timeline", "team_size"}
QUALIFYING_FLOW = ("need", "timeline", "budget", "authority")  # the order questions are asked
NO_QUESTION_INTENTS = {"greeting", "goodbye", "human_request", "support", "booking", "contact_info"}
EMAIL_WORTHY = {"demo_request", "purchase_intent", "pricing", "booking"}
OPEN_LEAD_STATUSES = {"new", "qualifying", "contacted", "nurturing"}
MEETING_BOOKED = "meeting_booked"  # the signal that records a booking in this conversation
# Languages the conversation may be set to from a provider's analysis: those the agent's fixed
# sentences exist in (a model may name any).
CONVERSATION_LANGUAGES = BUILTIN_LANGUAGES
# Before the person a conversation was handed to joins it, the visitor is told that someone will
# reply at their first message, then again only after this long without a notice or a reply of
# a person (docs/conversations.md, "While a person has the conversation").
NOTICE_REPEAT = timedelta(minutes=10)


@dataclass(frozen=True)
class Acceptance:
    """The visitor's acceptance of the tenant's notice, as the widget sends it with each
    message (docs/widget.md, "Consent"): the version it showed, and when they accepted."""

    version: int
    accepted_at: datetime


@dataclass(frozen=True)
class TurnInput:
    tenant: Tenant
    livemode: bool
    visitor_id: str
    message: str
    session_id: uuid.UUID | None = None
    channel: str = Channel.API
    language: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)  # the request body's metadata
    request_meta: dict[str, Any] = field(default_factory=dict)  # userAgent, referrer: defaults
    consent: Acceptance | None = None
    # The visitor's browser asks not to be tracked (DNT: 1 or Sec-GPC: 1).
    do_not_track: bool = False
    # The tenant's proactive message this message replies to: read from the widget's
    # ``metadata.proactive`` by the turn itself (docs/widget.md), not set by callers.
    proactive_id: uuid.UUID | None = None
    # A file sent with the message (the widget's): read and checked, not yet stored. The agent
    # never reads it; ``message`` may then be empty.
    attachment: Upload | None = None


@dataclass(frozen=True)
class OpenedTurn:
    tenant: Tenant  # as the request authenticated it: the later steps need not read it again
    conversation_id: uuid.UUID
    user_message_id: uuid.UUID
    user_message: tuple[int, datetime]  # its sequence and time: the reply's response time
    # The assistant message's id, known before it is written; a quiet turn's is the visitor's
    # message's (no reply is written).
    reply_id: uuid.UUID
    silent: bool  # a person has the conversation: the agent does not answer
    ctx: TurnContext
    view: scheduling.SlotView  # the visitor's time zone and language, for the slots' labels
    chosen_slot: str | None = None  # the slot token of the request's ``metadata.slot``
    # What the agent's earlier replies asked for (``_asked``), when the history read covered
    # every earlier message; None: ``turn_apply`` reads it.
    asked: frozenset[str] | None = None
    language_told: bool = True  # the turn's language came from the request or the message
    notice: bool = False  # silent, but the visitor is told that a person will reply
    # When the visitor would like to meet (``agent.when``), as this message or the latest
    # earlier one that said it; ``wish_now``: this message said it.
    wish: Wish | None = None
    wish_now: bool = False
    # The files stored with the visitor's message, as the live streams show them.
    attachments: tuple[dict[str, Any], ...] = ()

    @property
    def quiet(self) -> bool:
        """Nothing is said at all: no reply is stored, no ``message.sent``."""
        return self.silent and not self.notice


@dataclass(frozen=True)
class TurnOutcome:
    message: Message  # the reply; a quiet turn's is the visitor's own message (nothing was said)
    conversation: Conversation
    handoff: dict[str, str] | None
    plan: ReplyPlan | None = None
    cited: tuple[Passage, ...] = ()  # the passages the reply used (``Message.sources``)
    intent: str = ""  # of the visitor's message
    confidence: float = 0.0
    quiet: bool = False  # ``OpenedTurn.quiet``: the chat response says nothing


class SessionNotFound(NotFound):
    default_message = "No such chat session for this visitor."


class ConsentRequired(Forbidden):
    """A widget's message without an acceptance of the tenant's current notice: nothing of it
    is stored (docs/widget.md, "Consent")."""

    default_message = "The visitor has not accepted this chat's notice."


# --- 1. open ------------------------------------------------------------------------------


def turn_open(inp: TurnInput) -> OpenedTurn:
    # Refused before anything is read, embedded or written.
    consent = _consent_record(inp, now=timezone.now())
    # A tenant on its provider's embeddings has the question embedded first, outside the
    # transaction: no lock waits on the provider (knowledge.retrieval.embed_question).
    question = embed_question(tenant=inp.tenant, query=inp.message)
    with files_kept_on_success() as saved:  # a turn refused or failed keeps no file
        return _open(inp, consent=consent, question=question, saved=saved)


def _consent_record(inp: TurnInput, *, now: datetime) -> dict[str, Any] | None:
    """What the conversation keeps of the visitor's acceptance: the notice's version, its words
    and link as they were, and when the visitor accepted (a time the browser says is in the
    future is now). None when the tenant requires none; only the widget's chat is asked for
    one, as only it shows the notice (an API client's visitors are its own to ask)."""
    tenant = inp.tenant
    if not tenant.consent_required or inp.channel != Channel.WEB_CHAT:
        return None
    given = inp.consent
    if given is None or given.version != tenant.consent_version:
        raise ConsentRequired(
            f"The visitor has not accepted this chat's notice (version "
            f"{tenant.consent_version}): the widget shows it, and sends the acceptance, "
            "{version, acceptedAt}, with each message.")
    return {"version": tenant.consent_version, "text": tenant.consent_text,
            "link": tenant.consent_link or None,
            "acceptedAt": format_timestamp(min(given.accepted_at, now))}


@transaction.atomic
def _open(inp: TurnInput, *, consent: dict[str, Any] | None,
          question: Question | None, saved: list[str]) -> OpenedTurn:
    # turn_close's commit follows before the client is answered, and flushes this one with it;
    # a stream shows nothing the visitor could rely on before it either.
    commit_without_waiting_for_the_disk()
    now = timezone.now()
    inp, chosen_slot = _read_metadata(inp)
    conversation = _session_for(inp, now=now, consent=consent)
    if inp.proactive_id is not None:
        proactive_reply_opening(conversation, proactive_id=inp.proactive_id, now=now)
    message = append_message(conversation, role=Role.USER, content=inp.message, now=now)
    files = _store_file(inp, conversation, message, saved)
    silent = conversation.status == ConversationStatus.HANDED_OFF
    # Decided under the conversation's lock: two messages at once get one notice.
    notice = silent and _notice_due(conversation, now=now)
    if notice:
        conversation.handoff_notice_at = now
    conversation.save(update_fields=["message_count", "last_message_at", "metadata", "consent",
                                     "handoff_notice_at", "updated_at"])
    emit_conversation_event(conversation, EventType.MESSAGE_RECEIVED,
                            f"Visitor message in conversation {conversation.pk}",
                            message=message_facts(message))
    earlier = _earlier_messages(conversation, message)
    if chosen_slot is None and not silent:
        chosen_slot = _slot_said(inp.message, earlier, conversation.offered_slots)
    # The conversation's language holds unless the message says otherwise clearly; a first
    # message that tells none ("Hello") is answered in English and sets nothing.
    # A slot chosen from the offered ones is the service's own words: it tells no language,
    # and the conversation's holds.
    told = inp.language or (None if chosen_slot else
                            detect_language(inp.message, prior=conversation.language or None))
    language = told or live.spoken_language(conversation.language, conversation.metadata)
    view = scheduling.view_for(inp.tenant, conversation.metadata.get("timezone"), language)
    wish, wish_now = (None, False) if silent or chosen_slot else _wish(
        inp.message, earlier, language=language, today=now.astimezone(view.zone).date())
    return OpenedTurn(tenant=inp.tenant, conversation_id=conversation.pk,
                      user_message_id=message.pk,
                      user_message=(message.sequence, message.created_at),
                      reply_id=message.pk if silent and not notice else uuid.uuid4(),
                      silent=silent, notice=notice,
                      ctx=_context(inp, conversation, earlier, silent=silent, view=view,
                                   question=question),
                      view=view, chosen_slot=chosen_slot,
                      asked=(_asked_in(earlier) if len(earlier) == message.sequence else None),
                      language_told=bool(told), wish=wish, wish_now=wish_now, attachments=files)


def _store_file(inp: TurnInput, conversation: Conversation, message: Message,
                saved: list[str]) -> tuple[dict[str, Any], ...]:
    """The visitor's file, stored with their message; as the stream's ``message_start`` shows it."""
    if inp.attachment is None:
        return ()
    return (attachment_payload(attachment_add(conversation=conversation, message=message,
                                              upload=inp.attachment, saved=saved)),)


def _notice_due(conversation: Conversation, *, now: datetime) -> bool:
    """Whether the visitor of a handed-off conversation is told (again) that a person will
    reply: never once that person joined (they have the conversation); otherwise at the first
    message after the handoff, then after ``NOTICE_REPEAT`` without a notice or a person's
    reply."""
    if conversation.joined_at is not None:
        return False
    last = conversation.handoff_notice_at
    return last is None or now - last >= NOTICE_REPEAT


def _read_metadata(inp: TurnInput) -> tuple[TurnInput, str | None]:
    """The request's metadata as the conversation keeps it, and the slot it chose.

    ``timezone`` is kept only when it is an IANA zone (an unknown one is dropped, so the zone
    the conversation knows stays), ``widgetLanguage`` only when the agent speaks it; ``slot``
    is this message's choice among the offered slots (a suggested action's ``metadata``), not
    something the conversation keeps.

    A visitor whose browser asks not to be tracked, of a tenant that honours it, leaves none of
    the rest (docs/widget.md, "Do Not Track"): neither the request's headers nor the body's
    keys. Their time zone stays: the times offered for a meeting are in it; so does the widget's
    language, which says nothing of the visitor that their browser did not already show.
    """
    metadata = dict(inp.metadata)
    slot = metadata.pop("slot", None)
    zone = scheduling.visitor_zone(metadata.pop("timezone", None))
    # The widget's own keys, on its channel only: a v1 client's metadata is its own (the
    # specification's "arbitrary key-value pairs") and kept as sent.
    proactive = shown_in = None
    if inp.channel == Channel.WEB_CHAT:
        proactive = _uuid_or_none(metadata.pop("proactive", None))
        shown_in = metadata.pop("widgetLanguage", None)
    request_meta = inp.request_meta
    if inp.do_not_track and inp.tenant.honour_do_not_track:
        metadata, request_meta = {}, {}
    if zone:
        metadata["timezone"] = zone
    # The language the widget shows its own words in (docs/widget.md, "Languages"): the
    # conversation's until its messages tell one, so that the service's notices match them.
    if shown_in in CONVERSATION_LANGUAGES:
        metadata["widgetLanguage"] = shown_in
    chosen = slot if isinstance(slot, str) and scheduling.parse_token(slot) else None
    return replace(inp, metadata=metadata, request_meta=request_meta,
                   proactive_id=proactive), chosen


def _uuid_or_none(value: Any) -> uuid.UUID | None:
    """The id of a proactive message as the widget sends it (32 hex digits), else None."""
    try:
        return uuid.UUID(hex=value) if isinstance(value, str) else None
    except ValueError:
        return None


def _wish(text: str, earlier: list[_Earlier], *, language: str, today: date
          ) -> tuple[Wish | None, bool]:
    """When the visitor would like to meet: as this message says it, or as the latest of their
    earlier messages (within the history read) that said it ("can we talk next week?" before
    the agent offered slots); and whether this message said it."""
    wish = read_wish(text, language, today)
    if wish is not None:
        return wish, True
    for message in reversed(earlier):
        if message.role == Role.USER and (wish := read_wish(message.content, language, today)):
            return wish, False
    return None, False


def _slot_said(text: str, earlier: list[_Earlier], offered: list[str]) -> str | None:
    """The slot whose offered ``reply`` action's ``message`` is ``text`` exactly (spaces around
    aside): a client that follows the specification sends an action's ``message`` back as the
    visitor's next message, without its metadata (docs/conversations.md, "Booking a slot").
    Only the latest reply (within the history read) that offered the conversation's current
    ``offered_slots`` counts."""
    if not offered:
        return None
    said = text.strip()
    for message in reversed(earlier):
        if message.role != Role.ASSISTANT or not isinstance(message.actions, list):
            continue
        slots = {_slot_of(action): action.get("message") for action in message.actions
                 if _slot_of(action) in offered}
        if slots:
            return next((slot for slot, words in slots.items()
                         if isinstance(words, str) and words.strip() == said), None)
    return None


def _slot_of(action: Any) -> str | None:
    """The slot token a suggested action carries, if any."""
    metadata = action.get("metadata") if isinstance(action, dict) else None
    slot = metadata.get("slot") if isinstance(metadata, dict) else None
    return slot if isinstance(slot, str) else None


def with_visitor_choice(opened: OpenedTurn, analysis: Analysis) -> Analysis:
    """The analysis, with the slot the visitor took from a suggested action: structured data
    decides the booking, whatever the words of the message read as. A time asked for after
    slots were offered ("anything next week?") asks for other slots, whatever the words read
    as."""
    if opened.silent:
        return analysis
    if opened.chosen_slot is not None:
        return replace(analysis, intent="booking", confidence=1.0,
                       chosen_slot=opened.chosen_slot)
    if opened.wish_now and opened.ctx.slots and not analysis.chosen_slot:
        return replace(analysis, wants_meeting=True)
    return analysis


def _session_for(inp: TurnInput, *, now: datetime,
                 consent: dict[str, Any] | None) -> Conversation:
    """The visitor's session to continue, or a new one (docs/conversations.md, "Sessions"),
    with the visitor's acceptance of a notice newer than the one it holds."""
    if inp.session_id is not None:
        current = (Conversation.objects.select_for_update(of=("self",)).select_related("lead")
                   .filter(pk=inp.session_id, tenant=inp.tenant, livemode=inp.livemode,
                           visitor_id=inp.visitor_id).first())
        if current is None:
            raise SessionNotFound()
        current.tenant = inp.tenant
        if current.status == ConversationStatus.ACTIVE and now - current.last_message_at > IDLE_EXPIRY:
            conversation_end(current, status=ConversationStatus.EXPIRED, reason="expired", now=now)
        if current.is_open:
            # Where the visitor came from is what the session first saw; the body's metadata
            # may add or correct keys on any turn.
            current.metadata = {**_metadata(inp), **current.metadata, **inp.metadata}
            if consent is not None and (current.consent or {}).get("version") != consent["version"]:
                current.consent = consent
            return current
    return conversation_start(tenant=inp.tenant, livemode=inp.livemode,
                              visitor_id=inp.visitor_id, channel=inp.channel,
                              metadata=_metadata(inp), language=inp.language or "",
                              consent=consent, now=now)


def _metadata(inp: TurnInput) -> dict[str, Any]:
    return {"userAgent": None, "referrer": None, "landingPage": None, **inp.request_meta,
            **inp.metadata}


class _Earlier(NamedTuple):
    """An earlier message of the conversation, as much of it as a turn reads."""

    role: str
    content: str
    turn: dict[str, Any]
    actions: list[dict[str, Any]]  # a reply's suggested actions


def _context(inp: TurnInput, conversation: Conversation, earlier: list[_Earlier], *,
             silent: bool, view: scheduling.SlotView, question: Question | None) -> TurnContext:
    return TurnContext(
        tenant_name=inp.tenant.name,
        message=inp.message,
        history=[HistoryMessage(role=m.role, content=m.content) for m in earlier],
        language=view.language,
        # A person has a silent conversation: the agent neither answers nor offers anything.
        passages=[] if silent else retrieve(tenant=inp.tenant, livemode=inp.livemode,
                                            query=inp.message, question=question),
        lead=_lead_snapshot(conversation.lead),
        known_contact=_known_contact(conversation),
        signals=frozenset(conversation.signals),
        slots=[] if silent else _offered_slots(inp.tenant, conversation, view),
        booking_url=inp.tenant.booking_url,
        meeting_booked=MEETING_BOOKED in conversation.signals,
        facts=_facts(inp.tenant),
        limits=ReplyLimits(max_tokens=inp.tenant.agent_max_reply_tokens,
                           max_chars=inp.tenant.agent_max_reply_chars,
                           turn_seconds=inp.tenant.agent_turn_seconds),
        tenant_examples=agent_phrasing_examples(tenant=inp.tenant),
    )


def _facts(tenant: Tenant) -> TenantFacts:
    return TenantFacts(product=tenant.product_summary, pricing_url=tenant.pricing_url,
                       business_hours=tenant.business_hours, booking_url=tenant.booking_url)


def _earlier_messages(conversation: Conversation, message: Message) -> list[_Earlier]:
    """The messages before ``message``, oldest first, at most ``HISTORY_LIMIT``: the history,
    and in a conversation no longer than that, every reply's ``turn`` too."""
    if message.sequence == 0:
        return []  # a new conversation: nothing to read
    recent = (Message.objects.filter(conversation_id=conversation.pk,
                                     sequence__lt=message.sequence)
              .order_by("-sequence")
              .values_list("role", "content", "turn", "suggested_actions")[:HISTORY_LIMIT])
    return [_Earlier(*row) for row in reversed(recent)]


def _lead_snapshot(lead: Lead | None) -> LeadSnapshot | None:
    if lead is None:
        return None
    return LeadSnapshot(email=lead.email, name=lead.name or None, company=lead.company or None,
                        status=lead.status, score=lead.score)


def _offered_slots(tenant: Tenant, conversation: Conversation,
                   view: scheduling.SlotView) -> list:
    """The slots offered last turn, which the visitor may now choose among."""
    starts = map(scheduling.parse_token, conversation.offered_slots)
    return [scheduling.make_slot(tenant, start, view) for start in starts if start]


def _contact(conversation: Conversation) -> Contact:
    return Contact(**{k: v for k, v in conversation.contact.items()
                      if k in Contact.__dataclass_fields__})


def _known_contact(conversation: Conversation) -> Contact:
    known = _contact(conversation)
    lead = conversation.lead
    if lead is None:
        return known
    return Contact(email=lead.email, name=lead.name or None, company=lead.company or None,
                   title=lead.title or None, phone=lead.phone or None).merged(known)


# --- 3. apply -----------------------------------------------------------------------------


@dataclass
class _Turn:
    """What ``turn_apply``'s steps share."""

    conversation: Conversation
    analysis: Analysis
    contact: Contact
    given_email: str | None  # the address this message gives as the visitor's
    seen: set[str]  # signals: the conversation's, the provider's and the rules'
    slot_token: str | None
    now: datetime
    asked: set[str]  # what the agent's earlier replies asked for: "email", BANT signals
    offered_contact: bool  # the visitor gave contact details in this message
    view: scheduling.SlotView
    wish: Wish | None  # when the visitor would like to meet (``OpenedTurn.wish``)
    plan: ReplyPlan = field(default_factory=ReplyPlan)

    @property
    def booked(self) -> bool:
        return MEETING_BOOKED in self.seen


def turn_apply(*, opened: OpenedTurn, analysis: Analysis) -> ReplyPlan:
    """Applies what the visitor's message meant; returns what the reply must say."""
    if _may_schedule(opened, analysis):
        # The reps' calendars are read here, outside the transaction, in bounded time: the
        # transaction below reads what this cached (docs/calendars.md).
        scheduling.prepare_calendars(opened.tenant, now=timezone.now())
    return _apply(opened=opened, analysis=analysis)


def _may_schedule(opened: OpenedTurn, analysis: Analysis) -> bool:
    """Whether this turn may offer slots (the visitor asks for a meeting) or book one (slots
    were offered, or the visitor named one)."""
    if opened.silent:
        return False
    wants_slots = analysis.wants_meeting and not opened.tenant.booking_url
    return wants_slots or bool(analysis.chosen_slot or opened.chosen_slot or opened.ctx.slots)


@transaction.atomic
def _apply(*, opened: OpenedTurn, analysis: Analysis) -> ReplyPlan:
    conversation = (Conversation.objects.select_for_update(of=("self",)).select_related("lead")
                    .get(pk=opened.conversation_id))
    conversation.tenant = opened.tenant
    turn = _read(conversation, opened, analysis)
    lead, captured = capture.capture_lead(conversation, turn.contact, given_email=turn.given_email)
    turn.plan = replace(turn.plan, lead_captured=captured)
    _meeting(turn, lead)
    _score(turn)
    _notice_high_value(turn)
    if turn.plan.booked_slot:
        turn.plan = capture.announce_meeting(conversation, turn.plan)
    _hand_off_if_asked(turn)
    _follow_up(turn)
    conversation.save()
    if not (turn.plan.booked_slot or turn.plan.handoff):
        # turn_close's commit follows and flushes this one. A booking or a handoff enqueues
        # emails and calendar writes when this commits, which must not leave before it is on
        # disk: those wait for it.
        commit_without_waiting_for_the_disk()
    return turn.plan


def _read(conversation: Conversation, opened: OpenedTurn, analysis: Analysis) -> _Turn:
    """Merges what the provider and the deterministic rules read in the message into the
    conversation: contact details, intents, signals, language."""
    ctx = opened.ctx
    reading = read_message(ctx.message)  # the deterministic net under any model
    # Only what the visitor wrote: a model's invented details are no lead's.
    told = said_by_visitor(analysis.contact, "\n".join(
        [*(m.content for m in ctx.history if m.role == "user"), ctx.message]))
    if told.email and told.email.lower() in reading.not_the_visitors:
        told = replace(told, email=None)  # "my colleague's address is ...": not the visitor's
    # The address this message gives as the visitor's own, which replaces any earlier one (a
    # correction, docs/leads.md): the model's, when it is in this very message, else the rules'.
    given = (told.email if told.email and told.email.lower() in ctx.message.lower() else None) \
        or reading.contact.email
    # What is known stays (a later mis-reading must not rename a company).
    contact = ctx.known_contact.merged(told).merged(reading.contact)
    contact = replace(contact, email=given or contact.email)
    if analysis.intent not in conversation.intents:
        conversation.intents = [*conversation.intents, analysis.intent]
    conversation.contact = contact.as_dict()
    return _Turn(conversation=conversation, analysis=analysis, contact=contact, given_email=given,
                 seen=set(conversation.signals) | set(analysis.signals) | set(reading.signals),
                 slot_token=analysis.chosen_slot or reading.slot_token, now=timezone.now(),
                 asked=_asked_before(conversation, opened),
                 offered_contact=bool(told.as_dict() or reading.contact.as_dict()),
                 view=opened.view, wish=opened.wish)


def _asked_before(conversation: Conversation, opened: OpenedTurn) -> set[str]:
    """What the agent asked for before: as ``turn_open`` found it in the history when that held
    the whole conversation, else read."""
    return set(opened.asked) if opened.asked is not None else _asked(conversation)


def _asked(conversation: Conversation) -> set[str]:
    """What the agent's replies in this conversation asked the visitor for, as each reply's
    turn recorded it (``Message.turn["asked"]``, docs/agent.md): a fact, not a reading of the
    replies' words."""
    turns = conversation.messages.filter(role=Role.ASSISTANT, turn__has_key="asked")
    return {turn["asked"] for turn in turns.values_list("turn", flat=True)}


def _asked_in(messages: list[_Earlier]) -> frozenset[str]:
    """``_asked`` of the conversation whose earlier messages are all in ``messages``, read
    without a query (``turn_open`` read them for the history)."""
    return frozenset(m.turn["asked"] for m in messages
                     if m.role == Role.ASSISTANT and isinstance(m.turn, dict) and "asked" in m.turn)


def _meeting(turn: _Turn, lead: Lead | None) -> None:
    """Books the slot the visitor chose, or offers slots (or the booking link) on request."""
    if turn.booked:
        return
    conversation = turn.conversation
    if turn.slot_token:
        turn.plan = capture.book(conversation, lead, turn.slot_token, turn.plan, now=turn.now,
                                 view=turn.view)
        if turn.plan.booked_slot:
            turn.seen.add(MEETING_BOOKED)
    elif turn.analysis.wants_meeting and conversation.tenant.booking_url:
        turn.plan = replace(turn.plan, booking_url=conversation.tenant.booking_url)
    elif turn.analysis.wants_meeting:
        turn.plan = capture.offer_slots(conversation, turn.plan, now=turn.now, view=turn.view,
                                        wish=turn.wish)


def _score(turn: _Turn) -> None:
    """Scores the conversation and moves its lead: score, status, last intent, qualified."""
    conversation, tenant = turn.conversation, turn.conversation.tenant
    result = lead_score(turn.contact, frozenset(turn.seen))
    conversation.signals = sorted(turn.seen)
    conversation.lead_score = result.value
    conversation.score_reasons = result.reasons
    lead = conversation.lead
    if lead is None:
        return
    changes = _lead_changes(lead, score=result.value, intent=turn.analysis.intent)
    if changes:
        lead = lead_update(lead=lead, changes=changes, touch_activity=True,
                           score_reasons=result.reasons)
    reason = qualifies(result, turn.contact, min_score=tenant.qualification_min_score,
                       min_bant=tenant.qualification_min_bant)
    if reason and lead.status in OPEN_LEAD_STATUSES:
        lead = lead_update(lead=lead, changes={"status": "qualified"}, qualification_reason=reason)
        turn.plan = replace(turn.plan, qualified=True)
    conversation.lead = lead


def _lead_changes(lead: Lead, *, score: int, intent: str) -> dict[str, Any]:
    changes: dict[str, Any] = {}
    if lead.score != score:
        changes["score"] = score
    if lead.status == "new":
        changes["status"] = "qualifying"  # a conversation is in progress
    if lead.last_intent != intent:
        changes["last_intent"] = intent
    return changes


def _notice_high_value(turn: _Turn) -> None:
    """``intent.high_value``, once a conversation, for a strong buying intent with signals."""
    conversation, analysis = turn.conversation, turn.analysis
    if (conversation.high_value_notified or analysis.intent not in HIGH_VALUE_INTENTS
            or analysis.confidence < HIGH_VALUE_CONFIDENCE or not turn.seen & HIGH_VALUE_SIGNALS):
        return
    conversation.high_value_notified = True
    emit_conversation_event(
        conversation, EventType.INTENT_HIGH_VALUE,
        f"High-value intent ({analysis.intent}) in conversation {conversation.pk}",
        lead_id=None if conversation.lead_id is None else str(conversation.lead_id),
        intent=analysis.intent, confidence=round(analysis.confidence, 3),
        signals=sorted(turn.seen),
        estimated_deal_size=float(conversation.tenant.default_deal_value))


def _hand_off_if_asked(turn: _Turn) -> None:
    """Hands off on the analysis' request. With nobody available the conversation waits, and
    the reply tells when someone will reply and, without an address yet, asks for one so the
    answer can reach the visitor."""
    handoff = turn.analysis.handoff
    if not handoff or turn.conversation.status != ConversationStatus.ACTIVE:
        return
    turn.plan = replace(turn.plan, handoff=handoff)
    if hand_off(turn.conversation, handoff, now=turn.now) is not None:
        return
    conversation = turn.conversation
    wait = routing.waiting(tenant=conversation.tenant, now=turn.now)
    opening = (scheduling.slot_label(wait.next_opening, turn.view)
               if wait.next_opening is not None else "")
    has_email = bool(turn.contact.email or (conversation.lead is not None
                                            and conversation.lead.email))
    turn.plan = replace(turn.plan, handoff_waiting=True, handoff_opening=opening,
                        handoff_busy=wait.someone_in_hours, needs_email=not has_email)


def _follow_up(turn: _Turn) -> None:
    """What the reply should ask for next: an email to follow up, or a qualifying question;
    each once in the conversation (``_asked``), not after every answer."""
    if turn.plan.handoff:
        return
    if turn.conversation.lead is None and _email_wanted(turn):
        turn.plan = replace(turn.plan, needs_email=True)
    turn.plan = replace(turn.plan, next_question=_next_question(turn))


def _next_question(turn: _Turn) -> str | None:
    """The first qualifying signal neither seen nor asked about; none while a meeting is
    offered or booked."""
    if turn.analysis.intent in NO_QUESTION_INTENTS or turn.booked or turn.plan.offer_slots:
        return None
    return next((signal for signal in QUALIFYING_FLOW
                 if signal not in turn.seen and signal not in turn.asked), None)


def _email_wanted(turn: _Turn) -> bool:
    """A meeting needs an address, every time it is asked for, and a visitor who gives other
    contact details may give it too; otherwise a buying question or a qualifying signal is
    worth asking for it once."""
    analysis = turn.analysis
    if analysis.wants_meeting or turn.slot_token or turn.offered_contact:
        return True
    if "email" in turn.asked:
        return False
    return bool(analysis.intent in EMAIL_WORTHY or turn.seen & set(BANT))


# --- 5. close -----------------------------------------------------------------------------


@transaction.atomic
def turn_close(*, opened: OpenedTurn, analysis: Analysis, plan: ReplyPlan | None, content: str,
               cited: list[Passage], interrupted: bool = False,
               turn: dict[str, Any] | None = None,
               provider_failure: str | None = None) -> TurnOutcome:
    """Stores the reply and what the turn did to the conversation. ``provider_failure``: how
    the tenant's language model answered this turn, for its health (``""``: it did; None: no
    model was asked)."""
    now = timezone.now()
    # With its lead: the surfaces' responses show it (the legacy widget's page events), and they
    # run on the event loop, where nothing may be read lazily.
    conversation = (Conversation.objects.select_for_update(of=("self",)).select_related("lead")
                    .get(pk=opened.conversation_id))
    conversation.tenant = opened.tenant
    handoff = plan.handoff.as_dict() if plan and plan.handoff else None
    message = append_message(
        conversation, role=Role.ASSISTANT, content=content, now=now, id=opened.reply_id,
        intent=analysis.intent, confidence=round(analysis.confidence, 3),
        suggested_actions=suggested_actions(opened.ctx, analysis, plan, cited),
        handoff=handoff, sources=[_source(passage) for passage in cited],
        interrupted=interrupted, turn=turn or {},
    )
    _summarize(conversation, analysis)
    # The analysis' reading of the message's language (a model's, or the builtin's of the
    # message alone) first, then what the request or the message told; a turn that tells
    # nothing ("Hello" first) leaves the conversation's language as it was.
    if analysis.language in CONVERSATION_LANGUAGES:
        conversation.language = analysis.language
    elif opened.language_told:
        conversation.language = opened.ctx.language
    conversation.save(update_fields=["message_count", "last_message_at", "subject", "summary",
                                     "language", "updated_at"])
    if conversation.lead_id:
        lead_seen(lead_id=conversation.lead_id, at=now)
    if provider_failure is not None:
        provider_health_record(tenant_id=opened.tenant.pk, at=now, failure=provider_failure)
    sequence, at = opened.user_message
    previous = ({"role": "user", "created_at": stored_timestamp(at)}
                if message.sequence == sequence + 1 else None)
    emit_conversation_event(conversation, EventType.MESSAGE_SENT,
                            f"Assistant reply in conversation {conversation.pk}",
                            message=message_facts(message), previous_message=previous)
    if analysis.ends_conversation and conversation.status == ConversationStatus.ACTIVE:
        conversation_end(conversation, status=ConversationStatus.CLOSED, reason="visitor_left",
                         now=now)
    return TurnOutcome(message=message, conversation=conversation, handoff=handoff, plan=plan,
                       cited=tuple(cited), intent=analysis.intent,
                       confidence=message.confidence or 0.0)


def turn_quiet(*, opened: OpenedTurn, analysis: Analysis) -> TurnOutcome:
    """The end of a quiet turn (``OpenedTurn.quiet``): nothing is written, the visitor's stored
    message is what the response names."""
    conversation = Conversation.objects.select_related("lead").get(pk=opened.conversation_id)
    conversation.tenant = opened.tenant
    message = Message.objects.get(pk=opened.user_message_id)
    return TurnOutcome(message=message, conversation=conversation, handoff=None,
                       intent=analysis.intent, confidence=round(analysis.confidence, 3),
                       quiet=True)


def _source(passage: Passage) -> dict[str, str]:
    """A knowledge document a reply used, as the message keeps it."""
    return {"documentId": str(passage.document_id), "title": passage.title,
            **({"url": passage.url} if passage.url else {})}


def _summarize(conversation: Conversation, analysis: Analysis) -> None:
    """The conversation's subject and summary: the provider's, or the builtin agent's."""
    contact = _contact(conversation)
    conversation.subject = (analysis.subject
                            or conversation_subject(conversation.intents, contact))[:200]
    if analysis.summary:
        conversation.summary = analysis.summary
        return
    meeting = (conversation.meetings.filter(status=MeetingStatus.SCHEDULED).first()
               if MEETING_BOOKED in conversation.signals else None)
    conversation.summary = conversation_summary(
        intents=conversation.intents, contact=contact, signals=conversation.signals,
        score=conversation.lead_score,
        meeting=scheduling.make_slot(conversation.tenant, meeting.starts_at).label if meeting else None,
        handed_off=conversation.status == ConversationStatus.HANDED_OFF,
    )


def suggested_actions(ctx: TurnContext, analysis: Analysis, plan: ReplyPlan | None,
                      cited: list[Passage]) -> list[dict[str, Any]]:
    """Follow-ups the widget shows as buttons (``reply``) and links (``link``). A slot's button
    says the visitor's choice in words and carries the slot itself in ``metadata``, which the
    client sends back with the message (docs/conversations.md, "Booking a slot")."""
    if plan is None or plan.handoff:
        return []
    actions: list[dict[str, Any]] = []
    for slot in plan.offer_slots:
        actions.append({"type": "reply", "label": slot.label,
                        "message": phrase(ctx.language, "slot_choice", slot=slot.label),
                        "metadata": {"slot": slot.token}})
    if plan.booking_url:
        actions.append({"type": "link", "label": phrase(ctx.language, "action_book_call"),
                        "url": plan.booking_url})
    for passage in cited:
        if passage.url:
            actions.append({"type": "link", "label": passage.title[:80], "url": passage.url})
    if analysis.intent == "greeting" and not ctx.history:
        # In the conversation's language: the message is the visitor's next, in their words.
        actions += [{"type": "reply", "label": phrase(ctx.language, f"action_{name}"),
                     "message": phrase(ctx.language, f"action_{name}_says")}
                    for name in ("pricing", "demo", "person")]
    return actions
