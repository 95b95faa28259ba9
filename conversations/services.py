"""Chat turns and the conversation state machine.

A turn is three short transactions around the provider's two calls, so that no database lock is
held while a language model thinks:

1. ``turn_open``: find or start the session, store the visitor's message, gather the context.
2. (provider) ``analyze``.
3. ``turn_apply``: capture the lead, score, qualify, book, hand off — every state change and
   its event — and decide what the reply must say (the ``Plan``).
4. (provider) ``reply``, streamed or not.
5. ``turn_close``: store the reply, update the conversation, end it if the visitor left.

``run_turn`` and ``stream_turn`` drive the five steps for the two kinds of chat request.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from asgiref.sync import sync_to_async
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from analytics import rollups
from analytics.events import emit
from analytics.models import EventType
from config.errors import Conflict, FieldError, InvalidRequest, NotFound, ServiceError
from knowledge.retrieval import retrieve
from leads.models import Lead
from leads.services import LeadEmailTaken, lead_create, lead_update
from tenants.models import Tenant, User

from . import live, presenters, scheduling
from .agent import scoring, signals
from .agent import summary as builtin_summary
from .agent.phrases import SUPPORTED as BUILTIN_LANGUAGES
from .agent.phrases import phrase
from .agent.providers import Provider
from .agent.types import (
    Analysis,
    Contact,
    Handoff,
    HistoryMessage,
    LeadSnapshot,
    Passage,
    Plan,
    Slot,
    TurnContext,
)
from .models import (
    IDLE_EXPIRY,
    Channel,
    Conversation,
    ConversationStatus,
    Meeting,
    MeetingStatus,
    Message,
    Role,
)

logger = logging.getLogger("salesagent.chat")

HISTORY_LIMIT = 20
HIGH_VALUE_INTENTS = {"purchase_intent", "demo_request", "booking"}
HIGH_VALUE_CONFIDENCE = 0.8
HIGH_VALUE_SIGNALS = {"budget", "authority", "timeline", "team_size"}
QUALIFYING_FLOW = ("need", "timeline", "budget", "authority")  # the order questions are asked
NO_QUESTION_INTENTS = {"greeting", "goodbye", "human_request", "support", "booking", "contact_info"}
EMAIL_WORTHY = {"demo_request", "purchase_intent", "pricing", "booking"}
OPEN_LEAD_STATUSES = {"new", "qualifying", "contacted", "nurturing"}
MEETING_BOOKED = "meeting_booked"  # the signal that records a booking in this conversation


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


@dataclass(frozen=True)
class OpenedTurn:
    tenant: Tenant  # as the request authenticated it: the later steps need not read it again
    conversation_id: uuid.UUID
    user_message_id: uuid.UUID
    user_message: tuple[int, datetime]  # its sequence and time: the reply's response time
    reply_id: uuid.UUID  # the assistant message's id, known before it is written
    silent: bool  # a person has the conversation: the agent does not answer
    ctx: TurnContext


@dataclass(frozen=True)
class TurnOutcome:
    message: Message
    conversation: Conversation
    handoff: dict[str, str] | None
    plan: Plan | None = None


class SessionNotFound(NotFound):
    default_message = "No such chat session for this visitor."


# --- 1. open ------------------------------------------------------------------------------


@transaction.atomic
def turn_open(inp: TurnInput) -> OpenedTurn:
    now = timezone.now()
    conversation = _session_for(inp, now=now)
    message = _append(conversation, role=Role.USER, content=inp.message, now=now)
    conversation.save(update_fields=["message_count", "last_message_at", "metadata", "updated_at"])
    emit(
        tenant=inp.tenant, livemode=inp.livemode, type=EventType.MESSAGE_RECEIVED,
        lead=conversation.lead, conversation_id=conversation.pk,
        description=f"Visitor message in conversation {conversation.pk}",
        data={"conversationId": presenters.conv_id(conversation.pk),
              "message": presenters.v1_message(message)},
    )
    history = [
        HistoryMessage(role=m.role, content=m.content)
        for m in reversed(conversation.messages.exclude(pk=message.pk)
                          .order_by("-sequence")[:HISTORY_LIMIT])
    ]
    rollups.message_stored(conversation=conversation, message=message)
    silent = conversation.status == ConversationStatus.HANDED_OFF
    if silent:
        # The person who has the conversation sees the visitor's message at once.
        live.publish(conversation.pk, "message", live.message_payload(message))
    language = _language(inp, conversation, silent=silent)
    lead = conversation.lead
    ctx = TurnContext(
        tenant_name=inp.tenant.name,
        message=inp.message,
        history=history,
        language=language,
        passages=[] if silent else retrieve(tenant=inp.tenant, livemode=inp.livemode,
                                            query=inp.message),
        lead=None if lead is None else LeadSnapshot(
            email=lead.email, name=lead.name or None, company=lead.company or None,
            status=lead.status, score=lead.score),
        known_contact=_known_contact(conversation),
        signals=frozenset(conversation.signals),
        # The slots offered last turn, which the visitor may now choose among.
        slots=[] if silent else [scheduling.make_slot(inp.tenant, start) for start in
                                 map(scheduling.parse_token, conversation.offered_slots) if start],
        booking_url=inp.tenant.booking_url,
        meeting_booked=MEETING_BOOKED in conversation.signals,
    )
    return OpenedTurn(tenant=inp.tenant, conversation_id=conversation.pk,
                      user_message_id=message.pk,
                      user_message=(message.sequence, message.created_at),
                      reply_id=uuid.uuid4(), silent=silent, ctx=ctx)


def _session_for(inp: TurnInput, *, now) -> Conversation:
    """The visitor's session to continue, or a new one (docs/conversations.md, "Sessions")."""
    if inp.session_id is not None:
        current = (Conversation.objects.select_for_update(of=("self",)).select_related("lead")
                   .filter(pk=inp.session_id, tenant=inp.tenant, livemode=inp.livemode,
                           visitor_id=inp.visitor_id).first())
        if current is None:
            raise SessionNotFound()
        if current.status == ConversationStatus.ACTIVE and now - current.last_message_at > IDLE_EXPIRY:
            _end(current, status=ConversationStatus.EXPIRED, reason="expired", now=now)
        if current.is_open:
            # Where the visitor came from is what the session first saw; the body's metadata
            # may add or correct keys on any turn.
            current.metadata = {**_metadata(inp), **current.metadata, **inp.metadata}
            return current
    return _start(inp, now=now)


