"""Reads of leads: the lists of both surfaces and search.

The list takes the tenant and mode of the caller (``owner()`` of the API base view);
search takes ``leads``, a queryset the caller has already scoped to one tenant and mode (the
base view's ``get_queryset()``). Both return rows as plain dicts of ``presenters.COLUMNS`` and
``presenters.TIMESTAMPS`` (formatted by the database) so that pages render without model
instances. Totals of lists come from ``LeadDailyCount``, never from a ``COUNT`` over the leads
(docs/performance.md).
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

import orjson
from django.db import connection, transaction
from django.db.models import Count, Q, QuerySet

from core.pagination import Page
from core.sql import fetch_all, fetch_one, iso_timestamp_sql
from core.sql import quote as _q
from tenants.models import Tenant

from .models import Lead, LeadCount, LeadDailyCount, LeadScoreCount, LeadUpdatedDayCount
from .presenters import COLUMNS, TIMESTAMPS
from .text import custom_fields_text
from .vocabulary import stored_for_v1_filter, v1_status

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
    stored_status: str | None = None  # one stored status (the staff dashboard's filter)
    source: str | None = None
    created_from: date | None = None
    created_to: date | None = None


def _day_start(day: date) -> datetime:
    return datetime.combine(day, time.min, tzinfo=UTC)


# --- the list, written out -----------------------------------------------------------------
#
# The list is the API's busiest read, so its statements are written out here instead of being
# built and compiled by the ORM on every request: compiling them took longer than PostgreSQL
# takes to run them (docs/performance.md, "Leads"). Rows come back as the presenters' plain
# dicts, the JSON columns parsed by orjson.

# The count table behind each sort column (docs/performance.md, "Leads").
COUNTS: dict[str, type[LeadCount]] = {
    "created_at": LeadDailyCount, "updated_at": LeadUpdatedDayCount, "score": LeadScoreCount,
}
_DB_COLUMNS = {f.attname: f.column for f in Lead._meta.concrete_fields}
_JSON_COLUMNS = ("tags", "custom_fields")
_UUID_COLUMNS = ("id", "assigned_to_id")  # SQLite gives them as 32 hex digits


def _select_list(columns: tuple[str, ...] = COLUMNS) -> str:
    """``columns`` of the lead table and the formatted ``TIMESTAMPS``, under their row names."""
    selected = [f"{_q(_DB_COLUMNS[name])} AS {_q(name)}" for name in columns]
    selected += [f"{iso_timestamp_sql(_q(column))} AS {_q(key)}"
                 for key, column in TIMESTAMPS.items()]
    return ", ".join(selected)


def _scope(tenant: Tenant, livemode: bool) -> tuple[list[str], list[Any]]:
    tenant_id = Tenant._meta.pk.get_db_prep_value(tenant.pk, connection)
    return ['"tenant_id" = %s', '"livemode" = %s'], [tenant_id, livemode]


def _lead_where(tenant: Tenant, livemode: bool, filters: LeadFilters) -> tuple[list[str], list]:
    where, params = _scope(tenant, livemode)
    adapt = connection.ops.adapt_datetimefield_value
    if filters.status:
        where.append('"v1_status" = %s')
        params.append(filters.status)
    if filters.stored_status:
        # The v1 word too, so that the page reads the status index in order.
        where += ['"v1_status" = %s', '"status" = %s']
        params += [v1_status(filters.stored_status), filters.stored_status]
    if filters.source:
        where.append('"source" = %s')
        params.append(filters.source)
    if filters.created_from:
        where.append('"created_at" >= %s')
        params.append(adapt(_day_start(filters.created_from)))
    if filters.created_to:
        where.append('"created_at" < %s')
        params.append(adapt(_day_start(filters.created_to + timedelta(days=1))))
    return where, params


def _count_where(tenant: Tenant, livemode: bool, filters: LeadFilters) -> tuple[list[str], list]:
    """The rows of a count table that count the leads matching ``filters``. Only the daily
    counts know the creation day: the others are read only without a creation-date filter."""
    where, params = _scope(tenant, livemode)
    if filters.status:
        statuses = stored_for_v1_filter(filters.status)
        where.append(f'"status" IN ({", ".join(["%s"] * len(statuses))})')
        params += statuses
    if filters.stored_status:
        where.append('"status" = %s')
        params.append(filters.stored_status)
    if filters.source:
        where.append('"source" = %s')
        params.append(filters.source)
    adapt = connection.ops.adapt_datefield_value
    if filters.created_from:
        where.append('"day" >= %s')
        params.append(adapt(filters.created_from))
    if filters.created_to:
        where.append('"day" <= %s')
        params.append(adapt(filters.created_to))
    return where, params


def lead_total(*, tenant: Tenant, livemode: bool, filters: LeadFilters = LeadFilters()) -> int:
    """The exact number of the tenant's leads in this mode that match ``filters``."""
    where, params = _count_where(tenant, livemode, filters)
    sql = (f'SELECT SUM("count") FROM {_q(LeadDailyCount._meta.db_table)} '
           f'WHERE {" AND ".join(where)}')
    return int(fetch_one(sql, params)[0] or 0)


