"""The visitor's satisfaction rating of a conversation that ended (docs/widget.md, "Rating")."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from core.errors import Conflict

from ..models import Conversation, ConversationStatus, Rating

RATING_COMMENT_CHARS = 1000
RATED_STATUSES = (ConversationStatus.CLOSED, ConversationStatus.EXPIRED)


class RatingNotAsked(Conflict):
    default_message = "This chat does not ask its visitors for a rating."


class ConversationStillOpen(Conflict):
    default_message = "The conversation has not ended: it can be rated once it is closed."


@transaction.atomic
def conversation_rate(*, conversation: Conversation, rating: str, comment: str = "",
                      asked: bool) -> Conversation:
    """Stores the visitor's rating (``good`` or ``bad``) and optional comment of an ended
    conversation; one per conversation, a later one replaces it (the widget sends the tap, then
    the tap with the comment). ``asked``: the tenant's widget asks for ratings."""
    if not asked:
        raise RatingNotAsked()
    current = Conversation.objects.select_for_update(of=("self",)).get(pk=conversation.pk)
    if current.status not in RATED_STATUSES:
        raise ConversationStillOpen()
    current.rating = Rating(rating)
    current.rating_comment = comment.strip()[:RATING_COMMENT_CHARS]
    current.rated_at = timezone.now()
    current.save(update_fields=["rating", "rating_comment", "rated_at", "updated_at"])
    return current
