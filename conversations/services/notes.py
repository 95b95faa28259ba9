"""Internal notes of the staff on a conversation or a lead (docs/dashboard.md, "Inbox").

A note is a row of its own, never a message: nothing that shows a conversation to its visitor
(the widget, the chat APIs, the v1 and legacy conversation endpoints, webhooks, the agent's
history) reads the notes table. ``@handle`` names a teammate (``mention_handle``); each one named
is told by ``note.created``'s subscribers: a toast on their open pages, and an email when they
want one and are not online (as handoffs are)."""

from __future__ import annotations

import re
from collections.abc import Iterable

from django.db import transaction
from django.utils import timezone

from core.errors import FieldError, Forbidden, InvalidRequest
from core.events import emit
from core.models import EventType
from leads.models import Lead
from tenants.models import Tenant, User, UserRole

from ..models import Conversation, Note

MAX_NOTE = 4000
# "@ray", "@ray.rep": after a space or the start, not inside an address ("ann@acme.test").
MENTION = re.compile(r"(?<![\w@.+-])@([A-Za-z0-9][\w.+-]*)")


def mention_handle(user: User) -> str:
    """How a note names ``user``: the part of their email address before the ``@``, in lower
    case ("ray" for ray@acme.test)."""
    return (user.email or user.username).split("@", 1)[0].lower()


def mentioned(text: str, team: Iterable[User]) -> list[User]:
    """The members of ``team`` whose handle ``text`` names, in the team's order."""
    handles = {m.group(1).rstrip(".+-").lower() for m in MENTION.finditer(text)}
    return [user for user in team if mention_handle(user) in handles]


def _text(content: str) -> str:
    text = (content or "").strip()
    if not text:
        raise InvalidRequest("Write the note first.",
                             details=[FieldError("content", "required", "This field is required.")])
    if len(text) > MAX_NOTE:
        raise InvalidRequest(details=[FieldError("content", "too_long",
                                                 f"At most {MAX_NOTE:,} characters.")])
    return text


@transaction.atomic
def note_create(*, tenant: Tenant, livemode: bool, author: User, content: str,
                conversation: Conversation | None = None, lead: Lead | None = None) -> Note:
    """A note by ``author`` (a person of the tenant) on ``conversation`` or on ``lead`` (exactly
    one, of this tenant and mode). Emits ``note.created`` with ids only: the note's words stay
    in the note."""
    text = _text(content)
    subject = conversation if conversation is not None else lead
    if (conversation is None) == (lead is None):
        raise ValueError("A note is on a conversation or on a lead.")
    if (subject.tenant_id != tenant.pk or subject.livemode != livemode
            or author.tenant_id != tenant.pk):
        raise Forbidden("A note is written by the tenant's staff on the tenant's records.")
    team = User.objects.filter(tenant=tenant, is_active=True).order_by("date_joined", "id")
    mentions = [u for u in mentioned(text, team) if u.pk != author.pk]
    note = Note.objects.create(
        tenant=tenant, livemode=livemode, conversation=conversation, lead=lead, author=author,
        content=text, mentions=[str(u.pk) for u in mentions], created_at=timezone.now())
    where = "a conversation" if conversation is not None else "a lead"
    names = ", ".join(u.display_name for u in mentions)
    emit(EventType.NOTE_CREATED, tenant_id=tenant.pk, livemode=livemode,
         lead_id=lead.pk if lead is not None else conversation.lead_id,
         conversation_id=conversation.pk if conversation is not None else None,
         description=f"{author.display_name} wrote a note on {where}"
                     + (f", mentioning {names}" if names else ""),
         facts={"note": {"id": str(note.pk), "author_id": str(author.pk),
                         "conversation_id": str(conversation.pk) if conversation else None,
                         "lead_id": str(lead.pk) if lead else None,
                         "mentions": note.mentions}})
    return note


@transaction.atomic
def note_delete(*, note: Note, by: User | None) -> None:
    """Deletes ``note``: its author may, and a manager (or the admin token, ``by`` None)."""
    if by is not None and by.pk != note.author_id and by.role != UserRole.MANAGER:
        raise Forbidden("Only its author or a manager can delete a note.")
    note.delete()
