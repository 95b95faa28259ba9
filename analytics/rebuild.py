"""The analytics rollups recomputed from the raw rows (``manage.py rebuild_counts``), for data
written around the services: bulk loads, repairs. The subscribers of ``analytics.rollups`` keep
the same numbers as the data is written; a test holds the two to each other.

The raw definitions (docs/analytics.md): a lead's capture channel and visitor are those of the
conversation its ``lead.created`` event names; it first reached qualified / converted at its
first ``lead.qualified`` / ``lead.converted`` event, and Demo Booked at its first meeting. A
visitor-day's chats are the conversations its visitor started on its day and channel, its leads
those captured from it; its widget loads are raw data themselves and stay as they are.
Everything is written to shard 0, which sums the same as the subscribers' four shards.
"""

from __future__ import annotations

import uuid
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from datetime import UTC
from itertools import islice
from typing import Any

from django.db import connection, transaction
from django.db.models import Count, F, Min, OuterRef, Q, Subquery, Sum, Value
from django.db.models.functions import Coalesce, TruncDate

from conversations.models import Conversation, Meeting, Message
from core.models import Event, EventType
from leads.models import Lead

from .models import ChannelDailyStat, LeadDailyStat, LeadJourney, VisitorDay
from .rollups import CHANNEL_COUNTERS, LEAD_COUNTERS, STAGES, microseconds, replies

Rows = dict[tuple[Any, ...], Counter]


@transaction.atomic
def rollups_rebuild(*, tenant_id: uuid.UUID, livemode: bool) -> None:
    """Recomputes the tenant's rollups in one mode from the raw rows."""
    owner = {"tenant_id": tenant_id, "livemode": livemode}
    leads = Lead.objects.filter(**owner)
    LeadJourney.objects.filter(lead__in=leads.values("pk")).delete()
    if connection.vendor == "postgresql":
        _pg_journeys(tenant_id, livemode)
    else:
        _journeys(leads)
    _visitor_days(owner, leads)
    _write(ChannelDailyStat, owner, ("day", "channel"), CHANNEL_COUNTERS, _channel_rows(owner))
    _write(LeadDailyStat, owner, ("day", "source", "channel"), LEAD_COUNTERS, _lead_rows(leads))


def _write(model, owner: dict[str, Any], key: tuple[str, ...], counters: tuple[str, ...],
           rows: Rows) -> None:
    model.objects.filter(**owner).delete()
    model.objects.bulk_create(
        [model(**owner, **dict(zip(key, values, strict=True)), shard=0,
               **{name: counts.get(name, 0) for name in counters})
         for values, counts in rows.items()], batch_size=2000)


def _visitor_days(owner: dict[str, Any], leads) -> None:
    """Every visitor-day's chats and leads again (after the journeys, which name the capturing
    visitors); rows that only counted chats or leads are made anew."""
    days = VisitorDay.objects.filter(**owner)
    days.filter(loads=0).delete()
    days.exclude(chats=0, leads=0).update(chats=0, leads=0)
    chats = (Conversation.objects.filter(**owner)
             .annotate(d=TruncDate("started_at", tzinfo=UTC), ch=F("channel"), v=F("visitor_id"))
             .values("d", "ch", "v").annotate(n=Count("pk"), at=Min("started_at")).order_by())
    journey = "analytics_journey__"
    captured = (leads.filter(**{f"{journey}channel__gt": ""})
                .annotate(d=TruncDate("created_at", tzinfo=UTC), ch=F(f"{journey}channel"),
                          v=F(f"{journey}visitor_id"))
                .values("d", "ch", "v").annotate(n=Count("pk"), at=Min("created_at")).order_by())
    _upsert_visitor_days(owner, chats, "chats")
    _upsert_visitor_days(owner, captured, "leads")


