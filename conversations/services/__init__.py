"""Every write to conversations, one module per concern:

- ``turn``: the chat turn pipeline (open, apply, close) and what it decides;
- ``capture``: the turn's steps that write leads and meetings;
- ``lifecycle``: start, end, close, idle expiry, deletion, handoff;
- ``staff``: what the tenant's people do (take over, reply, hand back);
- ``drivers``: the async drivers of a turn, whole or streamed;
- ``messages``: appending a message;
- ``meetings``: rescheduling and cancelling a booked meeting;
- ``emails``: the emails events call for, their sending and retries;
- ``team``: the team's changes that reach conversations and email (invitations, deactivation);
- ``tags``, ``notes``, ``canned``, ``reads``: the staff's inbox (tags, internal notes, canned
  replies, unread markers);
- ``proactive``: the tenant's proactive messages, and the one a visitor replies to.
- ``ratings``: the visitor's satisfaction rating of an ended conversation.

Services save their rows and emit events (``conversations.events``); what follows from an event
(counts, analytics, webhooks, live pushes) is its subscribers' work.
"""

from .canned import canned_reply_create, canned_reply_delete, canned_reply_update
from .drivers import run_turn, stream_turn
from .lifecycle import conversation_close, conversation_delete, conversations_expire_idle
from .meetings import MeetingNotChangeable, meeting_cancel, meeting_reschedule
from .notes import note_create, note_delete
from .proactive import (
    proactive_message_create,
    proactive_message_delete,
    proactive_message_shown,
    proactive_message_update,
)
from .ratings import conversation_rate
from .reads import conversation_mark_read
from .staff import (
    conversation_assign,
    conversation_hand_back,
    conversation_reply_as_human,
    conversation_take_over,
)
from .tags import (
    conversation_tag_add,
    conversation_tag_remove,
    tag_create,
    tag_delete,
    tag_update,
)
from .turn import (
    Acceptance,
    ConsentRequired,
    OpenedTurn,
    SessionNotFound,
    TurnInput,
    TurnOutcome,
    suggested_actions,
    turn_apply,
    turn_close,
    turn_open,
)

__all__ = [
    "Acceptance", "ConsentRequired", "MeetingNotChangeable", "OpenedTurn", "SessionNotFound",
    "TurnInput", "TurnOutcome", "canned_reply_create", "canned_reply_delete", "canned_reply_update",
    "conversation_assign", "conversation_close", "conversation_delete", "conversation_hand_back",
    "conversation_mark_read", "conversation_rate", "conversation_reply_as_human", "conversation_tag_add",
    "conversation_tag_remove", "conversation_take_over", "conversations_expire_idle",
    "meeting_cancel", "meeting_reschedule", "note_create", "note_delete",
    "proactive_message_create", "proactive_message_delete", "proactive_message_shown",
    "proactive_message_update", "run_turn",
    "stream_turn", "suggested_actions", "tag_create", "tag_delete", "tag_update", "turn_apply",
    "turn_close", "turn_open",
]
