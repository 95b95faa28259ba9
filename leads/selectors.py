"""Reads of leads: the lists of both surfaces and search.

Every function takes ``leads``, a queryset the caller has already scoped to one tenant and mode
(the API base view does this), and returns rows as plain dicts of ``presenters.COLUMNS`` and
``presenters.TIMESTAMPS`` (formatted by the database) so that pages render without model
instances. Totals of lists come from ``LeadDailyCount``, never from a
``COUNT`` over the leads (docs/performance.md).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from django.db import connection, transaction
from django.db.models import F, Q, QuerySet, Sum

from config.api.pagination import Page
from tenants.models import Tenant

from .models import Lead, LeadCount, LeadDailyCount, LeadScoreCount, LeadUpdatedDayCount
from .presenters import COLUMNS, TIMESTAMPS, timestamp_expressions
from .text import custom_fields_text
from .vocabulary import stored_for_v1_filter

SORT_COLUMNS = {"createdAt": "created_at", "updatedAt": "updated_at", "score": "score"}
# From this offset on, a page starts its index scan at the right creation day, update day or
# score, found from the counts, instead of stepping over every earlier entry.
DEEP_OFFSET = 1000

V1_SEARCH_FIELDS = ("name", "email", "company", "custom_fields_text")
LEGACY_SEARCH_FIELDS = ("name", "email", "company")
_MATCH_FIELDS = {"name": "name", "email": "email", "company": "company"}
_TRIGRAM = re.compile(r"[^\W_]{3}")  # three letters or digits in a row, as pg_trgm sees words
SEARCH_COLUMNS = ("id", "email", "name", "company", "status", "score", "custom_fields")


@dataclass(frozen=True)
class LeadFilters:
    """The v1 list filters. Days are UTC and inclusive at both ends."""

    status: str | None = None  # a v1 status word
    source: str | None = None
    created_from: date | None = None
    created_to: date | None = None


def _day_start(day: date) -> datetime:
    return datetime.combine(day, time.min, tzinfo=UTC)


def _filter_leads(leads: QuerySet[Lead], filters: LeadFilters) -> QuerySet[Lead]:
    if filters.status:
        leads = leads.filter(v1_status=filters.status)
    if filters.source:
        leads = leads.filter(source=filters.source)
    if filters.created_from:
        leads = leads.filter(created_at__gte=_day_start(filters.created_from))
    if filters.created_to:
        leads = leads.filter(created_at__lt=_day_start(filters.created_to + timedelta(days=1)))
    return leads


# The count table behind each sort column (docs/performance.md, "Leads").
COUNTS: dict[str, type[LeadCount]] = {
    "created_at": LeadDailyCount, "updated_at": LeadUpdatedDayCount, "score": LeadScoreCount,
}


def _filter_counts(*, tenant: Tenant, livemode: bool, filters: LeadFilters,
                   model: type[LeadCount] = LeadDailyCount) -> QuerySet[LeadCount]:
    """The rows of ``model`` that count the leads matching ``filters``. Only the daily counts
    know the creation day: the caller asks the others only without a creation-date filter."""
    counts = model.objects.filter(tenant=tenant, livemode=livemode)
    if filters.status:
        counts = counts.filter(status__in=stored_for_v1_filter(filters.status))
    if filters.source:
        counts = counts.filter(source=filters.source)
    if filters.created_from:
        counts = counts.filter(day__gte=filters.created_from)
    if filters.created_to:
        counts = counts.filter(day__lte=filters.created_to)
    return counts


def lead_total(*, tenant: Tenant, livemode: bool, filters: LeadFilters = LeadFilters()) -> int:
    """The exact number of the tenant's leads in this mode that match ``filters``."""
    found = _filter_counts(tenant=tenant, livemode=livemode, filters=filters)
    return found.aggregate(n=Sum("count"))["n"] or 0


def lead_list(
    *,
    leads: QuerySet[Lead],
    tenant: Tenant,
    livemode: bool,
    filters: LeadFilters = LeadFilters(),
    sort_by: str = "createdAt",
    descending: bool = True,
    page: int = 1,
    limit: int = 25,
) -> Page:
    """One page of leads in a stable order (the sort column, then the id), with the total.

    Two queries: the total (or, for deep pages, the counts per creation day, update day or
    score) and the page. The page query picks the ids with an index-only scan and then reads
    those rows only.
    """
    column = SORT_COLUMNS[sort_by]
    order = ([F(column).desc(), F("id").desc()] if descending
             else [F(column).asc(), F("id").asc()])
    offset = (page - 1) * limit
    matching = _filter_leads(leads, filters)
    counts = _filter_counts(tenant=tenant, livemode=livemode, filters=filters)
    buckets = _bucket_counts(column, tenant=tenant, livemode=livemode, filters=filters)

    if buckets is not None and offset >= DEEP_OFFSET:
        bucket_column = COUNTS[column].bucket
        per_bucket = list(buckets.order_by(f"-{bucket_column}" if descending else bucket_column))
        total = sum(n for _, n in per_bucket)
        found = _bucket_of_offset(per_bucket, offset)
        if found is None:
            return Page(items=[], page=page, limit=limit, total=total)
        bucket, passed = found
        # The rows of the buckets before ``bucket`` in this order are exactly ``passed``: skip
        # them by the index's key rather than by OFFSET.
        matching = matching.filter(_from_bucket(column, bucket, descending))
        offset -= passed
    else:
        total = counts.aggregate(n=Sum("count"))["n"] or 0
        if offset >= total:
            return Page(items=[], page=page, limit=limit, total=total)

    ids = matching.order_by(*order).values("pk")[offset : offset + limit]
    rows = list(leads.filter(pk__in=ids).order_by(*order)
                .values(*COLUMNS, **timestamp_expressions()))
    return Page(items=rows, page=page, limit=limit, total=total)