def _bucket_counts(column: str, *, tenant: Tenant, livemode: bool, filters: LeadFilters,
                   descending: bool) -> list[tuple[Any, int]] | None:
    """(bucket, leads) of the leads matching ``filters`` in the list's order, for the deep
    pages of ``column``; None where the counts cannot tell (the update-day and score counts
    know no creation day)."""
    model = COUNTS[column]
    if model is not LeadDailyCount and (filters.created_from or filters.created_to):
        return None
    where, params = _count_where(tenant, livemode, filters)
    bucket = _q(model.bucket)
    sql = (f'SELECT {bucket}, SUM("count") FROM {_q(model._meta.db_table)} '
           f'WHERE {" AND ".join(where)} GROUP BY {bucket} '
           f'ORDER BY {bucket} {"DESC" if descending else "ASC"}')
    found = fetch_all(sql, params)
    if model.bucket == "day" and found and isinstance(found[0][0], str):  # SQLite
        return [(date.fromisoformat(day), int(n)) for day, n in found]
    return [(value, int(n)) for value, n in found]


def lead_list(
    *,
    tenant: Tenant,
    livemode: bool,
    filters: LeadFilters = LeadFilters(),
    sort_by: str = "createdAt",
    descending: bool = True,
    page: int = 1,
    limit: int = 25,
) -> Page:
    """One page of the tenant's leads in this mode, in a stable order (the sort column, then
    the id), with the total.

    Two queries: the total (or, for deep pages, the counts per creation day, update day or
    score) and the page. The page query picks the ids with an index-only scan and then reads
    those rows only.
    """
    column = SORT_COLUMNS[sort_by]
    offset = (page - 1) * limit
    where, params = _lead_where(tenant, livemode, filters)
    buckets = (_bucket_counts(column, tenant=tenant, livemode=livemode, filters=filters,
                              descending=descending)
               if offset >= DEEP_OFFSET else None)
    if buckets is not None:
        total = sum(n for _, n in buckets)
        found = _bucket_of_offset(buckets, offset)
        if found is None:
            return Page(items=[], page=page, limit=limit, total=total)
        bucket, passed = found
        # The rows of the buckets before ``bucket`` in this order are exactly ``passed``: skip
        # them by the index's key rather than by OFFSET.
        condition, value = _from_bucket(column, bucket, descending)
        where.append(condition)
        params.append(value)
        offset -= passed
    else:
        total = lead_total(tenant=tenant, livemode=livemode, filters=filters)
        if offset >= total:
            return Page(items=[], page=page, limit=limit, total=total)

    direction = "DESC" if descending else "ASC"
    order = f"{_q(column)} {direction}, \"id\" {direction}"
    table = _q(Lead._meta.db_table)
    sql = (f"SELECT {_select_list()} FROM {table} WHERE \"id\" IN ("
           f"SELECT \"id\" FROM {table} WHERE {' AND '.join(where)} "
           f"ORDER BY {order} LIMIT %s OFFSET %s) ORDER BY {order}")
    return Page(items=_lead_rows(sql, [*params, limit, offset]), page=page, limit=limit,
                total=total)


