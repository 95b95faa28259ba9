"""Every write to conversations, one module per concern:

- ``turn``: the chat turn pipeline (open, apply, close) and what it decides;
- ``capture``: the turn's steps that write leads and meetings;
- ``lifecycle``: start, end, close, idle expiry, deletion, handoff;
- ``staff``: what the tenant's people do (take over, reply, hand back);
- ``drivers``: the async drivers of a turn, whole or streamed;
- ``messages``: appending a message;
- ``meetings``: rescheduling and cancelling a booked meeting;
- ``emails``: the emails events call for, their sending and retries;
- ``team``: the team's changes that reach conversations and email (invitations, deactivation).

Services save their rows and emit events (``conversations.events``); what follows from an event
(counts, analytics, webhooks, live pushes) is its subscribers' work.
"""

from .drivers import run_turn, stream_turn
from .lifecycle import conversation_close, conversation_delete, conversations_expire_idle
from .meetings import MeetingNotChangeable, meeting_cancel, meeting_reschedule
from .staff import (
    conversation_assign,
    conversation_hand_back,
    conversation_reply_as_human,
    conversation_take_over,
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
    "TurnInput", "TurnOutcome",
    "conversation_assign", "conversation_close", "conversation_delete", "conversation_hand_back",
    "conversation_reply_as_human", "conversation_take_over", "conversations_expire_idle",
    "meeting_cancel",
    "meeting_reschedule", "run_turn", "stream_turn",
    "suggested_actions", "turn_apply", "turn_close", "turn_open",
]
