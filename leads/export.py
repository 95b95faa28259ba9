"""The staff's CSV file of the list of leads: the leads a filtered view of the dashboard's list
shows (its search, status and source, in its order), written as they are read, so that a
million leads pass through in chunks and never sit in memory (docs/leads.md, "CSV export").

On PostgreSQL the database writes the CSV itself (``COPY (SELECT ...) TO STDOUT WITH (FORMAT
csv)``), and the server only passes its bytes on, in chunks of ``CHUNK_BYTES``: the rows are
never turned into Python values. On SQLite (the embedded default) the same statement's rows are
read through Django's cursor ``ROWS_PER_FETCH`` at a time and written by Python's ``csv``
module. Either way one statement computes every cell, guard against formulas included, so both
write the same file.

**Formulas.** A spreadsheet opened on the file runs a cell that starts with ``=``, ``+``,
``-`` or ``@`` as a formula (and drops a leading tab or carriage return before looking), so a
lead named ``=HYPERLINK(...)`` would run in the staff's spreadsheet. Such a cell is written with
a ``'`` before it (OWASP's "CSV injection"): Excel, LibreOffice and Google Sheets show the text.
A phone number in E.164 (``+14155550123``) is written ``'+14155550123`` for the same reason.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator

from django.db import connection

from core.sql import iso_timestamp_sql
from core.sql import quote as _q
from tenants.models import Tenant, User

from . import selectors
from .models import Lead

# (column of the file, what it holds): the order of the file's columns, and docs/leads.md's.
COLUMNS: tuple[tuple[str, str], ...] = (
    ("id", "the lead's id on the v1 surface (lead_<32 hex>)"),
    ("email", "the address, in the form leads keep it"),
    ("name", ""), ("company", ""), ("title", ""), ("phone", ""),
    ("status", "the stored status (new, qualifying, qualified, booked, contacted, nurturing, "
               "converted, lost)"),
    ("score", "0-100"),
    ("source", "chat, api, import, form"),
    ("tags", "the tags, separated by '; '"),
    ("owner", "the email address of the member of the staff it is assigned to"),
    ("custom_fields", "the custom fields as one JSON object (empty when there is none)"),
    ("last_intent", "what the agent last understood the person wanted"),
    ("first_seen_at", "ISO 8601, UTC"), ("last_active_at", "ISO 8601, UTC"),
    ("created_at", "ISO 8601, UTC"), ("updated_at", "ISO 8601, UTC"),
)
# A byte order mark first, so that Excel reads the file as UTF-8 (without it, as the
# computer's code page); lines end with LF, as PostgreSQL's COPY ends them.
HEADER = "\ufeff" + ",".join(name for name, _ in COLUMNS) + "\n"
CHUNK_BYTES = 256 * 1024  # what the server sends at once
ROWS_PER_FETCH = 2000  # SQLite: rows read from the cursor at once
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def _guarded(sql: str) -> str:
    """``sql`` (a text expression) with a ``'`` before it when it starts like a formula."""
    starts = ", ".join("E'\\t'" if c == "\t" else "E'\\r'" if c == "\r" else f"'{c}'"
                       for c in FORMULA_STARTS)
    if connection.vendor == "sqlite":
        starts = ", ".join("char(9)" if c == "\t" else "char(13)" if c == "\r" else f"'{c}'"
                           for c in FORMULA_STARTS)
        return f"(CASE WHEN substr({sql}, 1, 1) IN ({starts}) THEN '''' || {sql} ELSE {sql} END)"
    return f"(CASE WHEN LEFT({sql}, 1) IN ({starts}) THEN '''' || {sql} ELSE {sql} END)"