def _lead_rows(sql: str, params: list) -> list[dict[str, Any]]:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        names = [column[0] for column in cursor.description]
        found = cursor.fetchall()
    rows = [dict(zip(names, values, strict=True)) for values in found]
    _decode_columns(rows, names)
    return rows


def _decode_columns(rows: list[dict[str, Any]], names: list[str]) -> None:
    """Parses the JSON columns of ``rows`` in place, and makes UUIDs of the ids SQLite gives as
    hex digits."""
    json_columns = [name for name in _JSON_COLUMNS if name in names]
    uuid_columns = _hex_uuid_columns(names)
    for row in rows:
        for name in json_columns:
            row[name] = orjson.loads(row[name])
        for name in uuid_columns:
            if row[name] is not None:
                row[name] = uuid.UUID(hex=row[name])


def _hex_uuid_columns(names: list[str]) -> list[str]:
    """The UUID columns among ``names`` that come as hex digits (PostgreSQL's driver gives UUIDs)."""
    return ([name for name in _UUID_COLUMNS if name in names]
            if connection.vendor != "postgresql" else [])


def _from_bucket(column: str, bucket: Any, descending: bool) -> tuple[str, Any]:
    """The condition for the leads at ``bucket`` and after it in the list's order."""
    if column == "score":
        return ('"score" <= %s' if descending else '"score" >= %s'), bucket
    adapt = connection.ops.adapt_datetimefield_value
    if descending:
        return f"{_q(column)} < %s", adapt(_day_start(bucket + timedelta(days=1)))
    return f"{_q(column)} >= %s", adapt(_day_start(bucket))


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
    stored_status: str | None = None,
    source: str | None = None,
    order_by: tuple[str, ...] = ("-last_active_at", "-id"),
    columns: tuple[str, ...] = SEARCH_COLUMNS,
    page: int = 1,
    limit: int = 25,
) -> Page:
    """Leads with ``q`` in any of ``fields`` (case-insensitive substring), one page; only those
    in ``status`` (a v1 word) or ``stored_status``, and from ``source``, when given.

    One statement: a materialized CTE collects the matches once (on PostgreSQL through the
    trigram indexes of migration 0002), holding only their ids and sort keys; the total is
    counted from it, and only the page's rows are read whole and formatted. Without that fence
    PostgreSQL may rather walk the last-activity index across every lead of the tenant to spare
    itself a sort of the matches. A page past the end costs a second query for the total. Rows
    carry ``match_field`` (see ``match_field``).
    """
    matching = _search_matches(leads, q=q, fields=fields, status=status, source=source,
                               stored_status=stored_status)
    offset = (page - 1) * limit
    sql, params = _search_sql(matching, order_by=order_by, columns=columns)
    rows = _search_rows(sql, [*params, limit, offset], q=q)
    total = rows[0]["search_total"] if rows else 0
    for row in rows:
        del row["search_total"]
        row["match_field"] = match_field(row, q, fields)
    if not rows and offset:
        total = matching.count()
    return Page(items=rows, page=page, limit=limit, total=total)


def _search_matches(leads: QuerySet[Lead], *, q: str, fields: tuple[str, ...],
                    status: str | None, source: str | None,
                    stored_status: str | None = None) -> QuerySet[Lead]:
    condition = Q()
    for field in fields:
        condition |= Q(**{f"{field}__icontains": q})
    filters = {"v1_status": status, "status": stored_status, "source": source}
    return leads.filter(condition, **{field: value for field, value in filters.items() if value})