def _start(inp: TurnInput, *, now) -> Conversation:
    # A returning visitor keeps their lead: the most recent conversation that had one.
    previous = (Conversation.objects.filter(tenant=inp.tenant, livemode=inp.livemode,
                                            visitor_id=inp.visitor_id, lead__isnull=False)
                .order_by("-last_message_at").select_related("lead").first())
    conversation = Conversation.objects.create(
        tenant=inp.tenant, livemode=inp.livemode, visitor_id=inp.visitor_id, channel=inp.channel,
        lead=previous.lead if previous else None, metadata=_metadata(inp),
        language=inp.language or "", started_at=now, last_message_at=now, created_at=now,
    )
    emit(
        tenant=inp.tenant, livemode=inp.livemode, type=EventType.CONVERSATION_STARTED,
        lead=conversation.lead, conversation_id=conversation.pk,
        description=f"Conversation started on {conversation.get_channel_display()}",
        data={"conversation": presenters.v1_conversation_brief(conversation)},
    )
    return conversation


def _metadata(inp: TurnInput) -> dict[str, Any]:
    return {"userAgent": None, "referrer": None, "landingPage": None, **inp.request_meta,
            **inp.metadata}


def _append(conversation: Conversation, *, role: str, content: str, now, **fields: Any) -> Message:
    message = Message.objects.create(
        conversation=conversation, tenant_id=conversation.tenant_id, livemode=conversation.livemode,
        sequence=conversation.message_count, role=role, content=content, created_at=now, **fields,
    )
    conversation.message_count += 1
    conversation.last_message_at = now
    return message


def _language(inp: TurnInput, conversation: Conversation, *, silent: bool) -> str:
    if inp.language:
        return inp.language
    detected = signals.detect_language(inp.message)
    return detected or conversation.language or "en"