def _bucket_counts(column: str, *, tenant: Tenant, livemode: bool,
                   filters: LeadFilters) -> QuerySet | None:
    """(bucket, rows) of the leads matching ``filters``, for the deep pages of ``column``; None
    where the counts cannot tell (the update-day and score counts know no creation date)."""
    model = COUNTS[column]
    if model is not LeadDailyCount and (filters.created_from or filters.created_to):
        return None
    counts = _filter_counts(tenant=tenant, livemode=livemode, filters=filters, model=model)
    return counts.values(model.bucket).annotate(n=Sum("count")).values_list(model.bucket, "n")


def _from_bucket(column: str, bucket: Any, descending: bool) -> Q:
    """The leads at ``bucket`` and after it in the list's order."""
    if column == "score":
        return Q(score__lte=bucket) if descending else Q(score__gte=bucket)
    if descending:
        return Q(**{f"{column}__lt": _day_start(bucket + timedelta(days=1))})
    return Q(**{f"{column}__gte": _day_start(bucket)})


def _bucket_of_offset(buckets: list[tuple[Any, int]], offset: int) -> tuple[Any, int] | None:
    """The bucket holding the row at ``offset``, and how many rows the buckets before it hold."""
    passed = 0
    for bucket, n in buckets:
        if passed + n > offset:
            return bucket, passed
        passed += n
    return None


def lead_search(
    *,
    leads: QuerySet[Lead],
    q: str,
    fields: tuple[str, ...] = V1_SEARCH_FIELDS,
    status: str | None = None,
    order_by: tuple[str, ...] = ("-last_active_at", "-id"),
    columns: tuple[str, ...] = SEARCH_COLUMNS,
    page: int = 1,
    limit: int = 25,
) -> Page:
    """Leads with ``q`` in any of ``fields`` (case-insensitive substring), one page.

    One statement: a materialized CTE collects the matches once (on PostgreSQL through the
    trigram indexes of migration 0002), and the page and the total are both read from it.
    Without that fence PostgreSQL may rather walk the last-activity index across every lead of
    the tenant to spare itself a sort of the matches. A page past the end costs a second query
    for the total. Rows carry ``match_field`` (see ``match_field``).
    """
    condition = Q()
    for field in fields:
        condition |= Q(**{f"{field}__icontains": q})
    matching = leads.filter(condition)
    if status:
        matching = matching.filter(v1_status=status)
    offset = (page - 1) * limit

    sort_columns = [key.lstrip("-") for key in order_by if key.lstrip("-") not in columns]
    inner = matching.order_by().values(*columns, *sort_columns, **timestamp_expressions())
    inner_sql, params = inner.query.sql_with_params()
    quote = connection.ops.quote_name
    order_sql = ", ".join(
        f"{quote(key.lstrip('-'))} {'DESC' if key.startswith('-') else 'ASC'}" for key in order_by
    )
    fence = "MATERIALIZED " if connection.vendor == "postgresql" else ""
    sql = (
        f"WITH matches AS {fence}({inner_sql}) "
        f"SELECT matches.*, (SELECT COUNT(*) FROM matches) AS search_total FROM matches "
        f"ORDER BY {order_sql} LIMIT %s OFFSET %s"
    )
    matches = Lead.objects.raw(sql, (*params, limit, offset))
    if connection.vendor == "postgresql" and not _TRIGRAM.search(q):
        # Without three letters or digits in a row pg_trgm has no trigram to look up: each
        # "index scan" would return every row, then recheck them all. Reading the tenant's
        # rows once is three times faster, so the planner is told not to use the indexes.
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SET LOCAL enable_bitmapscan = off")
            found = list(matches)
    else:
        found = list(matches)
    rows = []
    for lead in found:
        row = {column: getattr(lead, column) for column in (*columns, *TIMESTAMPS)}
        row["match_field"] = match_field(row, q, fields)
        rows.append(row)
    if found:
        total = found[0].search_total
    elif offset == 0:
        total = 0
    else:
        total = matching.count()
    return Page(items=rows, page=page, limit=limit, total=total)


def match_field(row: dict[str, Any], q: str, fields: tuple[str, ...] = V1_SEARCH_FIELDS) -> str:
    """The first of name, email, company and ``customFields.<key>`` that contains ``q``.

    Python's case folding stands in for the database's; where the two disagree (rare
    characters) the answer falls back to the first searched field that has a value.
    """
    needle = q.upper()
    for field in fields:
        if field == "custom_fields_text":
            key = _matching_custom_key(row.get("custom_fields") or {}, needle)
            if key is not None:
                return f"customFields.{key}"
        elif needle in (row.get(field) or "").upper():
            return _MATCH_FIELDS[field]
    for field in fields:
        if row.get(field):
            return "customFields" if field == "custom_fields_text" else _MATCH_FIELDS[field]
    return _MATCH_FIELDS[fields[0]]


def _matching_custom_key(custom_fields: dict[str, Any], needle: str) -> str | None:
    for key, value in custom_fields.items():
        if needle in custom_fields_text({key: value}).upper():
            return key
    return None
