"""The analytics rollups (``ChannelDailyStat``, ``LeadDailyStat``, ``LeadJourney``), kept exact.

The lead, conversation and widget services call the hooks below inside their own transactions,
after their other writes, so that a write and its counts commit or roll back together and the
counter rows are the last locks a transaction takes. ``rollups_rebuild`` recomputes everything
from the raw rows, for data written around the services (bulk loads, repairs); a test holds the
hooks and the rebuild to the same numbers (docs/analytics.md, "Rollups").

Writers that add a path of their own (a person's reply in a handed-off conversation, another
way to book a meeting) call the same hooks: ``message_stored`` for every stored message,
``conversation_changed`` when a conversation gains a lead or is handed off, ``meeting_booked``
for every meeting.
"""

from __future__ import annotations

import uuid
from collections import Counter, defaultdict
from datetime import UTC, date, datetime, timedelta
from typing import Any

from django.db import connection, transaction
from django.db.models import (
    Count,
    DurationField,
    ExpressionWrapper,
    F,
    Min,
    OuterRef,
    Q,
    Subquery,
    Sum,
    Value,
)
from django.db.models.functions import Coalesce, TruncDate

from tenants.models import Tenant

from .models import (
    ROLLUP_SHARDS,
    ChannelDailyStat,
    Event,
    EventType,
    LeadDailyStat,
    LeadJourney,
    WidgetVisit,
)

# Stored statuses that the v1 surface shows as qualified / converted (leads.vocabulary).
_V1_QUALIFIED = frozenset({"qualified", "booked"})
_CONVERTED = "converted"

_CHANNEL_COUNTERS = ("visitors", "conversations", "converted", "handed_off", "messages",
                     "responses", "response_us")
_LEAD_COUNTERS = ("created", "score_sum", "reached", "qualified", "booked", "converted")

Key = tuple[Any, ...]


def utc_day(moment: datetime) -> date:
    return moment.astimezone(UTC).date()


def shard_of(pk: uuid.UUID) -> int:
    return pk.int % ROLLUP_SHARDS


# --- the upsert -----------------------------------------------------------------------------

def _bump(model: type, key_fields: tuple[str, ...], counters: tuple[str, ...],
          deltas: dict[Key, Counter]) -> None:
    """Adds ``deltas`` (key tuple -> counter deltas) to ``model``'s rows, one upsert per key.

    Keys are taken in sorted order so that two transactions moving counts between the same
    rows lock them in the same order and cannot deadlock on them.
    """
    opts = model._meta
    table = connection.ops.quote_name(opts.db_table)
    key_columns = [opts.get_field(name).column for name in key_fields]
    columns = ", ".join(connection.ops.quote_name(c) for c in [*key_columns, *counters])
    placeholders = ", ".join(["%s"] * (len(key_columns) + len(counters)))
    conflict = ", ".join(connection.ops.quote_name(c) for c in key_columns)
    with connection.cursor() as cursor:
        for key in sorted(deltas):
            change = {name: value for name, value in deltas[key].items() if value}
            if not change:
                continue
            sets = ", ".join(f"{connection.ops.quote_name(name)} = {table}.{connection.ops.quote_name(name)}"
                             f" + EXCLUDED.{connection.ops.quote_name(name)}" for name in change)
            params = [opts.get_field(name).get_db_prep_save(value, connection)
                      for name, value in zip(key_fields, key, strict=True)]
            params += [change.get(name, 0) for name in counters]
            cursor.execute(f"INSERT INTO {table} ({columns}) VALUES ({placeholders}) "
                           f"ON CONFLICT ({conflict}) DO UPDATE SET {sets}", params)


_CHANNEL_KEY = ("tenant", "livemode", "day", "channel", "shard")
_LEAD_KEY = ("tenant", "livemode", "day", "source", "channel", "shard")


