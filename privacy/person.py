"""Finding a person: by lead id, email address, phone number or widget visitor id, everything
the service keeps about them (docs/privacy.md, "Who a person is").

A person is their leads and their conversations. From a lead, the conversations linked to it and
every other conversation of the same widget visitors that no other lead holds (a visitor who
chatted before giving an email, or came back later); from a visitor id, that visitor's
conversations and the leads they led to. A conversation of the same visitor linked to another
lead is that other person's (two people at one computer): it stays.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass, field

from django.db.models import Q
from django.db.models.functions import Lower

from conversations.models import Conversation, Message, Role
from core.emails import EmailRefused, normalise_email
from leads.models import Lead
from tenants.models import Tenant

from .models import SubjectKind

# Strings shorter than this are not looked for elsewhere: "ok" or a two-letter name would match
# unrelated text. Whole typed messages, names and addresses are longer.
MIN_NEEDLE = 4
_PHONE_NOISE = re.compile(r"[^\d+]")


@dataclass
class Person:
    tenant: Tenant
    livemode: bool
    leads: list[Lead] = field(default_factory=list)
    conversations: list[Conversation] = field(default_factory=list)

    @property
    def lead_ids(self) -> list[uuid.UUID]:
        return [lead.pk for lead in self.leads]

    @property
    def conversation_ids(self) -> list[uuid.UUID]:
        return [conversation.pk for conversation in self.conversations]

    @property
    def emails(self) -> list[str]:
        found = {lead.email.lower() for lead in self.leads}
        found |= {str(c.contact.get("email")).lower() for c in self.conversations
                  if c.contact.get("email")}
        return sorted(found)

    @property
    def phones(self) -> list[str]:
        found = {lead.phone for lead in self.leads if lead.phone}
        found |= {str(c.contact.get("phone")) for c in self.conversations if c.contact.get("phone")}
        return sorted(found)

    def needles(self, *, typed: bool = True) -> list[str]:
        """The strings that must appear nowhere once the person is erased: their addresses,
        names and phone numbers, visitor ids, and (with ``typed``) every message they typed."""
        found: set[str] = set(self.emails) | set(self.phones)
        for lead in self.leads:
            found |= {lead.name, lead.email}
        for conversation in self.conversations:
            found.add(conversation.visitor_id)
            found |= {str(value) for key, value in conversation.contact.items()
                      if key in ("name", "email", "phone") and value}
        if typed and self.conversations:
            found |= set(Message.objects.filter(conversation__in=self.conversation_ids,
                                                role=Role.USER).values_list("content", flat=True))
        return sorted(needle for needle in found if needle and len(needle) >= MIN_NEEDLE)

    def __bool__(self) -> bool:
        return bool(self.leads or self.conversations)


def digits(phone: str) -> str:
    return _PHONE_NOISE.sub("", phone).lstrip("+").lstrip("0")


def find(*, tenant: Tenant, livemode: bool, kind: str, value: str) -> Person:
    """The person named by ``value`` of ``kind`` (a ``SubjectKind`` other than retention and
    conversation); empty when the service keeps nothing about them."""
    leads = Lead.objects.filter(tenant=tenant, livemode=livemode)
    conversations = Conversation.objects.filter(tenant=tenant, livemode=livemode)
    if kind == SubjectKind.LEAD:
        found = list(leads.filter(pk=value))
        return _widen(tenant, livemode, found, [])
    if kind == SubjectKind.EMAIL:
        try:
            address = normalise_email(value)
        except EmailRefused:
            address = value.strip()
        found = list(leads.alias(email_lower=Lower("email")).filter(email_lower=address.lower()))
        return _widen(tenant, livemode, found, [])
    if kind == SubjectKind.PHONE:
        wanted = digits(value)
        if len(wanted) < 6:
            return Person(tenant, livemode)
        candidates = leads.filter(phone__contains=wanted[-6:])
        found = [lead for lead in candidates if digits(lead.phone) == wanted]
        return _widen(tenant, livemode, found, [])
    if kind == SubjectKind.VISITOR:
        visited = list(conversations.filter(visitor_id=value))
        lead_ids = {c.lead_id for c in visited if c.lead_id}
        return _widen(tenant, livemode, list(leads.filter(pk__in=lead_ids)), visited)
    raise ValueError(f"A person cannot be found by {kind!r}")


def _widen(tenant: Tenant, livemode: bool, leads: list[Lead],
           conversations: list[Conversation]) -> Person:
    """The leads' conversations and their visitors' other conversations that no other lead
    holds, added to ``conversations``."""
    lead_ids = [lead.pk for lead in leads]
    scope = Conversation.objects.filter(tenant=tenant, livemode=livemode)
    found = {c.pk: c for c in conversations}
    if lead_ids:
        found.update((c.pk, c) for c in scope.filter(lead__in=lead_ids))
    visitors = {c.visitor_id for c in found.values()}
    if visitors:
        same_visitor = scope.filter(visitor_id__in=visitors).filter(
            Q(lead__isnull=True) | Q(lead__in=lead_ids))
        found.update((c.pk, c) for c in same_visitor)
    return Person(tenant, livemode, leads=leads,
                  conversations=sorted(found.values(), key=lambda c: (c.started_at, c.pk)))
