"""Statements written out by hand for the few hottest reads, and rows read back into models.

The ORM compiles a statement on every call, and on this service's busiest paths that took
longer than the database takes to run it (docs/performance.md, "The serving path"). Those few
statements are written here once; ``ModelColumns`` reads their rows into model instances with
the converters the ORM itself would apply, so the instances are the ORM's in every respect.

The hottest of them are also prepared on PostgreSQL (``prepared_cursor``), so that a connection
parses and plans each of them once, not on every request. psycopg forgets a connection's
prepared statements at any rollback, and prepares them again on their next runs.
"""

from __future__ import annotations

from typing import Any
from weakref import WeakKeyDictionary

import psycopg
from django.db import DEFAULT_DB_ALIAS, NotSupportedError, connection, connections
from django.db.models import Model


def quote(name: str) -> str:
    return f'"{name}"'  # PostgreSQL and SQLite quote names alike


def iso_timestamp_sql(sql: str) -> str:
    """SQL that formats the timestamp expression ``sql`` (free of parameters) as the API writes
    it, exactly as ``core.timestamps.format_timestamp`` does (UTC, milliseconds truncated,
    ``Z``). A page of 100 leads carries 400 timestamps; turning each into a ``datetime`` and
    back into text in Python cost about a third of the request's CPU."""
    if connection.vendor == "postgresql":
        # to_char's MS truncates, as Python's isoformat(timespec="milliseconds") does.
        return f"to_char(({sql}) AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')"
    if connection.vendor == "sqlite":
        # Django stores "YYYY-MM-DD HH:MM:SS[.ffffff]" in UTC; strftime's %f would round.
        text = f"({sql})"
        return (f"(substr({text}, 1, 10) || 'T' || substr({text}, 12, 8) || '.' || "
                f"substr({text} || '.000000', 21, 3) || 'Z')")
    raise NotSupportedError(f"iso_timestamp_sql is not implemented for {connection.vendor}")


class ModelColumns:
    """Every concrete column of ``model`` under ``alias``: the select list, and the reading of
    the matching slice of a row into an instance."""

    def __init__(self, model: type[Model], alias: str):
        self.model = model
        self.alias = alias
        self.fields = model._meta.concrete_fields
        self.attnames = [f.attname for f in self.fields]
        self.sql = ", ".join(f"{quote(alias)}.{quote(f.column)}" for f in self.fields)
        # The converters of each column, found once per connection (each thread has its own).
        self._converters: WeakKeyDictionary[Any, list[tuple[int, Any, list]]] = (
            WeakKeyDictionary())

    def __len__(self) -> int:
        return len(self.fields)

    def _converters_for(self, wrapper) -> list[tuple[int, Any, list]]:
        found = self._converters.get(wrapper)
        if found is None:
            found = []
            for index, field in enumerate(self.fields):
                column = field.get_col(self.alias)
                converters = (wrapper.ops.get_db_converters(column)
                              + field.get_db_converters(wrapper))
                if converters:
                    found.append((index, column, converters))
            self._converters[wrapper] = found
        return found

    def load(self, values: tuple | list) -> Model:
        """The instance for ``values``, the row's slice that ``sql`` selected."""
        wrapper = connections[DEFAULT_DB_ALIAS]  # this thread's connection
        loaded = list(values)
        for index, column, converters in self._converters_for(wrapper):
            value = loaded[index]
            for convert in converters:
                value = convert(value, column, wrapper)
            loaded[index] = value
        return self.model.from_db(wrapper.alias, self.attnames, loaded)


def commit_without_waiting_for_the_disk() -> None:
    """Called inside a transaction: on PostgreSQL, its commit returns without waiting for the
    WAL to reach the disk (``synchronous_commit = off`` for this transaction alone). Only for a
    transaction that a later, ordinary commit of the same request follows before anything is
    promised to the client: WAL is flushed in order, so that commit's flush makes this one
    durable too (docs/decisions.md, "Chat: the turn's first commit does not wait for the
    disk")."""
    if connection.vendor == "postgresql":
        if not connection.in_atomic_block:
            raise RuntimeError("commit_without_waiting_for_the_disk() outside a transaction")
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL synchronous_commit = off")


def prepared_cursor():
    """A cursor for a statement that PostgreSQL may plan once per connection and run again with
    other values: parameters bound by the server, the statement prepared from its second run
    (``prepare_threshold``, settings), which spares its parsing and planning, a tenth of a
    millisecond for the API key's lookup.

    Only for statements whose best plan no value can change, such as a lookup by a unique key:
    a prepared statement may be given a generic plan, made without its values, which for a
    tenant's rows would be the plan of a typical tenant, not of the largest. Elsewhere (SQLite),
    the usual cursor."""
    prepared = getattr(connection, "prepared_cursor", None)
    return prepared() if prepared is not None else connection.cursor()