def _search_sql(matching: QuerySet[Lead], *, order_by: tuple[str, ...],
                columns: tuple[str, ...]) -> tuple[str, tuple[Any, ...]]:
    """The one statement of a search page (its last two parameters, LIMIT and OFFSET, to add):
    the matches' ids and sort keys in a materialized CTE, their count, and the page's rows."""
    keys = [key.lstrip("-") for key in order_by]
    inner_sql, params = matching.order_by().values(*dict.fromkeys(["id", *keys])).query.sql_with_params()
    order = ", ".join(f"{_q(_DB_COLUMNS[key])} {'DESC' if sort.startswith('-') else 'ASC'}"
                      for key, sort in zip(keys, order_by, strict=True))
    fence = "MATERIALIZED " if connection.vendor == "postgresql" else ""
    table = _q(Lead._meta.db_table)
    sql = (
        f"WITH matches AS {fence}({inner_sql}) "
        f"SELECT {_select_list(columns)}, (SELECT COUNT(*) FROM matches) AS search_total "
        f"FROM {table} WHERE \"id\" IN ("
        f"SELECT \"id\" FROM matches ORDER BY {order} LIMIT %s OFFSET %s) ORDER BY {order}"
    )
    return sql, params


def _search_rows(sql: str, params: list, *, q: str) -> list[dict[str, Any]]:
    if connection.vendor == "postgresql" and not _TRIGRAM.search(q):
        # Without three letters or digits in a row pg_trgm has no trigram to look up: each
        # "index scan" would return every row, then recheck them all. Reading the tenant's
        # rows once is three times faster, so the planner is told not to use the indexes.
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SET LOCAL enable_bitmapscan = off")
            return _lead_rows(sql, params)
    return _lead_rows(sql, params)


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


def lead_conversation_count(lead: Lead) -> int:
    """How many conversations the lead has had (its single read's ``conversationCount``),
    through the relation the conversations app declares on ``Lead`` (leads stand below
    conversations and do not import them)."""
    return lead.conversations.count()


# --- the staff dashboard ---------------------------------------------------------------------

def lead_find(
    *,
    tenant: Tenant,
    livemode: bool,
    q: str = "",
    stored_status: str | None = None,
    source: str | None = None,
    page: int = 1,
    limit: int = 25,
) -> Page:
    """The tenant's leads in this mode, newest first, one page of ``COLUMNS`` rows: a search of
    name, email, company and custom fields when ``q`` is given, else the list (the staff
    dashboard's). ``stored_status`` (one stored status, not a surface's word) and ``source``
    filter the query itself, so pages are full and the total counts only the matching leads."""
    q = q.strip()
    if not q:
        return lead_list(tenant=tenant, livemode=livemode,
                         filters=LeadFilters(stored_status=stored_status, source=source),
                         page=page, limit=limit)
    return lead_search(leads=Lead.objects.filter(tenant=tenant, livemode=livemode), q=q,
                       fields=V1_SEARCH_FIELDS, stored_status=stored_status, source=source,
                       columns=COLUMNS, order_by=("-created_at", "-id"), page=page, limit=limit)


def lead_get(*, tenant: Tenant, livemode: bool, lead_id: uuid.UUID) -> Lead | None:
    """One lead of the tenant in this mode (with its assignee), or None."""
    return (Lead.objects.filter(tenant=tenant, livemode=livemode, pk=lead_id)
            .select_related("assigned_to").first())


def lead_newest(*, tenant: Tenant, livemode: bool, limit: int) -> list[Lead]:
    """The tenant's most recently created leads in this mode."""
    return list(Lead.objects.filter(tenant=tenant, livemode=livemode)
                .order_by("-created_at", "-id")[:limit])


def lead_counts_since(*, tenant: Tenant, livemode: bool, since: datetime) -> dict[str, int]:
    """How many leads were created since ``since`` (``created``) and how many of them are now
    qualified or booked (``qualified``), in one query."""
    return Lead.objects.filter(tenant=tenant, livemode=livemode, created_at__gte=since).aggregate(
        created=Count("id"), qualified=Count("id", filter=Q(status__in=["qualified", "booked"])))
