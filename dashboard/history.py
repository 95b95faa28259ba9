"""A lead's history as the staff read it: one line per thing that happened to the lead (created,
scored and why, qualified, a meeting booked for a local time, handed off to a person, status
changes, ...), built from the lead's events (``docs/events.md``: facts in stored vocabulary).

Pure presentation over rows already read: ``lead_history`` runs no query. The page reads the
events (one query) and the names of the people they mention (``people``, one more), so the
history costs the same whatever its length. No id is shown: a line links to its conversation or
to its meeting on the lead's page instead.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from django.urls import reverse
from django.utils.dateformat import format as date_format

from core.models import EventType
from core.timestamps import parse_timestamp
from leads.vocabulary import LeadSource, LeadStatus, v1_status

Row = dict[str, Any]

STATUS_LABELS = dict(LeadStatus.choices)
SOURCE_LABELS = dict(LeadSource.choices)
# A lead.updated's ``previous`` always holds these; they are no change anyone made.
_BOOKKEEPING = {"updated_at", "last_active_at"}
# Shown on lines of their own, or (the agent's reading of the last message) not at all.
_OWN_LINES = {"status", "score", "assigned_to_id", "last_intent"}
ENDINGS = {
    "closed_by_staff": "Conversation closed by the staff",
    "closed_by_api": "Conversation closed through the API",
    "visitor_left": "Conversation ended: the visitor said goodbye",
    "expired": "Conversation ended: no message for a while",
}
CANCELLED_BY = {"visitor": "the visitor", "staff": "the staff"}


@dataclass
class Entry:
    """One line of the history: when, what (``text``), why (``details``), where to look."""

    at: datetime
    kind: str  # for the page's styling: created, status, score, qualified, meeting, conversation
    text: str
    details: list[str] = field(default_factory=list)
    link: tuple[str, str] | None = None  # (href, label)


@dataclass
class _Context:
    names: dict[uuid.UUID, str]
    # The reasons behind the last score seen, to tell which reasons a new score added.
    reasons: list[Row] = field(default_factory=list)
    created_in: set[uuid.UUID] = field(default_factory=set)

    def name(self, user_id: Any, nobody: str = "nobody") -> str:
        if not user_id:
            return nobody
        return self.names.get(uuid.UUID(str(user_id)), "a former member of the staff")


def people(events: Iterable[Row]) -> set[uuid.UUID]:
    """The staff the events name (who a conversation went to, a meeting's host, a lead's
    assignee), for one read of their names."""
    found = set()
    for event in events:
        facts = event["facts"]
        if facts.get("previous_assigned_to_id"):
            found.add(uuid.UUID(str(facts["previous_assigned_to_id"])))
        for key, snapshot in (("assigned_to_id", facts.get("conversation")),
                              ("host_id", facts.get("meeting")),
                              ("assigned_to_id", facts.get("lead"))):
            if isinstance(snapshot, dict) and snapshot.get(key):
                found.add(uuid.UUID(str(snapshot[key])))
    return found


def lead_history(events: list[Row], *, names: dict[uuid.UUID, str]) -> list[Entry]:
    """``events`` (newest first, as ``analytics.selectors.lead_events`` reads them) as lines,
    newest first. Read oldest first, so that a score's line names the reasons it added."""
    context = _Context(names=names)
    context.created_in = {event["conversation_id"] for event in events
                          if event["type"] == EventType.LEAD_CREATED and event["conversation_id"]}
    entries: list[Entry] = []
    for event in reversed(events):
        entries += BUILDERS[event["type"]](event, context)
    entries.reverse()
    return entries


# --- links and words -------------------------------------------------------------------------

def _conversation_link(event: Row) -> tuple[str, str] | None:
    if not event["conversation_id"]:
        return None
    return reverse("dashboard:conversation", args=[event["conversation_id"]]), "the conversation"


def _meeting_link(meeting: Row) -> tuple[str, str]:
    return f"#meeting-{meeting['id']}", "the meeting"


def _local_time(moment: str | None, zone: str | None) -> str:
    """A stored timestamp in the meeting's time zone, as the visitor and the host read it."""
    start = parse_timestamp(moment)
    if start is None:
        return "an unknown time"
    try:
        tz = ZoneInfo(zone or "UTC")
    except (ZoneInfoNotFoundError, ValueError):
        tz, zone = ZoneInfo("UTC"), "UTC"
    return f"{date_format(start.astimezone(tz), 'D j M, H:i')} ({zone or 'UTC'})"