def _bump_channel(tenant_id: uuid.UUID, livemode: bool, day: date, channel: str, shard: int,
                  **counts: int) -> None:
    _bump(ChannelDailyStat, _CHANNEL_KEY, _CHANNEL_COUNTERS,
          {(tenant_id, livemode, day, channel, shard): Counter(counts)})


# --- widget visits ----------------------------------------------------------------------------

def visit_recorded(visit: WidgetVisit, *, shard: int) -> None:
    _bump_channel(visit.tenant_id, visit.livemode, visit.day, visit.channel, shard, visitors=1)


# --- conversations --------------------------------------------------------------------------

def _conversation_key(conversation: Any) -> tuple[uuid.UUID, bool, date, str, int]:
    return (conversation.tenant_id, conversation.livemode, utc_day(conversation.started_at),
            conversation.channel, shard_of(conversation.pk))


def _response_us(message: Any, previous: tuple[str, datetime] | None) -> int | None:
    """How long the agent took to answer, if ``message`` is an agent reply directly after a
    visitor message; None otherwise. A person's reply (``author`` set) is not the agent's.
    ``previous`` is the role and time of the message before it, when the caller knows them."""
    if message.role != "assistant" or message.author_id is not None or message.sequence == 0:
        return None
    from conversations.models import Message

    if previous is None:
        previous = (Message.objects.filter(conversation_id=message.conversation_id,
                                           sequence=message.sequence - 1)
                    .values_list("role", "created_at").first())
    if previous is None or previous[0] != "user":
        return None
    return max(0, (message.created_at - previous[1]) // timedelta(microseconds=1))


def message_stored(*, conversation: Any, message: Any,
                   previous: tuple[str, datetime] | None = None) -> None:
    """A message was appended to ``conversation``; the first one starts the conversation.
    ``previous``: the role and time of the message before it, if the caller knows them."""
    counts = Counter(messages=1)
    if message.sequence == 0:
        counts.update(conversations=1, converted=int(conversation.lead_id is not None),
                      handed_off=int(conversation.handoff is not None))
    delay = _response_us(message, previous)
    if delay is not None:
        counts.update(responses=1, response_us=delay)
    _bump(ChannelDailyStat, _CHANNEL_KEY, _CHANNEL_COUNTERS, {_conversation_key(conversation): counts})


def conversation_changed(*, conversation: Any, had_lead: bool, was_handed_off: bool) -> None:
    """The conversation may have gained a lead or been handed off since it was read."""
    counts = Counter(converted=int(conversation.lead_id is not None) - int(had_lead),
                     handed_off=int(conversation.handoff is not None) - int(was_handed_off))
    _bump(ChannelDailyStat, _CHANNEL_KEY, _CHANNEL_COUNTERS, {_conversation_key(conversation): counts})


def conversation_deleted(*, conversation: Any) -> None:
    """Takes back everything the conversation contributed (call before deleting it)."""
    from conversations.models import Message

    replies = _responses(Message.objects.filter(conversation_id=conversation.pk))
    found = replies.aggregate(n=Count("pk"), total=Sum("delay"))
    counts = Counter(
        conversations=-1, converted=-int(conversation.lead_id is not None),
        handed_off=-int(conversation.handoff is not None), messages=-conversation.message_count,
        responses=-found["n"], response_us=-_us(found["total"]),
    )
    _bump(ChannelDailyStat, _CHANNEL_KEY, _CHANNEL_COUNTERS, {_conversation_key(conversation): counts})


def _responses(messages):
    """Agent replies that directly follow a visitor message, annotated with their ``delay``."""
    from conversations.models import Message

    previous = Message.objects.filter(conversation_id=OuterRef("conversation_id"),
                                      sequence=OuterRef("sequence") - 1)
    return (messages.filter(role="assistant", author__isnull=True)
            .annotate(previous_role=Subquery(previous.values("role")[:1]),
                      previous_at=Subquery(previous.values("created_at")[:1]))
            .filter(previous_role="user")
            .annotate(delay=ExpressionWrapper(F("created_at") - F("previous_at"),
                                              output_field=DurationField())))


def _us(total: Any) -> int:
    """A summed duration in microseconds (a timedelta; some backends give the integer)."""
    if total is None:
        return 0
    if isinstance(total, int | float):
        return int(total)
    return total // timedelta(microseconds=1)


# --- leads ----------------------------------------------------------------------------------

def _lead_contribution(*, lead: Any, status: str, score: int, source: str,
                       journey: LeadJourney | None) -> dict[Key, Counter]:
    """What one lead adds to ``LeadDailyStat``, given its status, score, source and journey."""
    channel = journey.channel if journey else ""
    shard = shard_of(lead.pk)
    base = (lead.tenant_id, lead.livemode)
    out: dict[Key, Counter] = defaultdict(Counter)
    reached = bool(journey and journey.qualified_at) or status == _CONVERTED
    out[(*base, utc_day(lead.created_at), source, channel, shard)].update(
        created=1, score_sum=score, reached=int(reached))
    if journey:
        for stage in ("qualified", "booked", "converted"):
            moment = getattr(journey, f"{stage}_at")
            if moment is not None:
                out[(*base, utc_day(moment), source, channel, shard)][stage] += 1
    return out


def _difference(after: dict[Key, Counter], before: dict[Key, Counter]) -> dict[Key, Counter]:
    deltas: dict[Key, Counter] = defaultdict(Counter)
    for key, counts in after.items():
        for name, value in counts.items():
            deltas[key][name] += value
    for key, counts in before.items():
        for name, value in counts.items():
            deltas[key][name] -= value
    return deltas


def _bump_leads(deltas: dict[Key, Counter]) -> None:
    _bump(LeadDailyStat, _LEAD_KEY, _LEAD_COUNTERS, deltas)


def _journey(lead: Any) -> LeadJourney | None:
    return LeadJourney.objects.filter(lead_id=lead.pk).first()


def _copy(journey: LeadJourney | None, lead: Any) -> LeadJourney:
    if journey is None:
        return LeadJourney(lead_id=lead.pk)
    return LeadJourney(lead_id=journey.lead_id, channel=journey.channel,
                       qualified_at=journey.qualified_at, booked_at=journey.booked_at,
                       converted_at=journey.converted_at)


def _save(journey: LeadJourney, *, existed: bool) -> None:
    if existed:
        journey.save()
    elif journey.channel or journey.qualified_at or journey.booked_at or journey.converted_at:
        journey.save(force_insert=True)


def _reach_stages(journey: LeadJourney, *, status: str, previous_status: str | None,
                  at: datetime) -> None:
    """Marks the stages the status change reached for the first time (the moments the lead
    services emit ``lead.qualified`` and ``lead.converted``)."""
    shown_before = None if previous_status is None else _v1(previous_status)
    shown = _v1(status)
    if shown == shown_before:
        return
    if shown == "qualified" and journey.qualified_at is None:
        journey.qualified_at = at
    if shown == "converted" and journey.converted_at is None:
        journey.converted_at = at


def _v1(stored: str) -> str:
    if stored in _V1_QUALIFIED:
        return "qualified"
    return stored


def lead_created(*, lead: Any, conversation_id: uuid.UUID | None) -> None:
    """A lead was created (by ``leads.services.lead_create``), perhaps by a conversation."""
    journey = LeadJourney(lead_id=lead.pk)
    if conversation_id is not None:
        from conversations.models import Conversation

        journey.channel = (Conversation.objects.filter(pk=conversation_id)
                           .values_list("channel", flat=True).first() or "")
    _reach_stages(journey, status=lead.status, previous_status=None, at=lead.created_at)
    _save(journey, existed=False)
    _bump_leads(_lead_contribution(lead=lead, status=lead.status, score=lead.score,
                                   source=lead.source, journey=journey))


def lead_changed(*, lead: Any, before: dict[str, Any], at: datetime) -> None:
    """``lead`` (saved, locked) changed from the row ``before`` (``leads.presenters.lead_row``)."""
    if all(before[f] == getattr(lead, f) for f in ("status", "score", "source")):
        return
    stored = _journey(lead)
    journey = _copy(stored, lead)
    _reach_stages(journey, status=lead.status, previous_status=before["status"], at=at)
    _save(journey, existed=stored is not None)
    _bump_leads(_difference(
        _lead_contribution(lead=lead, status=lead.status, score=lead.score, source=lead.source,
                           journey=journey),
        _lead_contribution(lead=lead, status=before["status"], score=before["score"],
                           source=before["source"], journey=stored),
    ))


def lead_deleted(*, lead: Any) -> None:
    """Takes back everything the lead contributed, and the lead of its conversations (which
    the database unlinks). Call before deleting it."""
    from conversations.models import Conversation

    _bump_leads(_difference({}, _lead_contribution(
        lead=lead, status=lead.status, score=lead.score, source=lead.source,
        journey=_journey(lead))))
    deltas: dict[Key, Counter] = defaultdict(Counter)
    linked = Conversation.objects.filter(lead_id=lead.pk).only(
        "pk", "tenant_id", "livemode", "started_at", "channel")
    for conversation in linked:
        deltas[_conversation_key(conversation)]["converted"] -= 1
    _bump(ChannelDailyStat, _CHANNEL_KEY, _CHANNEL_COUNTERS, deltas)


def meeting_booked(*, lead: Any, at: datetime) -> None:
    """A meeting was booked for ``lead`` (locked by the caller); the first one is the lead's
    Demo Booked stage."""
    stored = _journey(lead)
    if stored is not None and stored.booked_at is not None:
        return
    journey = _copy(stored, lead)
    journey.booked_at = at
    _save(journey, existed=stored is not None)
    _bump_leads(_difference(
        _lead_contribution(lead=lead, status=lead.status, score=lead.score, source=lead.source,
                           journey=journey),
        _lead_contribution(lead=lead, status=lead.status, score=lead.score, source=lead.source,
                           journey=stored),
    ))


# --- rebuild --------------------------------------------------------------------------------

@transaction.atomic
def rollups_rebuild(*, tenant: Tenant, livemode: bool) -> None:
    """Recomputes the tenant's rollups in one mode from the raw rows.

    The raw definitions (docs/analytics.md): a lead's capture channel is the channel of the
    conversation its ``lead.created`` event names; it first reached qualified / converted at
    its first ``lead.qualified`` / ``lead.converted`` event, and Demo Booked at its first
    meeting. Everything is written to shard 0.
    """
    from conversations.models import Conversation, Message
    from leads.models import Lead

    scope = {"tenant": tenant, "livemode": livemode}

    # Channels: visitors, conversations, messages, responses.
    rows: dict[Key, Counter] = defaultdict(Counter)
    for g in (WidgetVisit.objects.filter(**scope).values("day", "channel")
              .annotate(n=Count("pk")).order_by()):
        rows[(g["day"], g["channel"])]["visitors"] += g["n"]
    for g in (Conversation.objects.filter(**scope)
              .annotate(day=TruncDate("started_at", tzinfo=UTC)).values("day", "channel")
              .annotate(n=Count("pk"), with_lead=Count("pk", filter=Q(lead__isnull=False)),
                        handed=Count("pk", filter=Q(handoff__isnull=False)),
                        messages=Sum("message_count"))
              .order_by()):
        rows[(g["day"], g["channel"])].update(
            conversations=g["n"], converted=g["with_lead"], handed_off=g["handed"],
            messages=g["messages"] or 0)
    if connection.vendor == "postgresql":
        replies = _pg_responses(tenant.pk, livemode)
    else:
        replies = (_responses(Message.objects.filter(**scope))
                   .annotate(day=TruncDate("conversation__started_at", tzinfo=UTC),
                             channel=F("conversation__channel"))
                   .values("day", "channel").annotate(n=Count("pk"), total=Sum("delay"))
                   .order_by())
    for g in replies:
        rows[(g["day"], g["channel"])].update(responses=g["n"], response_us=_us(g["total"]))
    ChannelDailyStat.objects.filter(**scope).delete()
    ChannelDailyStat.objects.bulk_create(
        [ChannelDailyStat(**scope, day=day, channel=channel, shard=0,
                          **{name: counts.get(name, 0) for name in _CHANNEL_COUNTERS})
         for (day, channel), counts in rows.items()], batch_size=2000)

    # Journeys.
    leads = Lead.objects.filter(**scope)
    LeadJourney.objects.filter(lead__in=leads.values("pk")).delete()
    if connection.vendor == "postgresql":
        _pg_journeys(tenant.pk, livemode)
    else:
        _journeys(leads)

    # Lead stats.
    stats: dict[Key, Counter] = defaultdict(Counter)
    with_channel = leads.annotate(ch=Coalesce(F("analytics_journey__channel"), Value("")))
    reached = Q(analytics_journey__qualified_at__isnull=False) | Q(status=_CONVERTED)
    for g in (with_channel.annotate(day=TruncDate("created_at", tzinfo=UTC))
              .values("day", "source", "ch")
              .annotate(n=Count("pk"), scores=Sum("score"), reached=Count("pk", filter=reached))
              .order_by()):
        stats[(g["day"], g["source"], g["ch"])].update(
            created=g["n"], score_sum=g["scores"] or 0, reached=g["reached"])
    for stage in ("qualified", "booked", "converted"):
        column = f"analytics_journey__{stage}_at"
        for g in (with_channel.filter(**{f"{column}__isnull": False})
                  .annotate(day=TruncDate(column, tzinfo=UTC)).values("day", "source", "ch")
                  .annotate(n=Count("pk")).order_by()):
            stats[(g["day"], g["source"], g["ch"])][stage] += g["n"]
    LeadDailyStat.objects.filter(**scope).delete()
    LeadDailyStat.objects.bulk_create(
        [LeadDailyStat(**scope, day=day, source=source, channel=channel, shard=0,
                       **{name: counts.get(name, 0) for name in _LEAD_COUNTERS})
         for (day, source, channel), counts in stats.items()], batch_size=2000)


def _journeys(leads) -> None:
    """Every lead's journey, from its events and meetings (portable; see ``_pg_journeys``)."""
    from conversations.models import Conversation, Meeting

    # Nested one level down (inside the conversation's subquery), hence the double OuterRef.
    capture = (Event.objects.filter(lead=OuterRef(OuterRef("pk")), type=EventType.LEAD_CREATED,
                                    conversation_id__isnull=False)
               .order_by("occurred_at").values("conversation_id")[:1])
    first = {
        "channel": Subquery(Conversation.objects.filter(pk=Subquery(capture))
                            .values("channel")[:1]),
        "qualified": Subquery(_first_event(EventType.LEAD_QUALIFIED)),
        "converted": Subquery(_first_event(EventType.LEAD_CONVERTED)),
        "booked": Subquery(Meeting.objects.filter(lead=OuterRef("pk")).order_by()
                           .values("lead").annotate(m=Min("created_at")).values("m")[:1]),
    }
    found = (leads.annotate(**first)
             .filter(Q(channel__isnull=False) | Q(qualified__isnull=False)
                     | Q(converted__isnull=False) | Q(booked__isnull=False))
             .values_list("pk", "channel", "qualified", "booked", "converted"))
    LeadJourney.objects.bulk_create(
        (LeadJourney(lead_id=pk, channel=channel or "", qualified_at=q, booked_at=b, converted_at=c)
         for pk, channel, q, b, c in found.iterator(chunk_size=5000)), batch_size=5000)


# The same two computations in one set-based statement each, for PostgreSQL, where the
# per-row subqueries above would take minutes over millions of leads and messages. The suite
# runs on both databases, so both forms are held to the raw figures.

def _tables() -> dict[str, str]:
    from conversations.models import Conversation, Meeting, Message
    from leads.models import Lead

    return {name: connection.ops.quote_name(model._meta.db_table) for name, model in (
        ("lead", Lead), ("conversation", Conversation), ("message", Message),
        ("meeting", Meeting), ("event", Event), ("journey", LeadJourney))}


def _pg_responses(tenant_id: uuid.UUID, livemode: bool) -> list[dict[str, Any]]:
    t = _tables()
    sql = f"""
        SELECT (c.started_at AT TIME ZONE 'UTC')::date AS day, c.channel, count(*) AS n,
               sum(r.delay_us)::bigint AS total
        FROM (
            SELECT m.conversation_id, m.role, m.author_id,
                   lag(m.role) OVER w AS previous_role,
                   m.sequence - lag(m.sequence) OVER w AS gap,
                   (extract(epoch FROM m.created_at - lag(m.created_at) OVER w) * 1000000)::bigint
                       AS delay_us
            FROM {t["message"]} m
            WHERE m.tenant_id = %s AND m.livemode = %s
            WINDOW w AS (PARTITION BY m.conversation_id ORDER BY m.sequence)
        ) r
        JOIN {t["conversation"]} c ON c.id = r.conversation_id
        WHERE r.role = 'assistant' AND r.author_id IS NULL AND r.previous_role = 'user'
              AND r.gap = 1
        GROUP BY 1, 2"""
    with connection.cursor() as cursor:
        cursor.execute(sql, [tenant_id, livemode])
        return [{"day": day, "channel": channel, "n": n, "total": total}
                for day, channel, n, total in cursor.fetchall()]


def _pg_journeys(tenant_id: uuid.UUID, livemode: bool) -> None:
    t = _tables()
    scope = "tenant_id = %s AND livemode = %s"

    def first(type: str) -> str:
        return (f"SELECT lead_id, min(occurred_at) AS at FROM {t['event']} "
                f"WHERE {scope} AND type = '{type}' AND lead_id IS NOT NULL GROUP BY lead_id")

    sql = f"""
        INSERT INTO {t["journey"]} (lead_id, channel, qualified_at, booked_at, converted_at)
        SELECT l.id, coalesce(c.channel, ''), q.at, b.at, v.at
        FROM {t["lead"]} l
        LEFT JOIN (SELECT DISTINCT ON (lead_id) lead_id, conversation_id FROM {t["event"]}
                   WHERE {scope} AND type = '{EventType.LEAD_CREATED}' AND lead_id IS NOT NULL
                         AND conversation_id IS NOT NULL
                   ORDER BY lead_id, occurred_at) cap ON cap.lead_id = l.id
        LEFT JOIN {t["conversation"]} c ON c.id = cap.conversation_id
        LEFT JOIN ({first(EventType.LEAD_QUALIFIED)}) q ON q.lead_id = l.id
        LEFT JOIN ({first(EventType.LEAD_CONVERTED)}) v ON v.lead_id = l.id
        LEFT JOIN (SELECT lead_id, min(created_at) AS at FROM {t["meeting"]} WHERE {scope}
                   GROUP BY lead_id) b ON b.lead_id = l.id
        WHERE l.tenant_id = %s AND l.livemode = %s
              AND (c.channel IS NOT NULL OR q.at IS NOT NULL OR b.at IS NOT NULL
                   OR v.at IS NOT NULL)"""
    with connection.cursor() as cursor:
        cursor.execute(sql, [tenant_id, livemode] * 5)


def _first_event(type: str):
    return (Event.objects.filter(lead=OuterRef("pk"), type=type).order_by()
            .values("lead").annotate(m=Min("occurred_at")).values("m")[:1])