def _known_contact(conversation: Conversation) -> Contact:
    known = Contact(**{k: v for k, v in conversation.contact.items() if k in Contact.__dataclass_fields__})
    lead = conversation.lead
    if lead is None:
        return known
    return Contact(email=lead.email, name=lead.name or None, company=lead.company or None,
                   title=lead.title or None, phone=lead.phone or None).merged(known)


# --- 3. apply -----------------------------------------------------------------------------


@transaction.atomic
def turn_apply(*, opened: OpenedTurn, analysis: Analysis) -> Plan:
    """Applies what the visitor's message meant; returns what the reply must say."""
    now = timezone.now()
    conversation = (Conversation.objects.select_for_update(of=("self",)).select_related("lead")
                    .get(pk=opened.conversation_id))
    conversation.tenant = tenant = opened.tenant
    had_lead, was_handed_off = conversation.lead_id is not None, conversation.handoff is not None
    ctx = opened.ctx
    reading = signals.read(ctx.message)  # the deterministic net under any model

    # What is known stays (a later mis-reading must not rename a company); a new email wins, as
    # visitors correct their address.
    contact = ctx.known_contact.merged(analysis.contact).merged(reading.contact)
    contact = replace(contact, email=analysis.contact.email or reading.contact.email or contact.email)
    seen = set(conversation.signals) | set(analysis.signals) | set(reading.signals)
    if analysis.intent not in conversation.intents:
        conversation.intents = [*conversation.intents, analysis.intent]
    conversation.contact = contact.as_dict()
    if analysis.language and analysis.language in BUILTIN_LANGUAGES + ("it", "pt", "nl"):
        conversation.language = conversation.language or analysis.language

    plan = Plan()
    lead, captured = _capture_lead(conversation, contact)
    plan = replace(plan, lead_captured=captured)

    booked = MEETING_BOOKED in seen
    slot_token = analysis.chosen_slot or reading.slot_token
    if slot_token and not booked:
        plan = _book(conversation, lead, slot_token, plan, now=now)
        if plan.booked_slot:
            seen.add(MEETING_BOOKED)
            booked = True
    elif analysis.wants_meeting and not booked:
        if tenant.booking_url:
            plan = replace(plan, booking_url=tenant.booking_url)
        else:
            offer = scheduling.free_slots(tenant, conversation.livemode, now=now)
            conversation.offered_slots = [s.token for s in offer]
            plan = replace(plan, offer_slots=offer)

    result = scoring.score(contact, frozenset(seen))
    conversation.signals = sorted(seen)
    conversation.lead_score = result.value
    conversation.score_reasons = result.reasons

    if lead is not None:
        changes: dict[str, Any] = {}
        if lead.score != result.value:
            changes["score"] = result.value
        if lead.status == "new":
            changes["status"] = "qualifying"  # a conversation is in progress
        if lead.last_intent != analysis.intent:
            changes["last_intent"] = analysis.intent
        if changes:
            lead = lead_update(lead=lead, changes=changes, touch_activity=True)
        reason = scoring.qualifies(result, contact, min_score=tenant.qualification_min_score,
                                   min_bant=tenant.qualification_min_bant)
        if reason and lead.status in OPEN_LEAD_STATUSES:
            lead = lead_update(lead=lead, changes={"status": "qualified"}, qualification_reason=reason)
            plan = replace(plan, qualified=True)
        conversation.lead = lead

    if (not conversation.high_value_notified and analysis.intent in HIGH_VALUE_INTENTS
            and analysis.confidence >= HIGH_VALUE_CONFIDENCE and seen & HIGH_VALUE_SIGNALS):
        conversation.high_value_notified = True
        _emit_high_value(conversation, analysis, sorted(seen), tenant)

    if plan.booked_slot:
        # After the score moved, so that the event shows the lead as it now is.
        _emit_meeting_booked(conversation, Meeting.objects.get(pk=plan.meeting_id), plan.booked_slot)

    if analysis.handoff and conversation.status == ConversationStatus.ACTIVE:
        plan = replace(plan, handoff=analysis.handoff)
        _hand_off(conversation, analysis.handoff, now=now)

    if lead is None and not plan.handoff and (
            analysis.wants_meeting or slot_token or analysis.intent in EMAIL_WORTHY
            or seen & set(scoring.BANT)):
        plan = replace(plan, needs_email=True)
    if not plan.handoff and analysis.intent not in NO_QUESTION_INTENTS and not booked:
        missing = [s for s in QUALIFYING_FLOW if s not in seen]
        if missing:
            plan = replace(plan, next_question=missing[0])

    conversation.save()
    rollups.conversation_changed(conversation=conversation, had_lead=had_lead,
                                 was_handed_off=was_handed_off)
    return plan