def _status(stored: str | None) -> str:
    return STATUS_LABELS.get(stored or "", stored or "none")


def _move(previous: str | None, now: str) -> str:
    return f"{_status(previous)} → {_status(now)}" if previous else _status(now)


def _reached_milestone(previous: str, now: str) -> bool:
    """Whether this status change also emitted lead.qualified or lead.converted (which then
    tell it, with their reason)."""
    reached = v1_status(now)
    return reached in ("qualified", "converted") and v1_status(previous) != reached


def _reason_lines(reasons: list[Row]) -> list[str]:
    return [f"+{r.get('points', 0)} {r.get('reason') or r.get('signal', '')}" for r in reasons]


# --- one builder per event type ----------------------------------------------------------------

def _created(event: Row, context: _Context) -> list[Entry]:
    lead = event["facts"]["lead"]
    source = SOURCE_LABELS.get(lead.get("source"), lead.get("source"))
    details = [] if lead.get("status") in (None, LeadStatus.NEW) else [
        f"Status: {_status(lead['status'])}"]
    text = f"Created (source: {source})"
    return [Entry(event["occurred_at"], "created", text, details, _conversation_link(event))]


def _updated(event: Row, context: _Context) -> list[Entry]:
    facts, at = event["facts"], event["occurred_at"]
    lead, previous = facts["lead"], facts["previous"]
    entries = []
    if "status" in previous and not _reached_milestone(previous["status"], lead["status"]):
        reason = facts.get("reason")
        entries.append(Entry(at, "status", f"Status: {_move(previous['status'], lead['status'])}",
                             [reason] if reason else []))
    if "score" in previous:
        entries.append(_scored(at, previous["score"], lead["score"], facts.get("score_reasons"),
                               context))
    if "assigned_to_id" in previous:
        who = context.name(lead.get("assigned_to_id"), nobody="")
        entries.append(Entry(at, "status", f"Assigned to {who}" if who else "No longer assigned"))
    if "email" in (facts.get("corrected") or []):
        # The address it replaced was never kept (leads.services.lead_email_correct).
        by = " by the visitor" if event["conversation_id"] else ""
        entries.append(Entry(at, "status", f"Email address corrected{by}", [],
                             _conversation_link(event)))
    others = sorted(set(previous) - _BOOKKEEPING - _OWN_LINES)
    if others:
        entries.append(Entry(at, "status", "Details changed: " + ", ".join(
            name.replace("_", " ") for name in others)))
    return entries


def _scored(at: datetime, before: int, after: int, reasons: list[Row] | None,
            context: _Context) -> Entry:
    """``Scored 35 → 60``, with the reasons the new score added (all of them when it fell or
    when none is new); a score set without reasons (the API's) has none to show."""
    details: list[str] = []
    if reasons is not None:
        known = {r.get("signal") for r in context.reasons}
        added = [r for r in reasons if r.get("signal") not in known]
        details = _reason_lines(added if after > before and added else reasons)
        context.reasons = reasons
    return Entry(at, "score", f"Scored {before} → {after}", details)


def _qualified(event: Row, context: _Context) -> list[Entry]:
    facts = event["facts"]
    reason = facts.get("reason")
    text = f"Qualified: {_move(facts.get('previous_status'), facts['lead']['status'])}"
    return [Entry(event["occurred_at"], "qualified", text, [reason] if reason else [])]


def _converted(event: Row, context: _Context) -> list[Entry]:
    facts = event["facts"]
    text = f"Converted (closed-won): {_move(facts.get('previous_status'), facts['lead']['status'])}"
    return [Entry(event["occurred_at"], "qualified", text)]


def _high_value(event: Row, context: _Context) -> list[Entry]:
    facts = event["facts"]
    intent = str(facts.get("intent", "")).replace("_", " ")
    confidence = round(float(facts.get("confidence") or 0) * 100)
    signals = ", ".join(str(s).replace("_", " ") for s in facts.get("signals") or [])
    return [Entry(event["occurred_at"], "score", f"High-value intent: {intent} ({confidence}% sure)",
                  [f"Signals: {signals}"] if signals else [], _conversation_link(event))]


