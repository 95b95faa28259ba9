"""What the tenant's staff do to a conversation: take it over (or give it to someone), reply
to the visitor in person, and hand it back to the agent.

The visitor is told that a person "has joined" only when the person it is assigned to takes it
over or first replies (``Conversation.joined_at``); an assignment alone says who will reply."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from agent.interface import Handoff
from core.errors import Conflict, FieldError, InvalidRequest, NotFound
from core.models import EventType
from tenants.models import User

from ..attachments import Upload
from ..events import emit_conversation_event, message_facts
from ..models import Conversation, ConversationStatus, Message, Role
from .attachments import attachment_add, files_kept_on_success
from .lifecycle import hand_off
from .messages import append_message

MAX_HUMAN_REPLY = 4000


def _locked(conversation: Conversation) -> Conversation:
    return (Conversation.objects.select_for_update(of=("self",)).select_related("tenant")
            .get(pk=conversation.pk))


@transaction.atomic
def conversation_assign(*, conversation: Conversation, user: User) -> Conversation:
    """Gives the conversation to ``user``, a person of its tenant, who has not joined it yet.

    An active conversation is taken over (handed off to that person, with
    ``conversation.handoff``); a handed-off one changes hands; an ended one cannot be assigned.
    """
    return _assign(conversation, user, joined=False)


@transaction.atomic
def conversation_take_over(*, conversation: Conversation, user: User) -> Conversation:
    """``user`` takes the conversation themselves (the dashboard's "Take over"): assigned to
    them as by ``conversation_assign``, and joined at once."""
    return _assign(conversation, user, joined=True)


def _assign(conversation: Conversation, user: User, *, joined: bool) -> Conversation:
    current = _locked(conversation)
    if user.tenant_id != current.tenant_id or not user.is_active:
        raise NotFound("No such member of this tenant's staff.")
    if not current.is_open:
        raise Conflict("This conversation has ended.")
    now = timezone.now()
    if current.status == ConversationStatus.ACTIVE:
        hand_off(current, Handoff(reason=f"Taken over by {user.display_name}", priority="normal",
                                  suggested_team="sales"), now=now, assignee=user, joined=joined)
        current.save()
        return current
    if current.assigned_to_id != user.pk:
        current.joined_at = None  # a new person has not joined yet
    if joined and current.joined_at is None:
        current.joined_at = now
    current.assigned_to = user
    current.save()
    emit_conversation_event(current, EventType.CONVERSATION_ASSIGNED,
                            f"Conversation assigned to {user.display_name}")
    return current


@transaction.atomic
def conversation_hand_back(*, conversation: Conversation) -> Conversation:
    """Returns a handed-off conversation to the agent: ``active`` again, assigned to nobody.

    The specification names no event for this move: the service's own
    ``conversation.handed_back`` tells the open streams; the handoff record stays on the
    conversation as history.
    """
    current = _locked(conversation)
    if current.status != ConversationStatus.HANDED_OFF:
        raise Conflict("Only a handed-off conversation can be handed back to the agent.")
    current.status = ConversationStatus.ACTIVE
    current.assigned_to = None
    current.joined_at = current.handoff_notice_at = None
    current.save()
    emit_conversation_event(current, EventType.CONVERSATION_HANDED_BACK,
                            "Conversation handed back to the agent")
    return current


def conversation_reply_as_human(*, conversation: Conversation, author: User, content: str,
                                attachment: Upload | None = None) -> Message:
    """A person of the tenant answers the visitor of a handed-off conversation assigned to them,
    with text, a file (``attachment``, read and checked by ``attachments.read_upload``), or both.

    The reply is an assistant message whose ``author`` is that person; it emits ``message.sent``
    and so reaches the visitor's open widget at once. A refused reply stores no file.
    """
    with files_kept_on_success() as saved:
        return _reply(conversation=conversation, author=author, content=content,
                      attachment=attachment, saved=saved)


@transaction.atomic
def _reply(*, conversation: Conversation, author: User, content: str, attachment: Upload | None,
           saved: list[str]) -> Message:
    text = _reply_text(content, optional=attachment is not None)
    current = (Conversation.objects.select_for_update(of=("self",))
               .filter(pk=conversation.pk, tenant_id=author.tenant_id).first())
    if current is None:
        raise NotFound()
    if current.status != ConversationStatus.HANDED_OFF:
        raise Conflict("Only a handed-off conversation takes a reply from a person: take it over "
                       "first.")
    if current.assigned_to_id != author.pk:
        raise Conflict("This conversation is assigned to someone else.")
    now = timezone.now()
    message = append_message(current, role=Role.ASSISTANT, content=text, now=now, author=author)
    if attachment is not None:
        attachment_add(conversation=current, message=message, upload=attachment, saved=saved,
                       author=author)
    current.handoff_notice_at = now  # the visitor heard from a person: no notice needed soon
    fields = ["message_count", "last_message_at", "handoff_notice_at", "updated_at"]
    if current.joined_at is None:  # their first reply: they join the conversation with it
        current.joined_at = now
        fields.append("joined_at")
    current.save(update_fields=fields)
    emit_conversation_event(current, EventType.MESSAGE_SENT,
                            f"Reply by {author.display_name} in conversation {current.pk}",
                            message=message_facts(message))
    return message


def _reply_text(content: str, *, optional: bool = False) -> str:
    text = (content or "").strip()
    if not text and not optional:
        raise InvalidRequest("Write a reply first.",
                             details=[FieldError("content", "required", "This field is required.")])
    if len(text) > MAX_HUMAN_REPLY:
        raise InvalidRequest(details=[FieldError("content", "too_long",
                                                 f"At most {MAX_HUMAN_REPLY} characters.")])
    return text