def _capture_lead(conversation: Conversation, contact: Contact) -> tuple[Lead | None, bool]:
    """Links the conversation to its lead, creating one from an email; fills the lead's gaps."""
    lead = conversation.lead
    captured = False
    if lead is None and contact.email:
        lead = (Lead.objects.filter(tenant=conversation.tenant, livemode=conversation.livemode,
                                    email__iexact=contact.email).first())
        if lead is None:
            try:
                with transaction.atomic():
                    lead = lead_create(
                        tenant=conversation.tenant, livemode=conversation.livemode,
                        email=contact.email, name=contact.name, company=contact.company,
                        title=contact.title, phone=_e164(contact.phone), source="chat",
                        conversation_id=conversation.pk,
                    )
            except LeadEmailTaken:
                lead = Lead.objects.get(tenant=conversation.tenant, livemode=conversation.livemode,
                                        email__iexact=contact.email)
            except ServiceError:
                # Details the lead rules refuse (an over-long name, a malformed phone): keep the
                # email, which is what follow-up needs.
                lead = lead_create(tenant=conversation.tenant, livemode=conversation.livemode,
                                   email=contact.email, source="chat",
                                   conversation_id=conversation.pk)
        captured = True
        conversation.lead = lead
        # The conversation's earlier events are this lead's history too.
    elif lead is not None:
        gaps = {f: getattr(contact, f) for f in ("name", "company", "title")
                if getattr(contact, f) and not getattr(lead, f)}
        phone = _e164(contact.phone)
        if phone and not lead.phone:
            gaps["phone"] = phone
        if gaps:
            try:
                with transaction.atomic():
                    lead = lead_update(lead=lead, changes=gaps)
            except ServiceError:
                logger.info("contact details refused for lead %s", lead.pk)
            captured = True
    return lead, captured


def _e164(phone: str | None) -> str | None:
    if phone and phone.startswith("+") and phone[1:].isdigit() and 8 <= len(phone) <= 16:
        return phone
    return None


def _book(conversation: Conversation, lead: Lead | None, token: str, plan: Plan, *, now) -> Plan:
    tenant = conversation.tenant
    start = scheduling.parse_token(token)
    if lead is None:
        return replace(plan, needs_email=True)
    if start is None or not scheduling.is_bookable(tenant, start, now=now):
        offer = scheduling.free_slots(tenant, conversation.livemode, now=now)
        conversation.offered_slots = [s.token for s in offer]
        return replace(plan, slot_unavailable=True, offer_slots=offer)
    slot = scheduling.make_slot(tenant, start)
    try:
        with transaction.atomic():
            meeting = Meeting.objects.create(
                tenant=tenant, livemode=conversation.livemode, lead=lead, conversation=conversation,
                starts_at=slot.start, ends_at=slot.end, time_zone=tenant.meeting_timezone,
                created_at=now,
            )
    except IntegrityError:  # someone else took the slot a moment ago
        offer = scheduling.free_slots(tenant, conversation.livemode, now=now)
        conversation.offered_slots = [s.token for s in offer]
        return replace(plan, slot_unavailable=True, offer_slots=offer)
    rollups.meeting_booked(lead=lead, at=meeting.created_at)
    if lead.status not in ("booked", "converted"):
        conversation.lead = lead_update(lead=lead, changes={"status": "booked"})
    conversation.offered_slots = []
    return replace(plan, booked_slot=slot, meeting_id=meeting.pk)


def _emit_meeting_booked(conversation: Conversation, meeting: Meeting, slot: Slot) -> None:
    lead = conversation.lead
    emit(
        tenant=conversation.tenant, livemode=conversation.livemode, type=EventType.MEETING_BOOKED,
        lead=lead, conversation_id=conversation.pk,
        description=f"Meeting booked with {lead.email} for {slot.label}",
        data=presenters.meeting_booked_data(meeting, lead),
    )