def _booked(event: Row, context: _Context) -> list[Entry]:
    meeting = event["facts"]["meeting"]
    when = _local_time(meeting.get("starts_at"), meeting.get("time_zone"))
    host = context.name(meeting.get("host_id"), nobody="")
    text = f"Meeting booked for {when}" + (f" with {host}" if host else "")
    return [Entry(event["occurred_at"], "meeting", text, [], _meeting_link(meeting))]


def _rescheduled(event: Row, context: _Context) -> list[Entry]:
    facts = event["facts"]
    meeting, zone = facts["meeting"], facts["meeting"].get("time_zone")
    before = (facts.get("previous") or {}).get("starts_at")
    details = [f"Was {_local_time(before, zone)}"] if before else []
    return [Entry(event["occurred_at"], "meeting",
                  f"Meeting moved to {_local_time(meeting.get('starts_at'), zone)}", details,
                  _meeting_link(meeting))]


def _cancelled(event: Row, context: _Context) -> list[Entry]:
    meeting = event["facts"]["meeting"]
    when = _local_time(meeting.get("starts_at"), meeting.get("time_zone"))
    who = CANCELLED_BY.get(meeting.get("cancelled_by") or "", "")
    return [Entry(event["occurred_at"], "meeting",
                  f"Meeting of {when} cancelled" + (f" by {who}" if who else ""), [],
                  _meeting_link(meeting))]


def _handoff(event: Row, context: _Context) -> list[Entry]:
    facts = event["facts"]
    handoff = facts.get("handoff") or {}
    who = context.name(facts["conversation"].get("assigned_to_id"), nobody="")
    text = f"Handed off to {who}" if who else "Handed off: waiting for a person"
    details = [d for d in (handoff.get("reason"),
                           f"Priority {handoff['priority']}" if handoff.get("priority") else "") if d]
    return [Entry(event["occurred_at"], "conversation", text, details, _conversation_link(event))]


def _assigned(event: Row, context: _Context) -> list[Entry]:
    facts = event["facts"]
    who = context.name(facts["conversation"].get("assigned_to_id"), nobody="")
    details = []
    if facts.get("reason") == "member_deactivated":
        leaving = context.name(facts.get("previous_assigned_to_id"))
        by = (facts.get("actor") or {}).get("name") or "a manager"
        details.append(f"{leaving} was deactivated by {by}")
        text = (f"Conversation reassigned to {who}" if who else
                "Conversation back in the Unassigned queue: nobody available")
    else:
        text = f"Conversation assigned to {who or 'nobody'}"
    return [Entry(event["occurred_at"], "conversation", text, details,
                  _conversation_link(event))]


def _handed_back(event: Row, context: _Context) -> list[Entry]:
    return [Entry(event["occurred_at"], "conversation", "Handed back to the agent", [],
                  _conversation_link(event))]


def _completed(event: Row, context: _Context) -> list[Entry]:
    reason = event["facts"].get("reason") or ""
    text = ENDINGS.get(reason, "Conversation closed")
    return [Entry(event["occurred_at"], "conversation", text, [], _conversation_link(event))]


def _linked(event: Row, context: _Context) -> list[Entry]:
    if event["conversation_id"] in context.created_in:
        return []  # the conversation that captured the lead: its creation line links it
    return [Entry(event["occurred_at"], "conversation", "Came back in a new conversation", [],
                  _conversation_link(event))]


BUILDERS: dict[str, Callable[[Row, _Context], list[Entry]]] = {
    EventType.LEAD_CREATED: _created,
    EventType.LEAD_UPDATED: _updated,
    EventType.LEAD_QUALIFIED: _qualified,
    EventType.LEAD_CONVERTED: _converted,
    EventType.INTENT_HIGH_VALUE: _high_value,
    EventType.MEETING_BOOKED: _booked,
    EventType.MEETING_RESCHEDULED: _rescheduled,
    EventType.MEETING_CANCELLED: _cancelled,
    EventType.CONVERSATION_HANDOFF: _handoff,
    EventType.CONVERSATION_ASSIGNED: _assigned,
    EventType.CONVERSATION_HANDED_BACK: _handed_back,
    EventType.CONVERSATION_COMPLETED: _completed,
    EventType.CONVERSATION_LEAD_LINKED: _linked,
}
# The events the history shows. Messages are the transcript's (one click away); the score's
# ``lead.score_changed`` and ``conversion.completed`` repeat what ``lead.updated`` and
# ``lead.converted`` already say.
HISTORY_TYPES = tuple(BUILDERS)
