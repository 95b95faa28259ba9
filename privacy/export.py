"""A person's data as one JSON document (GDPR article 15; docs/privacy.md, "Export").

Records are shown as the v1 API shows them, so a reader of the API reads the export alike;
what the API does not show (the conversation's consent and page metadata, the emails, the events'
facts) is added in the same style.
"""

from __future__ import annotations

from typing import Any

from django.db.models import Q
from django.utils import timezone

from conversations import presenters as conversation_presenters
from conversations.events import meeting_facts
from conversations.models import Attachment, Meeting, Message, Note, OutboundEmail
from core import ids
from core.models import Event
from core.timestamps import format_timestamp
from leads import presenters as lead_presenters
from leads.models import Lead

from .person import Person

FORMAT = "salesagent.person-export/1"


def document(person: Person) -> dict[str, Any]:
    conversations = person.conversations
    messages = _messages(person)
    files = _attachments(person)
    by_lead: dict[Any, int] = {}
    for conversation in conversations:
        by_lead[conversation.lead_id] = by_lead.get(conversation.lead_id, 0) + 1
    meetings = Meeting.objects.filter(lead__in=person.lead_ids).order_by("starts_at", "pk")
    emails = OutboundEmail.objects.filter(tenant=person.tenant, livemode=person.livemode).filter(
        Q(lead__in=person.lead_ids) | Q(to__in=person.emails)).order_by("created_at", "pk")
    return {
        "object": "person_export",
        "format": FORMAT,
        "generatedAt": format_timestamp(timezone.now()),
        "livemode": person.livemode,
        "leads": [_lead(lead, by_lead.get(lead.pk, 0)) for lead in person.leads],
        "conversations": [_conversation(c, messages.get(c.pk, []), files.get(c.pk, []))
                          for c in conversations],
        "meetings": [conversation_presenters.v1_meeting(meeting_facts(m)) for m in meetings],
        "emails": [_email(email) for email in emails],
        "consents": [_consent(c) for c in conversations if _consent_of(c)],
        "notes": [_note(note) for note in _notes(person)],
        "events": [_event(e) for e in _events(person)],
    }


def _lead(lead: Lead, conversation_count: int) -> dict[str, Any]:
    return lead_presenters.v1_lead_detail(lead_presenters.lead_row(lead),
                                          conversation_count=conversation_count)


def _messages(person: Person) -> dict[Any, list[Message]]:
    found: dict[Any, list[Message]] = {}
    rows = Message.objects.filter(conversation__in=person.conversation_ids).order_by(
        "conversation_id", "sequence")
    for message in rows:
        found.setdefault(message.conversation_id, []).append(message)
    return found


def _attachments(person: Person) -> dict[Any, list[Attachment]]:
    found: dict[Any, list[Attachment]] = {}
    for attachment in Attachment.objects.filter(conversation__in=person.conversation_ids).order_by(
            "conversation_id", "created_at", "pk"):
        found.setdefault(attachment.conversation_id, []).append(attachment)
    return found


def _attachment(attachment: Attachment) -> dict[str, Any]:
    """A file as the export lists it: what it is, not its bytes (docs/privacy.md, "Export")."""
    return {"id": ids.encode("att", attachment.pk), "messageId": ids.encode("msg", attachment.message_id),
            "sentBy": "visitor" if attachment.role == "user" else "staff",
            "name": attachment.name, "contentType": attachment.content_type,
            "size": attachment.size, "sha256": attachment.sha256,
            "createdAt": format_timestamp(attachment.created_at)}


def _conversation(conversation, messages: list[Message], files: list[Attachment]) -> dict[str, Any]:
    return {
        **conversation_presenters.v1_conversation(conversation),
        "language": conversation.language or None,
        "contact": dict(conversation.contact),
        "metadata": conversation_presenters.v1_metadata(conversation),
        "consent": _consent_of(conversation),
        # The visitor's satisfaction rating and its comment (docs/widget.md, "Rating").
        "rating": ({"rating": conversation.rating, "comment": conversation.rating_comment,
                    "ratedAt": format_timestamp(conversation.rated_at)}
                   if conversation.rated_at else None),
        "messages": [conversation_presenters.v1_message(m) for m in messages],
        "attachments": [_attachment(a) for a in files],
    }


def _consent_of(conversation) -> dict[str, Any] | None:
    return conversation.consent or None


def _consent(conversation) -> dict[str, Any]:
    return {"conversationId": ids.encode("conv", conversation.pk), **_consent_of(conversation)}


def _notes(person: Person):
    """The staff's internal notes on the person's leads and conversations (one query). A note
    on another record that names the person is not theirs: docs/privacy.md, "Export"."""
    return Note.objects.filter(tenant=person.tenant, livemode=person.livemode).filter(
        Q(lead__in=person.lead_ids) | Q(conversation__in=person.conversation_ids)
    ).select_related("author").order_by("created_at", "pk")


def _note(note: Note) -> dict[str, Any]:
    author = note.author
    return {
        "leadId": ids.encode("lead", note.lead_id),
        "conversationId": ids.encode("conv", note.conversation_id),
        "author": {"id": ids.encode("user", author.pk), "name": author.display_name}
        if author is not None else None,
        "content": note.content,
        "createdAt": format_timestamp(note.created_at),
    }


def _email(email: OutboundEmail) -> dict[str, Any]:
    return {
        "kind": email.kind,
        "to": email.to,
        "subject": email.subject,
        "text": email.text_body,
        "status": email.status,
        "meetingId": ids.encode("mtg", email.meeting_id),
        "createdAt": format_timestamp(email.created_at),
        "sentAt": format_timestamp(email.sent_at) if email.sent_at else None,
    }


def _events(person: Person):
    return Event.objects.filter(tenant=person.tenant, livemode=person.livemode).filter(
        Q(lead__in=person.lead_ids) | Q(conversation_id__in=person.conversation_ids)
    ).order_by("occurred_at", "pk")


def _event(event: Event) -> dict[str, Any]:
    return {
        "id": ids.encode("evt", event.pk),
        "type": event.type,
        "description": event.description,
        "occurredAt": format_timestamp(event.occurred_at),
        "leadId": ids.encode("lead", event.lead_id),
        "conversationId": ids.encode("conv", event.conversation_id),
        "facts": event.facts,
    }