def _emit_high_value(conversation: Conversation, analysis: Analysis, seen: list[str],
                     tenant: Tenant) -> None:
    emit(
        tenant=tenant, livemode=conversation.livemode, type=EventType.INTENT_HIGH_VALUE,
        lead=conversation.lead, conversation_id=conversation.pk,
        description=f"High-value intent ({analysis.intent}) in conversation {conversation.pk}",
        data={
            "leadId": presenters.lead_id(conversation.lead_id),
            "conversationId": presenters.conv_id(conversation.pk),
            "intent": analysis.intent,
            "confidence": round(analysis.confidence, 3),
            "signals": seen,
            "estimatedDealSize": float(tenant.default_deal_value),
        },
    )


def _next_rep(tenant: Tenant, now) -> User | None:
    """Round robin: the active member of the tenant's staff who has waited longest."""
    rep = (User.objects.select_for_update().filter(tenant=tenant, is_active=True)
           .order_by(F("last_assigned_at").asc(nulls_first=True), "date_joined", "id").first())
    if rep is not None:
        rep.last_assigned_at = now
        rep.save(update_fields=["last_assigned_at"])
    return rep


def _hand_off(conversation: Conversation, handoff: Handoff, *, now, assignee: User | None = None,
              ) -> None:
    conversation.status = ConversationStatus.HANDED_OFF
    conversation.assigned_to = assignee or _next_rep(conversation.tenant, now)
    context = {
        "summary": conversation.summary or None,
        "intents": conversation.intents,
        "leadScore": conversation.lead_score,
        "lastMessages": [
            {"role": m.role, "content": m.content[:500]}
            for m in reversed(conversation.messages.order_by("-sequence")[:5])
        ],
        "visitor": conversation.contact,
    }
    conversation.handoff = {**handoff.as_dict(), "context": context}
    emit(
        tenant=conversation.tenant, livemode=conversation.livemode,
        type=EventType.CONVERSATION_HANDOFF, lead=conversation.lead,
        conversation_id=conversation.pk,
        description=f"Conversation handed off to {handoff.suggested_team}: {handoff.reason}",
        data={
            "conversation": {
                "id": presenters.conv_id(conversation.pk),
                "leadId": presenters.lead_id(conversation.lead_id),
                "messageCount": conversation.message_count,
                "status": conversation.status,
                "assignedTo": presenters.user_id(conversation.assigned_to_id),
            },
            "handoff": conversation.handoff,
        },
    )
    live.publish(conversation.pk, "status", live.status_payload(conversation))


# --- 5. close -----------------------------------------------------------------------------


@transaction.atomic
def turn_close(*, opened: OpenedTurn, analysis: Analysis, plan: Plan | None, content: str,
               cited: list[Passage], interrupted: bool = False) -> TurnOutcome:
    now = timezone.now()
    conversation = Conversation.objects.select_for_update().get(pk=opened.conversation_id)
    conversation.tenant = opened.tenant
    handoff = plan.handoff.as_dict() if plan and plan.handoff else None
    message = _append(
        conversation, role=Role.ASSISTANT, content=content, now=now, id=opened.reply_id,
        intent=analysis.intent, confidence=round(analysis.confidence, 3),
        suggested_actions=suggested_actions(opened.ctx, analysis, plan, cited),
        handoff=handoff, sources=[presenters.source(p) for p in cited],
        interrupted=interrupted,
    )
    contact = Contact(**{k: v for k, v in conversation.contact.items()
                         if k in Contact.__dataclass_fields__})
    meeting = (conversation.meetings.filter(status=MeetingStatus.SCHEDULED).first()
               if MEETING_BOOKED in conversation.signals else None)
    conversation.subject = (analysis.subject
                            or builtin_summary.subject(conversation.intents, contact))[:200]
    conversation.summary = analysis.summary or builtin_summary.summary(
        intents=conversation.intents, contact=contact, signals=conversation.signals,
        score=conversation.lead_score,
        meeting=scheduling.make_slot(conversation.tenant, meeting.starts_at).label if meeting else None,
        handed_off=conversation.status == ConversationStatus.HANDED_OFF,
    )
    if not conversation.language:
        conversation.language = opened.ctx.language
    conversation.save(update_fields=["message_count", "last_message_at", "subject", "summary",
                                     "language", "updated_at"])
    if conversation.lead_id:
        Lead.objects.filter(pk=conversation.lead_id).update(last_active_at=now)
    emit(
        tenant=conversation.tenant, livemode=conversation.livemode, type=EventType.MESSAGE_SENT,
        lead=conversation.lead, conversation_id=conversation.pk,
        description=f"Assistant reply in conversation {conversation.pk}",
        data={"conversationId": presenters.conv_id(conversation.pk),
              "message": presenters.v1_message(message)},
    )
    if analysis.ends_conversation and conversation.status == ConversationStatus.ACTIVE:
        _end(conversation, status=ConversationStatus.CLOSED, reason="visitor_left", now=now)
    sequence, at = opened.user_message
    rollups.message_stored(conversation=conversation, message=message,
                           previous=("user", at) if message.sequence == sequence + 1 else None)
    return TurnOutcome(message=message, conversation=conversation, handoff=handoff, plan=plan)


