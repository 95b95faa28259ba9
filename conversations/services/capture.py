"""Steps of a turn that write outside the conversation: the visitor's lead (captured from an
email, its gaps filled from what the visitor says) and the discovery meeting."""

from __future__ import annotations

import logging
from dataclasses import replace
from datetime import datetime

from django.db import IntegrityError, transaction

from agent.interface import Contact, ReplyPlan, Wish
from core.emails import normalised_or_none
from core.errors import ServiceError
from core.models import EventType
from core.text import one_line
from leads.events import lead_facts
from leads.models import Lead
from leads.selectors import lead_with_email
from leads.services import LeadEmailTaken, lead_create, lead_email_correct, lead_update
from tenants.services import user_next_in_rotation

from .. import scheduling
from ..events import emit_conversation_event, meeting_facts
from ..models import Conversation, Meeting
from .emails import confirmation_queued

logger = logging.getLogger("salesagent.chat")

GAP_FIELDS = ("name", "company", "title")


def capture_lead(conversation: Conversation, contact: Contact, *,
                 given_email: str | None = None) -> tuple[Lead | None, bool]:
    """The conversation's lead, created from an email or found by it, with its gaps filled
    from ``contact``; and whether this turn captured anything. ``given_email``: the address the
    visitor gave as theirs in this message, which replaces the lead's (a correction)."""
    contact = _acceptable(contact)
    given_email = normalised_or_none(given_email) if given_email else None
    lead = conversation.lead
    if lead is None and contact.email:
        _link(conversation, _lead_for_email(conversation, contact))
        return conversation.lead, True
    if lead is None:
        return None, False
    corrected = False
    if given_email and given_email.lower() != lead.email.lower():
        lead = _correct_email(conversation, lead, given_email)
        corrected = lead.email.lower() == given_email.lower()
    gaps = _gaps(lead, contact)
    if not gaps:
        return lead, corrected
    try:
        with transaction.atomic():
            lead = lead_update(lead=lead, changes=gaps)
    except ServiceError:
        logger.info("contact details refused for lead %s", lead.pk)
    conversation.lead = lead
    return lead, True


def _acceptable(contact: Contact) -> Contact:
    """What the lead rules can take of what the visitor wrote, so that no detail fails the
    turn: the address in the form leads keep (``core.emails``), or none when it is not one
    the service takes (a look-alike such as ``ſam@…`` is no lead, and not someone else's);
    names, companies and titles on one line (``core.text``), as the rules want them."""
    lines = {field: one_line(getattr(contact, field)) or None for field in GAP_FIELDS
             if getattr(contact, field)}
    return replace(contact, email=normalised_or_none(contact.email), **lines)


def _lead_for_email(conversation: Conversation, contact: Contact) -> Lead:
    owner = {"tenant": conversation.tenant, "livemode": conversation.livemode}
    found = lead_with_email(**owner, email=contact.email)
    if found is not None:
        return found
    try:
        with transaction.atomic():
            return lead_create(**owner, email=contact.email, name=contact.name,
                               company=contact.company, title=contact.title,
                               phone=e164(contact.phone), source="chat",
                               conversation_id=conversation.pk)
    except LeadEmailTaken as taken:  # captured by another conversation a moment ago
        return Lead.objects.get(pk=taken.existing_id)
    except ServiceError:
        # Details the lead rules refuse (an over-long name, a malformed phone): keep the email,
        # which is what follow-up needs.
        return lead_create(**owner, email=contact.email, source="chat",
                           conversation_id=conversation.pk)


def _correct_email(conversation: Conversation, lead: Lead, email: str) -> Lead:
    """The visitor's new address (docs/leads.md, "Corrections"): the lead's address is
    replaced when no other lead of the tenant has it; when one has, the visitor is that lead,
    and the conversation moves to it (the first lead keeps its address: it may be someone's)."""
    try:
        with transaction.atomic():
            conversation.lead = lead_email_correct(lead=lead, email=email,
                                                   conversation_id=conversation.pk)
    except LeadEmailTaken as taken:
        _link(conversation, Lead.objects.get(pk=taken.existing_id))
    except ServiceError:
        logger.info("corrected address refused for lead %s", lead.pk)
    return conversation.lead