def _upsert_visitor_days(owner: dict[str, Any], groups, counter: str) -> None:
    # A server-side cursor on PostgreSQL (millions of visitor-days); SQLite reads them at once.
    found: Iterable[dict] = (groups.iterator(chunk_size=5000) if connection.vendor == "postgresql"
                             else list(groups))
    rows = (VisitorDay(**owner, day=g["d"], channel=g["ch"], visitor_id=g["v"],
                       first_seen_at=g["at"], **{counter: g["n"]}) for g in found)
    for batch in _batches(rows, 5000):
        VisitorDay.objects.bulk_create(
            batch, update_conflicts=True, update_fields=[counter],
            unique_fields=["tenant", "livemode", "day", "channel", "visitor_id"])


def _batches(items: Iterable, size: int) -> Iterator[list]:
    items = iter(items)
    while batch := list(islice(items, size)):
        yield batch


def _channel_rows(owner: dict[str, Any]) -> Rows:
    """Per day and channel: visitor-days without a lead, conversations, messages, responses."""
    rows: Rows = defaultdict(Counter)
    for g in (VisitorDay.objects.filter(**owner, leads=0).exclude(loads=0, chats=0)
              .values("day", "channel")
              .annotate(n=Count("pk"), engaged=Count("pk", filter=Q(chats__gt=0))).order_by()):
        rows[(g["day"], g["channel"])].update(uncaptured_visitors=g["n"],
                                              uncaptured_engaged=g["engaged"])
    for g in (Conversation.objects.filter(**owner)
              .annotate(day=TruncDate("started_at", tzinfo=UTC)).values("day", "channel")
              .annotate(n=Count("pk"), with_lead=Count("pk", filter=Q(lead__isnull=False)),
                        handed=Count("pk", filter=Q(handoff__isnull=False)),
                        messages=Sum("message_count"))
              .order_by()):
        rows[(g["day"], g["channel"])].update(
            conversations=g["n"], converted=g["with_lead"], handed_off=g["handed"],
            messages=g["messages"] or 0)
    for g in _response_groups(owner):
        rows[(g["day"], g["channel"])].update(responses=g["n"],
                                              response_us=microseconds(g["total"]))
    return rows


def _response_groups(owner: dict[str, Any]) -> list[dict[str, Any]]:
    if connection.vendor == "postgresql":
        return _pg_responses(owner["tenant_id"], owner["livemode"])
    return list(replies(Message.objects.filter(**owner))
                .annotate(day=TruncDate("conversation__started_at", tzinfo=UTC),
                          channel=F("conversation__channel"))
                .values("day", "channel").annotate(n=Count("pk"), total=Sum("delay"))
                .order_by())


def _lead_rows(leads) -> Rows:
    """Per creation day, source and capture channel; and per day each stage was reached."""
    rows: Rows = defaultdict(Counter)
    with_channel = leads.annotate(ch=Coalesce(F("analytics_journey__channel"), Value("")))
    reached = Q(analytics_journey__qualified_at__isnull=False) | Q(status="converted")
    # How far each lead went: a stage reached implies the earlier ones (rollups.depth).
    cohort: dict[str, Q] = {}
    deeper = Q()
    for stage in reversed(STAGES):
        deeper = deeper | Q(**{f"analytics_journey__{stage}_at__isnull": False})
        cohort[f"cohort_{stage}"] = deeper
    for g in (with_channel.annotate(day=TruncDate("created_at", tzinfo=UTC))
              .values("day", "source", "ch")
              .annotate(n=Count("pk"), scores=Sum("score"), reached=Count("pk", filter=reached),
                        **{name: Count("pk", filter=q) for name, q in cohort.items()})
              .order_by()):
        rows[(g["day"], g["source"], g["ch"])].update(
            created=g["n"], score_sum=g["scores"] or 0, reached=g["reached"],
            **{name: g[name] for name in cohort})
    for stage in STAGES:
        column = f"analytics_journey__{stage}_at"
        for g in (with_channel.filter(**{f"{column}__isnull": False})
                  .annotate(day=TruncDate(column, tzinfo=UTC)).values("day", "source", "ch")
                  .annotate(n=Count("pk")).order_by()):
            rows[(g["day"], g["source"], g["ch"])][stage] += g["n"]
    return rows