def suggested_actions(ctx: TurnContext, analysis: Analysis, plan: Plan | None,
                      cited: list[Passage]) -> list[dict[str, str]]:
    """Follow-ups the widget shows as buttons (``reply``) and links (``link``)."""
    if plan is None or plan.handoff:
        return []
    actions: list[dict[str, str]] = []
    for slot in plan.offer_slots:
        actions.append({"type": "reply", "label": slot.label, "message": f"Book {slot.token}"})
    if plan.booking_url:
        actions.append({"type": "link", "label": "Book a discovery call", "url": plan.booking_url})
    for passage in cited:
        if passage.url:
            actions.append({"type": "link", "label": passage.title[:80], "url": passage.url})
    if analysis.intent == "greeting" and not ctx.history:
        actions += [
            {"type": "reply", "label": "See pricing", "message": "How much does it cost?"},
            {"type": "reply", "label": "Book a demo", "message": "I'd like to book a demo."},
            {"type": "reply", "label": "Talk to a person", "message": "Can I talk to a person?"},
        ]
    return actions


# --- the state machine --------------------------------------------------------------------


def _end(conversation: Conversation, *, status: str, reason: str, now) -> None:
    conversation.status = status
    conversation.ended_at = now
    conversation.save()
    emit(
        tenant=conversation.tenant, livemode=conversation.livemode,
        type=EventType.CONVERSATION_COMPLETED, lead=conversation.lead,
        conversation_id=conversation.pk,
        description=f"Conversation {status}: {reason.replace('_', ' ')}",
        data={"conversation": presenters.v1_conversation_brief(conversation), "reason": reason},
    )
    live.publish(conversation.pk, "status", live.status_payload(conversation))


@transaction.atomic
def conversation_close(*, conversation: Conversation, reason: str = "closed") -> Conversation:
    """Closes an active or handed-off conversation; closing an ended one changes nothing."""
    current = Conversation.objects.select_for_update(of=("self",)).select_related("lead", "tenant").get(
        pk=conversation.pk)
    if current.is_open:
        _end(current, status=ConversationStatus.CLOSED, reason=reason, now=timezone.now())
    return current


MAX_HUMAN_REPLY = 4000