def _select_list() -> str:
    postgres = connection.vendor == "postgresql"
    if postgres:
        lead_id = "'lead_' || REPLACE(CAST(\"id\" AS TEXT), '-', '')"
        tags = ("(CASE WHEN \"tags\" = '[]'::jsonb THEN '' ELSE " + _guarded(
            "array_to_string(ARRAY(SELECT jsonb_array_elements_text(\"tags\")), '; ')") + " END)")
        custom = ("(CASE WHEN \"custom_fields\" = '{}'::jsonb THEN '' "
                  "ELSE CAST(\"custom_fields\" AS TEXT) END)")
    else:
        lead_id = "'lead_' || \"id\""  # SQLite keeps UUIDs as 32 hex digits
        tags = ("(CASE WHEN \"tags\" = '[]' THEN '' ELSE " + _guarded(
            "(SELECT group_concat(\"value\", '; ') FROM json_each(\"tags\"))") + " END)")
        custom = "(CASE WHEN \"custom_fields\" = '{}' THEN '' ELSE \"custom_fields\" END)"
    cells = [
        lead_id,
        *(_guarded(_q(column)) for column in ("email", "name", "company", "title", "phone")),
        '"status"', '"score"', '"source"', tags,
        _guarded('COALESCE("owner_email", \'\')'),
        custom,
        _guarded('"last_intent"'),
        *(iso_timestamp_sql(_q(column)) for column in
          ("first_seen_at", "last_active_at", "created_at", "updated_at")),
    ]
    return ", ".join(cells)


def export_statement(*, tenant: Tenant, livemode: bool, q: str = "",
                     stored_status: str | None = None, source: str | None = None,
                     sort: str = "newest") -> tuple[str, list]:
    """The one statement of the file's rows, and its parameters: the leads that
    ``selectors.lead_find`` lists for the same filters, in the same order, one row each with
    the cells of ``COLUMNS``. The owners' addresses come from a join with the tenant's staff
    (a few rows), not a lookup per lead."""
    where, params = selectors.staff_filter_sql(tenant=tenant, livemode=livemode, q=q,
                                               stored_status=stored_status, source=source)
    sort_by, descending, _ = selectors.SORTS[sort]
    column = _q(selectors.SORT_COLUMNS[sort_by])
    direction = "DESC" if descending else "ASC"
    users = _q(User._meta.db_table)
    tenant_id = Tenant._meta.pk.get_db_prep_value(tenant.pk, connection)
    sql = (f"SELECT {_select_list()} FROM {_q(Lead._meta.db_table)} "
           f'LEFT JOIN (SELECT "id" AS "owner_id", "email" AS "owner_email" FROM {users} '
           f'WHERE "tenant_id" = %s) AS "owners" ON "owners"."owner_id" = "assigned_to_id" '
           f"WHERE {' AND '.join(where)} ORDER BY {column} {direction}, \"id\" {direction}")
    return sql, [tenant_id, *params]


def export_chunks(*, tenant: Tenant, livemode: bool, q: str = "",
                  stored_status: str | None = None, source: str | None = None,
                  sort: str = "newest") -> Iterator[bytes]:
    """The file, UTF-8, in chunks of about ``CHUNK_BYTES``: the header, then one line per lead.
    A generator: the statement runs at its first step, and closing it early (a client that
    left) cancels the statement."""
    sql, params = export_statement(tenant=tenant, livemode=livemode, q=q,
                                   stored_status=stored_status, source=source, sort=sort)
    yield HEADER.encode()
    if connection.vendor == "postgresql":
        yield from _copied(sql, params)
    else:
        yield from _written(sql, params)


def _copied(sql: str, params: list) -> Iterator[bytes]:
    """PostgreSQL's own CSV of the statement (psycopg binds the parameters client-side, as
    COPY takes none), its rows gathered into chunks."""
    connection.ensure_connection()
    with connection.connection.cursor() as cursor, \
            cursor.copy(f"COPY ({sql}) TO STDOUT WITH (FORMAT csv)", params) as copy:
        parts: list[bytes] = []
        size = 0
        for row in copy:
            parts.append(bytes(row))
            size += len(row)
            if size >= CHUNK_BYTES:
                yield b"".join(parts)
                parts, size = [], 0
        if parts:
            yield b"".join(parts)


class _Lines:
    """Where ``csv.writer`` writes: the lines of one chunk."""

    def __init__(self) -> None:
        self.parts: list[str] = []

    def write(self, text: str) -> None:
        self.parts.append(text)

    def take(self) -> bytes:
        chunk, self.parts = "".join(self.parts).encode(), []
        return chunk


def _written(sql: str, params: list) -> Iterator[bytes]:
    lines = _Lines()
    writer = csv.writer(lines, lineterminator="\n")
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        while rows := cursor.fetchmany(ROWS_PER_FETCH):
            writer.writerows(rows)
            yield lines.take()