def _journeys(leads) -> None:
    """Every lead's journey, from its events and meetings (portable; see ``_pg_journeys``)."""
    # Nested one level down (inside the conversation's subquery), hence the double OuterRef.
    capture = (Event.objects.filter(lead=OuterRef(OuterRef("pk")), type=EventType.LEAD_CREATED,
                                    conversation_id__isnull=False)
               .order_by("occurred_at").values("conversation_id")[:1])
    capturing = Conversation.objects.filter(pk=Subquery(capture))
    first = {
        "channel": Subquery(capturing.values("channel")[:1]),
        "visitor": Subquery(capturing.values("visitor_id")[:1]),
        "qualified": Subquery(_first_event(EventType.LEAD_QUALIFIED)),
        "converted": Subquery(_first_event(EventType.LEAD_CONVERTED)),
        "booked": Subquery(Meeting.objects.filter(lead=OuterRef("pk")).order_by()
                           .values("lead").annotate(m=Min("created_at")).values("m")[:1]),
    }
    found = (leads.annotate(**first)
             .filter(Q(channel__isnull=False) | Q(qualified__isnull=False)
                     | Q(converted__isnull=False) | Q(booked__isnull=False))
             .values_list("pk", "channel", "visitor", "qualified", "booked", "converted"))
    LeadJourney.objects.bulk_create(
        (LeadJourney(lead_id=pk, channel=channel or "", visitor_id=visitor or "", qualified_at=q,
                     booked_at=b, converted_at=c)
         for pk, channel, visitor, q, b, c in found.iterator(chunk_size=5000)), batch_size=5000)


# The same two computations in one set-based statement each, for PostgreSQL, where the
# per-row subqueries above would take minutes over millions of leads and messages. The suite
# runs on both databases, so both forms are held to the raw figures.

def _tables() -> dict[str, str]:
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
    owned = "tenant_id = %s AND livemode = %s"

    def first(type: str) -> str:
        return (f"SELECT lead_id, min(occurred_at) AS at FROM {t['event']} "
                f"WHERE {owned} AND type = '{type}' AND lead_id IS NOT NULL GROUP BY lead_id")

    sql = f"""
        INSERT INTO {t["journey"]} (lead_id, channel, visitor_id, qualified_at, booked_at,
                                    converted_at)
        SELECT l.id, coalesce(c.channel, ''), coalesce(c.visitor_id, ''), q.at, b.at, v.at
        FROM {t["lead"]} l
        LEFT JOIN (SELECT DISTINCT ON (lead_id) lead_id, conversation_id FROM {t["event"]}
                   WHERE {owned} AND type = '{EventType.LEAD_CREATED}' AND lead_id IS NOT NULL
                         AND conversation_id IS NOT NULL
                   ORDER BY lead_id, occurred_at) cap ON cap.lead_id = l.id
        LEFT JOIN {t["conversation"]} c ON c.id = cap.conversation_id
        LEFT JOIN ({first(EventType.LEAD_QUALIFIED)}) q ON q.lead_id = l.id
        LEFT JOIN ({first(EventType.LEAD_CONVERTED)}) v ON v.lead_id = l.id
        LEFT JOIN (SELECT lead_id, min(created_at) AS at FROM {t["meeting"]} WHERE {owned}
                   GROUP BY lead_id) b ON b.lead_id = l.id
        WHERE l.tenant_id = %s AND l.livemode = %s
              AND (c.channel IS NOT NULL OR q.at IS NOT NULL OR b.at IS NOT NULL
                   OR v.at IS NOT NULL)"""
    with connection.cursor() as cursor:
        cursor.execute(sql, [tenant_id, livemode] * 5)


def _first_event(type: str):
    return (Event.objects.filter(lead=OuterRef("pk"), type=type).order_by()
            .values("lead").annotate(m=Min("occurred_at")).values("m")[:1])