def _link(conversation: Conversation, lead: Lead) -> None:
    conversation.lead = lead
    emit_conversation_event(conversation, EventType.CONVERSATION_LEAD_LINKED,
                            f"Conversation linked to lead {lead.email}")


def _gaps(lead: Lead, contact: Contact) -> dict[str, str]:
    gaps = {field: getattr(contact, field) for field in GAP_FIELDS
            if getattr(contact, field) and not getattr(lead, field)}
    phone = e164(contact.phone)
    if phone and not lead.phone:
        gaps["phone"] = phone
    return gaps


def e164(phone: str | None) -> str | None:
    if phone and phone.startswith("+") and phone[1:].isdigit() and 8 <= len(phone) <= 16:
        return phone
    return None


# --- meetings -------------------------------------------------------------------------------

def offer_slots(conversation: Conversation, plan: ReplyPlan, *, now: datetime,
                view: scheduling.SlotView, unavailable: bool = False,
                wish: Wish | None = None) -> ReplyPlan:
    """The next free slots, those the visitor asked for first (``wish``), labelled for the
    visitor, remembered so that the visitor's choice can be checked."""
    tenant = conversation.tenant
    offer = scheduling.free_slots(tenant, conversation.livemode, now=now, view=view, wish=wish)
    conversation.offered_slots = [slot.token for slot in offer]
    unmet = wish is not None and not any(scheduling.fits(wish, slot.start, tenant, view)
                                         for slot in offer)
    return replace(plan, offer_slots=offer, slot_unavailable=unavailable, wish_unmet=unmet)


def book(conversation: Conversation, lead: Lead | None, token: str, plan: ReplyPlan, *,
         now: datetime, view: scheduling.SlotView) -> ReplyPlan:
    """Books the slot the visitor chose, or offers others when it is not (or no longer) free."""
    if lead is None:
        return replace(plan, needs_email=True)
    tenant = conversation.tenant
    start = scheduling.parse_token(token)
    if (start is None or not scheduling.is_bookable(tenant, start, now=now)
            or not scheduling.is_free(tenant, start)):  # no rep's calendar is free any more
        return offer_slots(conversation, plan, now=now, view=view, unavailable=True)
    slot = scheduling.make_slot(tenant, start, view)
    try:
        with transaction.atomic():
            meeting = Meeting.objects.create(
                tenant=tenant, livemode=conversation.livemode, lead=lead, conversation=conversation,
                starts_at=slot.start, ends_at=slot.end, time_zone=tenant.meeting_timezone,
                host=_host(tenant, slot, now=now), lead_status_before=lead.status,
                created_at=now, updated_at=now,
            )
    except IntegrityError:  # someone else took the slot a moment ago
        return offer_slots(conversation, plan, now=now, view=view, unavailable=True)
    if lead.status not in ("booked", "converted"):
        conversation.lead = lead_update(lead=lead, changes={"status": "booked"},
                                        qualification_reason="A meeting was booked")
    conversation.offered_slots = []
    return replace(plan, booked_slot=slot, meeting_id=meeting.pk)


def _host(tenant, slot, *, now: datetime):
    """The rep the meeting is with: one whose calendar is free at the slot (round-robin among
    them, docs/calendars.md), else the next who takes meetings (round-robin, no calendar)."""
    return (scheduling.pick_host(tenant, slot.start, slot.end)
            or user_next_in_rotation(tenant_id=tenant.pk, now=now, takes_meetings=True))


def announce_meeting(conversation: Conversation, plan: ReplyPlan) -> ReplyPlan:
    """``meeting.booked``, once the lead's score moved, so the event shows the lead as it is;
    then whether its subscribers queued a confirmation the visitor will receive, which is what
    the reply may promise (docs/meetings.md, "What the agent promises")."""
    meeting = Meeting.objects.get(pk=plan.meeting_id)
    lead = conversation.lead
    emit_conversation_event(
        conversation, EventType.MEETING_BOOKED,
        f"Meeting booked with {lead.email} for "
        f"{scheduling.make_slot(conversation.tenant, meeting.starts_at).label}",
        lead=lead_facts(lead), meeting=meeting_facts(meeting),
        score_reasons=conversation.score_reasons)
    return replace(plan, confirmation_email=confirmation_queued(meeting.pk))
