"""The analytics rollups (``VisitorDay``, ``ChannelDailyStat``, ``LeadDailyStat``,
``LeadJourney``), kept exact by in-transaction subscribers of the lead and conversation events:
a write and its counts commit or roll back together (``AnalyticsConfig.ready`` lists which
event moves what). ``analytics.rebuild`` recomputes everything from the raw rows, for data written around the
services (bulk loads, repairs); a test holds the subscribers and the rebuild to the same numbers
(docs/analytics.md, "Rollups").
"""

from __future__ import annotations

import uuid
import zlib
from collections import Counter, defaultdict
from datetime import UTC, date, datetime, timedelta
from typing import Any, NamedTuple

from django.db.models import Count, DurationField, ExpressionWrapper, F, OuterRef, Subquery, Sum

from conversations.models import Conversation, Message
from core.models import Event, EventType
from core.sql import add_to_counter_row, add_to_counters
from core.timestamps import parse_timestamp
from leads.models import Lead
from leads.vocabulary import v1_status

from .models import ROLLUP_SHARDS, ChannelDailyStat, LeadDailyStat, LeadJourney, VisitorDay

CHANNEL_COUNTERS = ("uncaptured_visitors", "uncaptured_engaged", "conversations", "converted",
                    "handed_off", "messages", "responses", "response_us")
LEAD_COUNTERS = ("created", "score_sum", "reached", "cohort_qualified", "cohort_booked",
                 "cohort_converted", "qualified", "booked", "converted")
VISITOR_COUNTERS = ("loads", "chats", "leads")
CHANNEL_KEY = ("tenant", "livemode", "day", "channel", "shard")
LEAD_KEY = ("tenant", "livemode", "day", "source", "channel", "shard")
STAGES = ("qualified", "booked", "converted")

Key = tuple[Any, ...]
Deltas = dict[Key, Counter]


def utc_day(moment: datetime) -> date:
    return moment.astimezone(UTC).date()


def shard_of(pk: uuid.UUID) -> int:
    return pk.int % ROLLUP_SHARDS


def _bump_channels(deltas: Deltas) -> None:
    add_to_counters(ChannelDailyStat, key=CHANNEL_KEY, counters=CHANNEL_COUNTERS, deltas=deltas)


def _bump_leads(deltas: Deltas) -> None:
    add_to_counters(LeadDailyStat, key=LEAD_KEY, counters=LEAD_COUNTERS, deltas=deltas)


# --- visitor-days ---------------------------------------------------------------------------

class VisitorCounts(NamedTuple):
    loads: int
    chats: int
    leads: int


def uncaptured(counts: VisitorCounts) -> Counter:
    """What a visitor-day adds to ``ChannelDailyStat``: one visitor (engaged if it chatted)
    when it produced no lead; one that did is counted as its leads, in ``LeadDailyStat``."""
    if counts.leads > 0:
        return Counter()
    return Counter(uncaptured_visitors=int(counts.loads > 0 or counts.chats > 0),
                   uncaptured_engaged=int(counts.chats > 0))


def _visitor_day_add(tenant_id: uuid.UUID, livemode: bool, day: date, channel: str,
                     visitor_id: str, *, at: datetime, **change: int,
                     ) -> tuple[VisitorCounts, Counter]:
    """Adds ``change`` to the visitor-day's counters (the row is created at need and stays
    locked until the commit). Its counters after the change, and the change of what it adds
    to ``ChannelDailyStat``."""
    after = VisitorCounts(**add_to_counter_row(
        VisitorDay, key={"tenant": tenant_id, "livemode": livemode, "day": day,
                         "channel": channel, "visitor_id": visitor_id},
        counters=VISITOR_COUNTERS, change=change, insert={"first_seen_at": at}))
    before = VisitorCounts(*(value - change.get(name, 0)
                             for name, value in zip(VISITOR_COUNTERS, after, strict=True)))
    moved = uncaptured(after)
    moved.subtract(uncaptured(before))
    return after, moved


def widget_loaded(*, tenant_id: uuid.UUID, livemode: bool, channel: str, visitor_id: str,
                  at: datetime) -> bool:
    """A widget load of the visitor (``analytics.services.record_widget_visit``); True for the
    day's first on that channel."""
    day = utc_day(at)
    after, moved = _visitor_day_add(tenant_id, livemode, day, channel, visitor_id, at=at, loads=1)
    shard = zlib.crc32(visitor_id.encode()) % ROLLUP_SHARDS
    _bump_channels({(tenant_id, livemode, day, channel, shard): moved})
    return after.loads == 1