@transaction.atomic
def conversation_reply_as_human(*, conversation: Conversation, author: User, content: str) -> Message:
    """A person of the tenant answers the visitor of a handed-off conversation assigned to them.

    The reply is an assistant message whose ``author`` is that person; it emits ``message.sent``
    and reaches the visitor's open widget at once (``conversations.live``).
    """
    text = (content or "").strip()
    if not text:
        raise InvalidRequest("Write a reply first.",
                             details=[FieldError("content", "required", "This field is required.")])
    if len(text) > MAX_HUMAN_REPLY:
        raise InvalidRequest(details=[FieldError("content", "too_long",
                                                 f"At most {MAX_HUMAN_REPLY} characters.")])
    current = (Conversation.objects.select_for_update(of=("self",)).select_related("tenant", "lead")
               .filter(pk=conversation.pk, tenant_id=author.tenant_id).first())
    if current is None:
        raise NotFound()
    if current.status != ConversationStatus.HANDED_OFF:
        raise Conflict("Only a handed-off conversation takes a reply from a person: take it over "
                       "first.")
    if current.assigned_to_id != author.pk:
        raise Conflict("This conversation is assigned to someone else.")
    now = timezone.now()
    message = _append(current, role=Role.ASSISTANT, content=text, now=now, author=author)
    current.save(update_fields=["message_count", "last_message_at", "updated_at"])
    emit(
        tenant=current.tenant, livemode=current.livemode, type=EventType.MESSAGE_SENT,
        lead=current.lead, conversation_id=current.pk,
        description=f"Reply by {author.display_name} in conversation {current.pk}",
        data={"conversationId": presenters.conv_id(current.pk),
              "message": presenters.v1_message(message),
              "author": presenters.user_id(author.pk)},
    )
    live.publish(current.pk, "message", live.message_payload(message))
    rollups.message_stored(conversation=current, message=message)
    return message


@transaction.atomic
def conversation_assign(*, conversation: Conversation, user: User) -> Conversation:
    """Gives the conversation to ``user``, a person of its tenant.

    An active conversation is taken over (handed off to that person, with
    ``conversation.handoff``); a handed-off one changes hands; an ended one cannot be assigned.
    """
    current = (Conversation.objects.select_for_update(of=("self",)).select_related("tenant", "lead")
               .get(pk=conversation.pk))
    if user.tenant_id != current.tenant_id or not user.is_active:
        raise NotFound("No such member of this tenant's staff.")
    if not current.is_open:
        raise Conflict("This conversation has ended.")
    now = timezone.now()
    was_handed_off = current.handoff is not None
    if current.status == ConversationStatus.ACTIVE:
        _hand_off(current, Handoff(reason=f"Taken over by {user.display_name}", priority="normal",
                                   suggested_team="sales"), now=now, assignee=user)
    else:
        current.assigned_to = user
        live.publish(current.pk, "status", live.status_payload(current))
    current.save()
    rollups.conversation_changed(conversation=current, had_lead=current.lead_id is not None,
                                 was_handed_off=was_handed_off)
    return current


@transaction.atomic
def conversation_hand_back(*, conversation: Conversation) -> Conversation:
    """Returns a handed-off conversation to the agent: ``active`` again, assigned to nobody.

    The specification names no event for this move, so none is emitted; the handoff record
    stays on the conversation as history.
    """
    current = (Conversation.objects.select_for_update(of=("self",)).select_related("tenant", "lead")
               .get(pk=conversation.pk))
    if current.status != ConversationStatus.HANDED_OFF:
        raise Conflict("Only a handed-off conversation can be handed back to the agent.")
    current.status = ConversationStatus.ACTIVE
    current.assigned_to = None
    current.save()
    live.publish(current.pk, "status", live.status_payload(current))
    return current


def conversations_expire_idle(*, now=None, batch: int = 500) -> int:
    """Moves active conversations idle for 30 minutes to ``expired``; returns how many.

    Each conversation is claimed with its own short transaction (skip-locked where the database
    has it), so two sweepers never expire one twice and a chat turn is never blocked for long.
    """
    now = now or timezone.now()
    cutoff = now - IDLE_EXPIRY
    ids = list(Conversation.objects.filter(status=ConversationStatus.ACTIVE,
                                           last_message_at__lt=cutoff)
               .order_by("last_message_at").values_list("pk", flat=True)[:batch])
    expired = 0
    for pk in ids:
        with transaction.atomic():
            qs = (Conversation.objects.select_for_update(skip_locked=True, of=("self",))
                  .select_related("lead", "tenant"))
            current = qs.filter(pk=pk, status=ConversationStatus.ACTIVE,
                                last_message_at__lt=cutoff).first()
            if current is None:
                continue
            _end(current, status=ConversationStatus.EXPIRED, reason="expired", now=now)
            expired += 1
    return expired


@transaction.atomic
def conversation_delete(*, conversation: Conversation) -> None:
    """Deletes the conversation and its messages (its events stay in the log)."""
    current = Conversation.objects.select_for_update().filter(pk=conversation.pk).first()
    if current is None:
        return
    rollups.conversation_deleted(conversation=current)
    current.delete()