def execute_with_values(cursor, sql: str, params: list[Any]) -> None:
    """Runs ``sql`` on ``cursor`` (a :func:`prepared_cursor`) with its values written into the
    text, as Django's own statements are sent, on PostgreSQL: the statement is then planned
    with its values, and prepared for them alone, so that the same text run again on this
    connection is neither parsed nor planned again. For the hottest statements whose plan
    depends on the values, such as a page of a tenant's rows (the largest tenant's plan is not
    the smallest's); a text that does not come back is never prepared (``prepare_threshold``)."""
    if connection.vendor != "postgresql":
        cursor.execute(sql, params)
        return
    cursor.execute(psycopg.ClientCursor(cursor.cursor.connection).mogrify(sql, params))


def fetch_one(sql: str, params: list[Any], *, prepared: bool = False) -> tuple | None:
    """The first row of ``sql``; ``prepared``: run it on :func:`prepared_cursor`."""
    with prepared_cursor() if prepared else connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchone()


def fetch_all(sql: str, params: list[Any]) -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def add_to_counters(model: type[Model], *, key: tuple[str, ...], counters: tuple[str, ...],
                    deltas: dict[tuple[Any, ...], dict[str, int]]) -> None:
    """Adds ``deltas`` (key values -> {counter: change}) to the counter rows of ``model``,
    creating the rows that do not exist yet: one ``INSERT … ON CONFLICT DO UPDATE`` for all keys.

    ``key`` names the fields of a unique constraint, ``counters`` every counter column (a new
    row starts with the changes, the others at 0). Keys go in sorted order, so two transactions
    moving counts between the same rows take their locks in the same order and cannot deadlock
    on them. Keys whose changes are all zero are left alone.
    """
    changes = sorted((values, change) for values, change in deltas.items() if any(change.values()))
    if not changes:
        return
    opts = model._meta
    keys = [opts.get_field(name) for name in key]
    table = quote(opts.db_table)
    key_columns = ", ".join(quote(field.column) for field in keys)
    row = "(" + ", ".join(["%s"] * (len(keys) + len(counters))) + ")"
    updates = ", ".join(f"{quote(name)} = {table}.{quote(name)} + EXCLUDED.{quote(name)}"
                        for name in counters)
    params: list[Any] = []
    for values, change in changes:
        params += [field.get_db_prep_save(value, connection)
                   for field, value in zip(keys, values, strict=True)]
        params += [change.get(name, 0) for name in counters]
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {table} ({key_columns}, {', '.join(map(quote, counters))}) "
            f"VALUES {', '.join([row] * len(changes))} "
            f"ON CONFLICT ({key_columns}) DO UPDATE SET {updates}", params)


def add_to_counter_row(model: type[Model], *, key: dict[str, Any], counters: tuple[str, ...],
                       change: dict[str, int], insert: dict[str, Any] | None = None,
                       ) -> dict[str, int]:
    """Adds ``change`` to the counters of ``model``'s row at ``key`` (the fields of a unique
    constraint), creating it with ``insert``'s other columns if it does not exist yet, and
    returns the row's counters after the change: one ``INSERT … ON CONFLICT DO UPDATE …
    RETURNING``. The row stays locked until the transaction ends, so the counters before the
    change are the returned ones minus ``change``, whoever else writes the row."""
    opts = model._meta
    values = {**key, **(insert or {}), **{name: change.get(name, 0) for name in counters}}
    fields = [opts.get_field(name) for name in values]
    table = quote(opts.db_table)
    updates = ", ".join(f"{quote(name)} = {table}.{quote(name)} + EXCLUDED.{quote(name)}"
                        for name in counters)
    params = [field.get_db_prep_save(value, connection)
              for field, value in zip(fields, values.values(), strict=True)]
    row = fetch_one(
        f"INSERT INTO {table} ({', '.join(quote(field.column) for field in fields)}) "
        f"VALUES ({', '.join(['%s'] * len(fields))}) "
        f"ON CONFLICT ({', '.join(quote(opts.get_field(name).column) for name in key)}) "
        f"DO UPDATE SET {updates} RETURNING {', '.join(map(quote, counters))}", params)
    return dict(zip(counters, row, strict=True))
