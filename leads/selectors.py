"""Reads of leads: the lists of both surfaces and search.

Both take the tenant and mode of the caller (``owner()`` of the API base view) and return
rows as plain dicts of ``presenters.COLUMNS`` and ``presenters.TIMESTAMPS`` (formatted by the
database) so that pages render without model instances. Totals of lists come from
``LeadDailyCount``, never from a ``COUNT`` over the leads (docs/performance.md).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

import orjson
from django.db import connection, transaction
from django.db.models import BooleanField, Count, Q, Value
from django.db.models.expressions import RawSQL
from django.db.models.functions import Lower

from core.pagination import Page
from core.sql import execute_with_values, fetch_all, fetch_one, iso_timestamp_sql, prepared_cursor
from core.sql import quote as _q
from tenants.models import Tenant, User

from . import search
from .models import (
    Lead,
    LeadBulkJob,
    LeadCount,
    LeadDailyCount,
    LeadImport,
    LeadImportRow,
    LeadScoreCount,
    LeadSearch,
    LeadSort,
    LeadUpdatedDayCount,
    SavedView,
)
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
MAX_LIMIT = 100  # the largest page of either surface
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
    # Prepared: the only index of the counts, (tenant, mode, day, status, source), serves
    # every tenant alike, so a plan made without the values is the plan made with them.
    return int(fetch_one(sql, params, prepared=True)[0] or 0)


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
    with prepared_cursor() as cursor:
        execute_with_values(cursor, sql, params)
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
    tenant: Tenant,
    livemode: bool,
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
    """The tenant's leads in this mode with ``q`` in any of ``fields`` (case-insensitive
    substring), one page; only those in ``status`` (a v1 word) or ``stored_status``, and from
    ``source``, when given. ``fields`` are ``V1_SEARCH_FIELDS`` or ``LEGACY_SEARCH_FIELDS``;
    ``order_by`` is a sort column, descending, then ``-id``. Rows carry ``match_field`` (see
    ``match_field``).

    The search rows of ``leads.search`` answer, two ways (docs/decisions.md, "Lead search
    reads its own tables"):

    - **Many matches.** When the word counts know the exact total (``search.word_total``,
      no filter) and the matches are dense enough that walking the search rows in the page's
      order reaches the page sooner than collecting every match would, the page walks the sort
      index of the search rows and stops at its end (``_walked_page``).
    - **Otherwise** one statement: a materialized CTE collects the matches once (on PostgreSQL
      through the tenant-prefixed GIN indexes), holding only their ids and sort keys; the total
      is counted from it, and only the page's rows are read from the leads and formatted.
      Without that fence PostgreSQL may rather walk a sort index across every lead of the
      tenant to spare itself a sort of the matches. A page past the end costs a second query
      for the total.
    """
    offset = (page - 1) * limit
    if not (status or stored_status or source) and order_by[0] in _WALKED_ORDERS:
        walked = _walked_page(tenant=tenant, livemode=livemode, q=q, fields=fields,
                              order_by=order_by, columns=columns, page=page, limit=limit)
        if walked is not None:
            return walked
    inner_sql, params = _search_matches(tenant=tenant, livemode=livemode, q=q, fields=fields,
                                        status=status, stored_status=stored_status,
                                        source=source, order_by=order_by)
    sql = _search_sql(inner_sql, order_by=order_by, columns=columns)
    rows = _lead_rows(sql, [*params, limit, offset])
    total = rows[0]["search_total"] if rows else 0
    for row in rows:
        del row["search_total"]
        row["match_field"] = match_field(row, q, fields)
    if not rows and offset:
        total = int(fetch_one(f"SELECT COUNT(*) FROM ({inner_sql}) AS matches", params)[0])
    return Page(items=rows, page=page, limit=limit, total=total)


# The orders a walk of the search rows can follow: their own sort indexes, descending.
_WALKED_ORDERS = ("-last_active_at", "-created_at")
# The sort keys the search rows carry beside their text; any other is read from the lead.
_SEARCH_ROW_KEYS = ("created_at", "last_active_at")


def _walked_page(*, tenant: Tenant, livemode: bool, q: str, fields: tuple[str, ...],
                 order_by: tuple[str, ...], columns: tuple[str, ...], page: int,
                 limit: int) -> Page | None:
    """The page and its total when the word counts know the total and a walk of the search
    rows in the page's order is the cheaper way to the page; else None."""
    if search.needs_lead_columns(q):
        return None
    known = search.word_total(tenant_id=tenant.pk, livemode=livemode, q=q,
                              with_custom_fields="custom_fields_text" in fields)
    if known is None:
        return None
    total, leads = known
    offset = (page - 1) * limit
    if offset >= total:
        return Page(items=[], page=page, limit=limit, total=total)
    # A walk reads about (offset + limit) * leads / total search rows, each from a page of its
    # own; collecting the matches reads each of them too, but several share a page: the walk
    # must be the shorter by half (measured at a million leads, docs/performance.md). Reckoned
    # with the largest limit, so that a page's queries do not depend on its limit.
    if 2 * page * MAX_LIMIT * leads >= total * total:
        return None
    rows = _walk_rows(tenant=tenant, livemode=livemode, q=q, fields=fields, order_by=order_by,
                      columns=columns, limit=limit, offset=offset)
    return Page(items=rows, page=page, limit=limit, total=total)


def _walk_rows(*, tenant: Tenant, livemode: bool, q: str, fields: tuple[str, ...],
               order_by: tuple[str, ...], columns: tuple[str, ...], limit: int,
               offset: int) -> list[dict[str, Any]]:
    """One page of the matches, found by walking the search rows' sort index (``lead_search_
    active`` or ``lead_search_created``) in the page's order. PostgreSQL is told to take that
    walk: its estimate of how many rows a substring matches is a guess, and collecting and
    sorting every match instead is what this path avoids. The same guess prices the walk high
    enough for a parallel plan and JIT compilation, which cost more than the walk itself (20-25
    ms of compiling and two workers started, for a walk of a few milliseconds): both are off
    for it too."""
    where, params = _scope(tenant, livemode)
    condition, condition_params = search.match_condition(
        q, with_custom_fields="custom_fields_text" in fields)
    where.append(condition)
    key = _q(_DB_COLUMNS[order_by[0].lstrip("-")])
    table = _q(Lead._meta.db_table)
    order = f"{key} DESC, \"id\" DESC"
    sql = (f"SELECT {_select_list(columns)} FROM {table} WHERE \"id\" IN ("
           f"SELECT \"lead_id\" FROM {_q(LeadSearch._meta.db_table)} "
           f"WHERE {' AND '.join(where)} ORDER BY {key} DESC, \"lead_id\" DESC "
           f"LIMIT %s OFFSET %s) ORDER BY {order}")
    params += [*condition_params, limit, offset]
    if connection.vendor == "postgresql":
        nested = connection.in_atomic_block
        with transaction.atomic():
            fetch_one("SELECT set_config('enable_seqscan', 'off', true), "
                      "set_config('enable_bitmapscan', 'off', true), "
                      "set_config('jit', 'off', true), "
                      "set_config('max_parallel_workers_per_gather', '0', true)", [])
            rows = _lead_rows(sql, params)
            # The settings end with this transaction; inside a caller's, rolling back to the
            # savepoint ends them here (a read has nothing else to lose). Not otherwise: a
            # rollback also forgets the connection's prepared statements (core.sql).
            if nested:
                transaction.set_rollback(True)
    else:
        rows = _lead_rows(sql, params)
    for row in rows:
        row["match_field"] = match_field(row, q, fields)
    return rows


def _search_matches(*, tenant: Tenant, livemode: bool, q: str, fields: tuple[str, ...],
                    status: str | None, stored_status: str | None, source: str | None,
                    order_by: tuple[str, ...]) -> tuple[str, list[Any]]:
    """The statement of the matches' ids (as ``id``) and sort keys, and its parameters."""
    keys = [key.lstrip("-") for key in order_by if key.lstrip("-") != "id"]
    where, params = _scope(tenant, livemode)
    statuses = [*(stored_for_v1_filter(status) if status else []),
                *([stored_status] if stored_status else [])]
    if statuses:
        where.append(f'"status" IN ({", ".join(["%s"] * len(statuses))})')
        params += statuses
    if source:
        where.append('"source" = %s')
        params.append(source)
    if search.needs_lead_columns(q):
        condition, condition_params = _lead_columns_condition(q, fields)
        table, id_column = _q(Lead._meta.db_table), '"id"'
    else:
        condition, condition_params = search.match_condition(
            q, with_custom_fields="custom_fields_text" in fields)
        table, id_column = _q(LeadSearch._meta.db_table), '"lead_id"'
    where.append(condition)
    params += condition_params
    selected = ", ".join([f'{id_column} AS "id"',
                          *(_sort_key(key, table, id_column) for key in keys)])
    return f"SELECT {selected} FROM {table} WHERE {' AND '.join(where)}", params


def _sort_key(key: str, table: str, id_column: str) -> str:
    """A sort key of the matches: a column of the search rows, or else the lead's own, read
    for each match by its primary key (the staff's list sorted by score or by update)."""
    column = _q(_DB_COLUMNS[key])
    if table == _q(Lead._meta.db_table) or key in _SEARCH_ROW_KEYS:
        return column
    leads = _q(Lead._meta.db_table)
    return (f"(SELECT {leads}.{column} FROM {leads} WHERE {leads}.\"id\" = "
            f"{table}.{id_column}) AS {column}")


def _lead_columns_condition(q: str, fields: tuple[str, ...]) -> tuple[str, list[Any]]:
    """``q`` in any of ``fields`` of the lead itself: for the rare term with a control character
    in it (``search.needs_lead_columns``), as the search rows cannot tell a match inside one
    value from one across two."""
    escape = " ESCAPE '\\'" if connection.vendor == "sqlite" else ""
    condition = " OR ".join(f"UPPER({_q(_DB_COLUMNS[field])}) LIKE UPPER(%s){escape}"
                            for field in fields)
    return f"({condition})", [f"%{connection.ops.prep_for_like_query(q)}%"] * len(fields)


def _search_sql(inner_sql: str, *, order_by: tuple[str, ...], columns: tuple[str, ...]) -> str:
    """The one statement of a search page (its last two parameters, LIMIT and OFFSET, to add):
    the matches' ids and sort keys in a materialized CTE, their count, and the page's rows."""
    keys = [key.lstrip("-") for key in order_by]
    order = ", ".join(f"{_q(_DB_COLUMNS[key])} {'DESC' if sort.startswith('-') else 'ASC'}"
                      for key, sort in zip(keys, order_by, strict=True))
    fence = "MATERIALIZED " if connection.vendor == "postgresql" else ""
    table = _q(Lead._meta.db_table)
    return (
        f"WITH matches AS {fence}({inner_sql}) "
        f"SELECT {_select_list(columns)}, (SELECT COUNT(*) FROM matches) AS search_total "
        f"FROM {table} WHERE \"id\" IN ("
        f"SELECT \"id\" FROM matches ORDER BY {order} LIMIT %s OFFSET %s) ORDER BY {order}"
    )


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

# The staff's orders (``LeadSort``): the list's sort column and direction, and the same order
# for a search.
SORTS: dict[str, tuple[str, bool, tuple[str, str]]] = {
    LeadSort.NEWEST: ("createdAt", True, ("-created_at", "-id")),
    LeadSort.OLDEST: ("createdAt", False, ("created_at", "id")),
    LeadSort.UPDATED: ("updatedAt", True, ("-updated_at", "-id")),
    LeadSort.SCORE: ("score", True, ("-score", "-id")),
}


def lead_find(
    *,
    tenant: Tenant,
    livemode: bool,
    q: str = "",
    stored_status: str | None = None,
    source: str | None = None,
    sort: str = LeadSort.NEWEST,
    page: int = 1,
    limit: int = 25,
) -> Page:
    """The tenant's leads in this mode in the order ``sort`` names (a ``LeadSort``), one page
    of ``COLUMNS`` rows: a search of name, email, company and custom fields when ``q`` is
    given, else the list (the staff dashboard's). ``stored_status`` (one stored status, not a
    surface's word) and ``source`` filter the query itself, so pages are full and the total
    counts only the matching leads."""
    q = q.strip()
    sort_by, descending, order_by = SORTS[sort]
    if not q:
        return lead_list(tenant=tenant, livemode=livemode,
                         filters=LeadFilters(stored_status=stored_status, source=source),
                         sort_by=sort_by, descending=descending, page=page, limit=limit)
    return lead_search(tenant=tenant, livemode=livemode, q=q, fields=V1_SEARCH_FIELDS,
                       stored_status=stored_status, source=source, columns=COLUMNS,
                       order_by=order_by, page=page, limit=limit)


def staff_filter_sql(*, tenant: Tenant, livemode: bool, q: str = "",
                     stored_status: str | None = None,
                     source: str | None = None) -> tuple[list[str], list[Any]]:
    """The conditions (on the lead table's columns, unqualified) and parameters that choose the
    leads ``lead_find`` lists for the same filters: the CSV export and the bulk actions on "all
    the leads matching the filter" act on exactly the leads the staff saw counted."""
    where, params = _lead_where(tenant, livemode,
                                LeadFilters(stored_status=stored_status, source=source))
    q = q.strip()
    if not q:
        return where, params
    if search.needs_lead_columns(q):
        condition, condition_params = _lead_columns_condition(q, V1_SEARCH_FIELDS)
        return [*where, condition], [*params, *condition_params]
    scope, scope_params = _scope(tenant, livemode)
    condition, condition_params = search.match_condition(q, with_custom_fields=True)
    where.append(f'"id" IN (SELECT "lead_id" FROM {_q(LeadSearch._meta.db_table)} '
                 f"WHERE {' AND '.join([*scope, condition])})")
    return where, [*params, *scope_params, *condition_params]


def lead_batch_matching(*, tenant: Tenant, livemode: bool, q: str = "",
                        stored_status: str | None = None, source: str | None = None,
                        after: tuple[datetime, uuid.UUID] | None = None,
                        limit: int = 100) -> list[Lead]:
    """The next ``limit`` of the leads ``lead_find`` lists for these filters, newest first,
    from after the lead ``after`` names (its creation time and id): the batches of a bulk
    action. Walking by the key rather than by page keeps its place while the action moves
    leads out of the filter (a status set on leads filtered by status)."""
    where, params = staff_filter_sql(tenant=tenant, livemode=livemode, q=q,
                                     stored_status=stored_status, source=source)
    leads = Lead.objects.filter(tenant=tenant, livemode=livemode).filter(
        RawSQL(" AND ".join(f"({condition})" for condition in where), params,
               output_field=BooleanField()))
    if after is not None:
        created_at, lead_id = after
        leads = leads.filter(Q(created_at__lt=created_at) | Q(created_at=created_at,
                                                               id__lt=lead_id))
    return list(leads.order_by("-created_at", "-id")[:limit])


def leads_of(*, tenant: Tenant, livemode: bool, lead_ids: list[uuid.UUID]) -> list[Lead]:
    """The tenant's leads in this mode among ``lead_ids`` (others' ids are left out), newest
    first."""
    return list(Lead.objects.filter(tenant=tenant, livemode=livemode, pk__in=lead_ids)
                .order_by("-created_at", "-id"))


def lead_get(*, tenant: Tenant, livemode: bool, lead_id: uuid.UUID) -> Lead | None:
    """One lead of the tenant in this mode (with its assignee), or None."""
    return (Lead.objects.filter(tenant=tenant, livemode=livemode, pk=lead_id)
            .select_related("assigned_to").first())


def lead_with_email(*, tenant: Tenant, livemode: bool, email: str) -> Lead | None:
    """The tenant's lead in this mode whose address is ``email`` in its kept form
    (``core.emails``), compared as the unique index compares (``lead_email_unique_ci``)."""
    return (Lead.objects.alias(email_lower=Lower("email"))
            .filter(tenant=tenant, livemode=livemode, email_lower=Lower(Value(email))).first())


def lead_newest(*, tenant: Tenant, livemode: bool, limit: int) -> list[Lead]:
    """The tenant's most recently created leads in this mode."""
    return list(Lead.objects.filter(tenant=tenant, livemode=livemode)
                .order_by("-created_at", "-id")[:limit])


def lead_counts_since(*, tenant: Tenant, livemode: bool, since: datetime) -> dict[str, int]:
    """How many leads were created since ``since`` (``created``) and how many of them are now
    qualified or booked (``qualified``), in one query."""
    return Lead.objects.filter(tenant=tenant, livemode=livemode, created_at__gte=since).aggregate(
        created=Count("id"), qualified=Count("id", filter=Q(status__in=["qualified", "booked"])))


# --- bulk actions, imports and saved views (the staff dashboard) ------------------------------

def bulk_job_get(*, tenant: Tenant, livemode: bool, job_id: uuid.UUID) -> LeadBulkJob | None:
    return LeadBulkJob.objects.filter(tenant=tenant, livemode=livemode, pk=job_id).first()


def lead_import_get(*, tenant: Tenant, livemode: bool, import_id: uuid.UUID) -> LeadImport | None:
    return LeadImport.objects.filter(tenant=tenant, livemode=livemode, pk=import_id).first()


def lead_imports_recent(*, tenant: Tenant, livemode: bool, limit: int = 10) -> list[LeadImport]:
    """The tenant's latest imports in this mode, without their rows or errors."""
    return list(LeadImport.objects.filter(tenant=tenant, livemode=livemode)
                .defer("errors", "headers", "mapping").order_by("-created_at", "-id")[:limit])


def lead_import_first_rows(*, lead_import: LeadImport, limit: int) -> list[LeadImportRow]:
    """The first rows of an import (one the caller already holds, so already scoped)."""
    return list(lead_import.rows.order_by("number")[:limit])


def saved_views(*, tenant: Tenant, user: User | None) -> list[SavedView]:
    """The views ``user`` may choose (None: the admin token): their own and the team's shared
    ones, by name."""
    return list(SavedView.objects.filter(tenant=tenant)
                .filter(Q(shared=True) | _own_views(user)).order_by("name", "id"))


def saved_view_get(*, tenant: Tenant, user: User | None, view_id: uuid.UUID) -> SavedView | None:
    """One view ``user`` may choose, or None (another person's personal view, another
    tenant's)."""
    return (SavedView.objects.filter(tenant=tenant, pk=view_id)
            .filter(Q(shared=True) | _own_views(user)).first())


def _own_views(user: User | None) -> Q:
    return Q(owner=user) if user is not None else Q(owner__isnull=True)