# --- driving a turn -----------------------------------------------------------------------


def _silent_analysis(ctx: TurnContext) -> Analysis:
    intent, confidence = signals.classify(ctx.message)
    return Analysis(intent=intent, confidence=confidence)


async def run_turn(opened: OpenedTurn, provider: Provider) -> TurnOutcome:
    """The rest of a turn that ``turn_open`` began, for a non-streaming request."""
    try:
        return await _run_turn(opened, provider)
    finally:
        await provider.close()


async def _run_turn(opened: OpenedTurn, provider: Provider) -> TurnOutcome:
    if opened.silent:
        analysis = _silent_analysis(opened.ctx)
        return await sync_to_async(turn_close)(
            opened=opened, analysis=analysis, plan=None, cited=[],
            content=phrase(opened.ctx.language, "handoff_active"))
    analysis = await provider.analyze(opened.ctx)
    plan = await sync_to_async(turn_apply)(opened=opened, analysis=analysis)
    cited = [opened.ctx.passages[i] for i in analysis.cited]
    parts = [chunk async for chunk in provider.reply(opened.ctx, analysis, plan)]
    return await sync_to_async(turn_close)(opened=opened, analysis=analysis, plan=plan,
                                           content="".join(parts), cited=cited)


async def stream_turn(opened: OpenedTurn, provider: Provider) -> AsyncIterator[tuple[str, dict]]:
    """The rest of a turn that ``turn_open`` began, as Server-Sent Events: ``message_start``,
    ``content_delta``…, ``message_end`` (or ``error``). If the client goes away, generation stops
    and what was produced is kept.

    ``turn_open`` runs before the stream starts, so that its failures (an unknown session) are
    ordinary error responses rather than a broken stream."""
    # Ids are UUIDs here; each surface's view shows them in its own form.
    yield "message_start", {"id": opened.reply_id, "sessionId": opened.conversation_id}
    analysis = _silent_analysis(opened.ctx)
    plan: Plan | None = None
    parts: list[str] = []
    cited: list[Passage] = []
    finished = False
    try:
        if opened.silent:
            parts.append(phrase(opened.ctx.language, "handoff_active"))
            yield "content_delta", {"delta": parts[0]}
        else:
            analysis = await provider.analyze(opened.ctx)
            plan = await sync_to_async(turn_apply)(opened=opened, analysis=analysis)
            cited = [opened.ctx.passages[i] for i in analysis.cited]
            async for chunk in provider.reply(opened.ctx, analysis, plan):
                parts.append(chunk)
                yield "content_delta", {"delta": chunk}
        outcome = await sync_to_async(turn_close)(opened=opened, analysis=analysis, plan=plan,
                                                  content="".join(parts), cited=cited)
        finished = True
        end = {"intent": analysis.intent, "confidence": outcome.message.confidence,
               "leadScore": outcome.conversation.lead_score,
               "suggestedActions": outcome.message.suggested_actions, "outcome": outcome}
        if outcome.handoff:
            end["handoff"] = outcome.handoff
        yield "message_end", end
    except ServiceError as exc:
        await _save_partial(opened, analysis, plan, parts, cited)
        finished = True
        yield "error", {"code": exc.kind, "message": exc.message}
    except Exception:
        logger.exception("chat stream failed")
        await _save_partial(opened, analysis, plan, parts, cited)
        finished = True
        yield "error", {"code": "internal_error", "message": "The reply could not be completed."}
    finally:
        if not finished:
            # The client went away (the task is being cancelled): keep what was produced.
            await asyncio.shield(_save_partial(opened, analysis, plan, parts, cited))
        await provider.close()


async def _save_partial(opened: OpenedTurn, analysis: Analysis, plan: Plan | None,
                        parts: list[str], cited: list[Passage]) -> None:
    if not parts:
        return
    try:
        await sync_to_async(turn_close)(opened=opened, analysis=analysis, plan=plan,
                                        content="".join(parts), cited=cited, interrupted=True)
    except Exception:
        logger.exception("could not save the partial reply of conversation %s",
                         opened.conversation_id)
