"""How far each person of the staff has read each conversation: the list's unread markers
(docs/dashboard.md, "Inbox").

A marker is the person's own bookkeeping, not a fact of the conversation: it emits no event
(as a presence connection does not), and it is deleted with the conversation or the person."""

from __future__ import annotations

from django.utils import timezone

from tenants.models import User

from ..models import Conversation, ConversationRead


def conversation_mark_read(*, conversation: Conversation, user: User,
                           seen_count: int | None = None) -> None:
    """``user`` has seen the conversation's messages up to ``seen_count`` (default: all it has
    now): one UPDATE, and an INSERT the first time. A marker never moves back (a page loaded
    earlier that reports late)."""
    count = conversation.message_count if seen_count is None else seen_count
    count = max(0, min(count, conversation.message_count))
    now = timezone.now()
    updated = (ConversationRead.objects
               .filter(conversation=conversation, user=user, seen_count__lte=count)
               .update(seen_count=count, seen_at=now))
    if updated == 0:
        ConversationRead.objects.bulk_create(
            [ConversationRead(conversation=conversation, user=user, seen_count=count, seen_at=now)],
            ignore_conflicts=True)