# --- conversations --------------------------------------------------------------------------

def _conversation_key(event: Event) -> Key:
    """The row a conversation counts in: the UTC day it started, its channel, its shard."""
    conversation = event.facts["conversation"]
    return (event.tenant_id, event.livemode, utc_day(parse_timestamp(conversation["started_at"])),
            conversation["channel"], shard_of(uuid.UUID(conversation["id"])))


def _response_us(event: Event) -> int | None:
    """How long the agent took to answer, if the event's message is an agent reply directly
    after a visitor message; None otherwise. A person's reply (``author``) is not the agent's."""
    message = event.facts["message"]
    if message["role"] != "assistant" or message["author_id"] or message["sequence"] == 0:
        return None
    previous = event.facts.get("previous_message")
    if previous is None:
        row = (Message.objects.filter(conversation_id=event.conversation_id,
                                      sequence=message["sequence"] - 1)
               .values_list("role", "created_at").first())
        previous = row and {"role": row[0], "created_at": row[1].isoformat()}
    if not previous or previous["role"] != "user":
        return None
    delay = parse_timestamp(message["created_at"]) - parse_timestamp(previous["created_at"])
    return max(0, delay // timedelta(microseconds=1))


def _visitor_chats(event: Event, change: int) -> Counter:
    """The conversation's visitor started (or, ``change`` -1, no longer started) a chat on
    the conversation's day and channel."""
    conversation = event.facts["conversation"]
    started_at = parse_timestamp(conversation["started_at"])
    _, moved = _visitor_day_add(event.tenant_id, event.livemode, utc_day(started_at),
                                conversation["channel"], conversation["visitor_id"],
                                at=started_at, chats=change)
    return moved


def message_stored(event: Event) -> None:
    """message.received, message.sent: a message was appended; the first starts the
    conversation (and makes its visitor engaged that day)."""
    conversation, message = event.facts["conversation"], event.facts["message"]
    counts = Counter(messages=1)
    if message["sequence"] == 0:
        counts.update(conversations=1, converted=int(conversation["lead_id"] is not None),
                      handed_off=int(conversation["has_handoff"]))
        counts.update(_visitor_chats(event, 1))
    delay = _response_us(event)
    if delay is not None:
        counts.update(responses=1, response_us=delay)
    _bump_channels({_conversation_key(event): counts})


def conversation_linked(event: Event) -> None:
    """conversation.lead_linked: the conversation produced (or found) its lead."""
    _bump_channels({_conversation_key(event): Counter(converted=1)})


def conversation_handed_off(event: Event) -> None:
    """conversation.handoff: counted once, at the conversation's first handoff."""
    if event.facts["first_handoff"]:
        _bump_channels({_conversation_key(event): Counter(handed_off=1)})


def conversation_deleted(event: Event) -> None:
    """conversation.deleted: takes back everything the conversation contributed."""
    conversation = event.facts["conversation"]
    found = replies(Message.objects.filter(conversation_id=event.conversation_id)).aggregate(
        n=Count("pk"), total=Sum("delay"))
    counts = Counter(
        conversations=-1, converted=-int(conversation["lead_id"] is not None),
        handed_off=-int(conversation["has_handoff"]), messages=-conversation["message_count"],
        responses=-found["n"], response_us=-microseconds(found["total"]),
    )
    counts.update(_visitor_chats(event, -1))
    _bump_channels({_conversation_key(event): counts})
    _uncapture(event.conversation_id)


def replies(messages):
    """Agent replies that directly follow a visitor message, annotated with their ``delay``."""
    previous = Message.objects.filter(conversation_id=OuterRef("conversation_id"),
                                      sequence=OuterRef("sequence") - 1)
    return (messages.filter(role="assistant", author__isnull=True)
            .annotate(previous_role=Subquery(previous.values("role")[:1]),
                      previous_at=Subquery(previous.values("created_at")[:1]))
            .filter(previous_role="user")
            .annotate(delay=ExpressionWrapper(F("created_at") - F("previous_at"),
                                              output_field=DurationField())))


def microseconds(total: Any) -> int:
    """A summed duration in microseconds (a timedelta; some backends give the integer)."""
    if total is None:
        return 0
    if isinstance(total, int | float):
        return int(total)
    return total // timedelta(microseconds=1)


# --- leads ----------------------------------------------------------------------------------

class LeadState(NamedTuple):
    """What a lead's contribution to ``LeadDailyStat`` depends on, besides its journey."""

    pk: uuid.UUID
    tenant_id: uuid.UUID
    livemode: bool
    created_at: datetime
    status: str
    score: int
    source: str

    @classmethod
    def of(cls, event: Event, facts: dict[str, Any]) -> LeadState:
        return cls(uuid.UUID(facts["id"]), event.tenant_id, event.livemode,
                   parse_timestamp(facts["created_at"]), facts["status"], facts["score"],
                   facts["source"])

    @classmethod
    def of_lead(cls, lead: Lead) -> LeadState:
        return cls(lead.pk, lead.tenant_id, lead.livemode, lead.created_at, lead.status,
                   lead.score, lead.source)


def depth(journey: LeadJourney | None) -> int:
    """How far down the funnel the lead has gone: 0 (captured) to 3 (converted). A stage
    reached implies the earlier ones, recorded or not (converted without a meeting: booked)."""
    if journey is None:
        return 0
    reached = [journey.qualified_at, journey.booked_at, journey.converted_at]
    return max((index + 1 for index, moment in enumerate(reached) if moment), default=0)


def _contribution(lead: LeadState, journey: LeadJourney | None) -> Deltas:
    """What one lead adds to ``LeadDailyStat``, given its state and journey."""
    channel = journey.channel if journey else ""
    base = (lead.tenant_id, lead.livemode)
    out: Deltas = defaultdict(Counter)
    reached = bool(journey and journey.qualified_at) or lead.status == "converted"
    gone = depth(journey)
    out[(*base, utc_day(lead.created_at), lead.source, channel, shard_of(lead.pk))].update(
        created=1, score_sum=lead.score, reached=int(reached),
        **{f"cohort_{stage}": int(gone > index) for index, stage in enumerate(STAGES)})
    for stage in STAGES if journey else ():
        moment = getattr(journey, f"{stage}_at")
        if moment is not None:
            out[(*base, utc_day(moment), lead.source, channel, shard_of(lead.pk))][stage] += 1
    return out


def _difference(after: Deltas, before: Deltas) -> Deltas:
    deltas: Deltas = defaultdict(Counter)
    for key, counts in after.items():
        deltas[key].update(counts)
    for key, counts in before.items():
        deltas[key].subtract(counts)
    return deltas


def _journey(lead_id: uuid.UUID) -> LeadJourney | None:
    return LeadJourney.objects.filter(lead_id=lead_id).first()


def _copy(journey: LeadJourney | None, lead_id: uuid.UUID) -> LeadJourney:
    if journey is None:
        return LeadJourney(lead_id=lead_id)
    return LeadJourney(lead_id=journey.lead_id, channel=journey.channel,
                       visitor_id=journey.visitor_id, qualified_at=journey.qualified_at,
                       booked_at=journey.booked_at, converted_at=journey.converted_at)


def _save(journey: LeadJourney, *, existed: bool) -> None:
    if existed:
        journey.save()
    elif journey.channel or journey.qualified_at or journey.booked_at or journey.converted_at:
        journey.save(force_insert=True)


def _reach_stages(journey: LeadJourney, *, status: str, previous_status: str | None,
                  at: datetime) -> None:
    """Marks the stages the status change reached for the first time (the moments the lead
    services emit ``lead.qualified`` and ``lead.converted``)."""
    shown = v1_status(status)
    if previous_status is not None and v1_status(previous_status) == shown:
        return
    if shown == "qualified" and journey.qualified_at is None:
        journey.qualified_at = at
    if shown == "converted" and journey.converted_at is None:
        journey.converted_at = at


def _capture(conversation_id: uuid.UUID | None) -> tuple[str, str]:
    """The channel and visitor of the conversation that captured a lead; blank for none."""
    if conversation_id is None:
        return "", ""
    return (Conversation.objects.filter(pk=conversation_id)
            .values_list("channel", "visitor_id").first() or ("", ""))


def _visitor_leads(lead: LeadState, journey: LeadJourney | None, change: int) -> None:
    """The lead's capturing visitor-day produced (``change`` -1: no longer has) the lead."""
    if journey is None or not journey.channel:
        return
    day = utc_day(lead.created_at)
    _, moved = _visitor_day_add(lead.tenant_id, lead.livemode, day, journey.channel,
                                journey.visitor_id, at=lead.created_at, leads=change)
    _bump_channels({(lead.tenant_id, lead.livemode, day, journey.channel, shard_of(lead.pk)): moved})


def lead_created(event: Event) -> None:
    """lead.created, perhaps by a conversation (whose channel and visitor captured the lead)."""
    lead = LeadState.of(event, event.facts["lead"])
    channel, visitor_id = _capture(event.conversation_id)
    journey = LeadJourney(lead_id=lead.pk, channel=channel, visitor_id=visitor_id)
    _reach_stages(journey, status=lead.status, previous_status=None, at=lead.created_at)
    _save(journey, existed=False)
    _bump_leads(_contribution(lead, journey))
    _visitor_leads(lead, journey, 1)


def lead_changed(event: Event) -> None:
    """lead.updated: its status, score or source may have moved its contributions."""
    previous = event.facts["previous"]
    if not previous.keys() & {"status", "score", "source"}:
        return
    after = LeadState.of(event, event.facts["lead"])
    before = LeadState.of(event, {**event.facts["lead"], **previous})
    stored = _journey(after.pk)
    journey = _copy(stored, after.pk)
    _reach_stages(journey, status=after.status, previous_status=before.status,
                  at=event.occurred_at)
    _save(journey, existed=stored is not None)
    _bump_leads(_difference(_contribution(after, journey), _contribution(before, stored)))


def lead_deleted(event: Event) -> None:
    """lead.deleted (emitted before the delete): takes back everything the lead contributed,
    and the lead of its conversations, which the database unlinks."""
    lead = LeadState.of(event, event.facts["lead"])
    journey = _journey(lead.pk)
    _bump_leads(_difference({}, _contribution(lead, journey)))
    _visitor_leads(lead, journey, -1)
    deltas: Deltas = defaultdict(Counter)
    linked = (Conversation.objects.filter(lead_id=lead.pk)
              .values_list("pk", "started_at", "channel"))
    for pk, started_at, channel in linked:
        deltas[(lead.tenant_id, lead.livemode, utc_day(started_at), channel,
                shard_of(pk))]["converted"] -= 1
    _bump_channels(deltas)


def _uncapture(conversation_id: uuid.UUID) -> None:
    """The leads a deleted conversation captured no longer have a capture channel or visitor,
    as if created outside a conversation (the rebuild finds no conversation to name them)."""
    captured = Event.objects.filter(conversation_id=conversation_id, type=EventType.LEAD_CREATED,
                                    lead__isnull=False).values("lead_id")
    for stored in (LeadJourney.objects.filter(lead_id__in=captured, channel__gt="")
                   .select_related("lead")):
        lead = LeadState.of_lead(stored.lead)
        journey = _copy(stored, lead.pk)
        journey.channel, journey.visitor_id = "", ""
        _bump_leads(_difference(_contribution(lead, journey), _contribution(lead, stored)))
        _visitor_leads(lead, stored, -1)
        _save(journey, existed=True)


def meeting_booked(event: Event) -> None:
    """meeting.booked: the lead's first meeting is its Demo Booked stage."""
    lead = LeadState.of(event, event.facts["lead"])
    stored = _journey(lead.pk)
    if stored is not None and stored.booked_at is not None:
        return
    journey = _copy(stored, lead.pk)
    journey.booked_at = parse_timestamp(event.facts["meeting"]["created_at"])
    _save(journey, existed=stored is not None)
    _bump_leads(_difference(_contribution(lead, journey), _contribution(lead, stored)))


# Which event moves what (registered by ``AnalyticsConfig.ready``).
SUBSCRIBERS = (
    (message_stored, (EventType.MESSAGE_RECEIVED, EventType.MESSAGE_SENT)),
    (conversation_linked, (EventType.CONVERSATION_LEAD_LINKED,)),
    (conversation_handed_off, (EventType.CONVERSATION_HANDOFF,)),
    (conversation_deleted, (EventType.CONVERSATION_DELETED,)),
    (lead_created, (EventType.LEAD_CREATED,)),
    (lead_changed, (EventType.LEAD_UPDATED,)),
    (lead_deleted, (EventType.LEAD_DELETED,)),
    (meeting_booked, (EventType.MEETING_BOOKED,)),
)
