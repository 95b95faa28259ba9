"""The lead count tables (``LeadDailyCount``, ``LeadUpdatedDayCount``, ``LeadScoreCount``), kept
exact by an in-transaction subscriber of the lead events, and rebuilt from the leads on demand
(``manage.py rebuild_counts``) for leads written around the services (bulk loads, repairs)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from datetime import UTC, date
from typing import Any, NamedTuple

from django.db import transaction
from django.db.models import Count
from django.db.models.functions import TruncDate

from core.models import Event, EventType
from core.sql import add_to_counters
from core.timestamps import parse_timestamp

from .models import Lead, LeadCount, LeadDailyCount, LeadScoreCount, LeadUpdatedDayCount


class CountKey(NamedTuple):
    """Where a lead is counted: each count table keeps a projection of this."""

    created_day: date  # UTC
    updated_day: date  # UTC
    score: int
    status: str  # stored
    source: str


# Each count table: its model, a key's bucket, and the expression that computes the bucket
# from a lead's columns (for the rebuild). Rows are locked in this order.
_TABLES: tuple[tuple[type[LeadCount], Callable[[CountKey], Any], Any], ...] = (
    (LeadDailyCount, lambda key: key.created_day, TruncDate("created_at", tzinfo=UTC)),
    (LeadUpdatedDayCount, lambda key: key.updated_day, TruncDate("updated_at", tzinfo=UTC)),
    (LeadScoreCount, lambda key: key.score, None),  # the lead's own column
)


def _key(facts: dict[str, Any]) -> CountKey:
    return CountKey(parse_timestamp(facts["created_at"]).astimezone(UTC).date(),
                    parse_timestamp(facts["updated_at"]).astimezone(UTC).date(),
                    facts["score"], facts["status"], facts["source"])


def _moves(event: Event) -> dict[CountKey, int]:
    """How the event moves its lead between count keys."""
    lead = event.facts["lead"]
    if event.type == EventType.LEAD_CREATED:
        return {_key(lead): 1}
    if event.type == EventType.LEAD_DELETED:
        return {_key(lead): -1}
    moves = Counter({_key({**lead, **event.facts["previous"]}): -1})
    moves[_key(lead)] += 1
    return moves


def count_lead_event(event: Event) -> None:
    """Subscriber of lead.created, lead.updated and lead.deleted: in each table, one upsert of
    the rows whose count changes (a lead updated on the day of its last update moves nothing
    in the updated-day counts)."""
    moves = _moves(event)
    for model, bucket_of, _ in _TABLES:
        deltas: Counter[tuple[Any, ...]] = Counter()
        for key, delta in moves.items():
            deltas[(event.tenant_id, event.livemode, bucket_of(key), key.status, key.source)] += delta
        add_to_counters(model, key=("tenant", "livemode", model.bucket, "status", "source"),
                        counters=("count",), deltas={k: {"count": n} for k, n in deltas.items()})


COUNTED_EVENTS = (EventType.LEAD_CREATED, EventType.LEAD_UPDATED, EventType.LEAD_DELETED)


@transaction.atomic
def lead_counts_rebuild(*, tenant_id: Any, livemode: bool) -> int:
    """Recomputes the counts of a tenant and mode from its leads; returns how many leads."""
    leads = Lead.objects.filter(tenant_id=tenant_id, livemode=livemode)
    totals = []
    for model, _, expression in _TABLES:
        bucket = model.bucket
        model.objects.filter(tenant_id=tenant_id, livemode=livemode).delete()
        grouped = leads.annotate(**{bucket: expression}) if expression is not None else leads
        groups = grouped.values(bucket, "status", "source").annotate(n=Count("id")).order_by()
        rows = [model(tenant_id=tenant_id, livemode=livemode, **{bucket: g[bucket]},
                      status=g["status"], source=g["source"], count=g["n"]) for g in groups]
        model.objects.bulk_create(rows, batch_size=2000)
        totals.append(sum(row.count for row in rows))
    return totals[0]
