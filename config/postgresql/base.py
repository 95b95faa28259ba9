"""Django's PostgreSQL backend, except that a server that cannot be reached fails requests at once
instead of holding each one for the pool's whole timeout (docs/security.md, "Under faults").

With a psycopg pool, Django waits up to the pool's timeout for a connection: right when the pool
is busy, wrong when the server is gone, since every request then waits that long (30 s) for its
503. Here the wait is cut in slices (the pool's own ``timeout`` is one slice, settings); after a
slice in vain, one direct connection, bounded by ``connect_timeout``, tells a busy pool (wait on,
up to ``DB_POOL_TIMEOUT_SECONDS`` in all) from a server that cannot be reached (give up). Then a
breaker (``core.breaker``) fails every new connection at once while a thread of its own tries a
direct connection every ``COOLDOWN_SECONDS``, so that no request waits for a trial; the first
that succeeds closes it. The pool is replaced when the breaker opens, so that the next one
starts afresh when the server is back, instead of after the old one's reconnection backoff
(which grows to minutes).

Django turns these errors into ``django.db.OperationalError``, which both surfaces answer with
503 and ``Retry-After`` (``config/api/errors.py``).

It also lends the cursor of ``core.sql.prepared_cursor``: parameters bound by the server, so
that psycopg prepares a statement run again on the same connection (``prepare_threshold``).

Connections that died while they waited in the pool (a restart, a failover, an outage the process
slept through) never reach a request (docs/security.md, "Under faults"):

- the pool checks a connection with a round trip before it lends it (psycopg_pool's ``check``);
  when one fails, the pool replaces every idle one at once (``ConnectionPool.drain``), since they
  most likely died together, instead of lending them one after another (psycopg waits up to a
  second between two failed checks);
- a connection that breaks on its first statement anyway (between the check and the statement)
  is replaced once, and the statement run again on the new one, where that cannot apply it
  twice: a read, or the first statement of a transaction, which nothing can have committed. A
  write outside a transaction is not run again (the server may have applied it before the
  connection broke): its caller gets the error, a 503 for a request.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextvars import ContextVar

from django.conf import settings
from django.db import InterfaceError, OperationalError
from django.db.backends.postgresql import base
from django.db.backends.signals import connection_created
from django.db.backends.utils import CursorWrapper
from psycopg_pool import ConnectionPool, PoolTimeout

from core.breaker import Breaker

logger = logging.getLogger("salesagent.outages")

# The name ``create_cursor`` is given for a cursor binding its parameters on the server.
PREPARED = "<prepared>"

# While the server cannot be reached, a direct connection is tried this often.
COOLDOWN_SECONDS = 1.0
# A direct connection that succeeded answers for the other waiting threads this long.
REACHABLE_FOR_SECONDS = 1.0

# A caller that would rather not wait DB_POOL_TIMEOUT_SECONDS for a busy pool sets its own bound
# (``pool_wait_at_most``): /api/health, whose answer must come quickly.
_pool_wait: ContextVar[float | None] = ContextVar("pool_wait", default=None)

_breakers: dict[str, Breaker] = {}
_probes: dict[str, _Probe] = {}
_lock = threading.Lock()


class _Probe:
    """A direct connection to the server, made by one thread at a time for all of them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._reached_at = float("-inf")

    def confirm(self, connect: Callable[[], None]) -> None:
        """Raises the error of ``connect`` (a direct connection, made and closed), unless one
        succeeded moments ago or another thread is making one right now (its failure opens the
        breaker for everybody)."""
        if time.monotonic() - self._reached_at < REACHABLE_FOR_SECONDS:
            return
        if not self._lock.acquire(blocking=False):
            return
        try:
            connect()
            self._reached_at = time.monotonic()
        finally:
            self._lock.release()


def _shared(settings_dict: dict) -> tuple[Breaker, _Probe]:
    """The breaker and the probe of one server, shared by every connection to it."""
    server = f"{settings_dict['HOST'] or 'localhost'}:{settings_dict['PORT'] or 5432}"
    with _lock:
        if server not in _breakers:
            _breakers[server] = Breaker(f"the database server {server}", cooldown=COOLDOWN_SECONDS,
                                         kind="database")
            _probes[server] = _Probe()
        return _breakers[server], _probes[server]


@contextlib.contextmanager
def pool_wait_at_most(seconds: float) -> Iterator[None]:
    """Within the block, a connection taken from a busy pool is waited for about ``seconds``
    (whole slices of the pool's timeout, at least one) instead of DB_POOL_TIMEOUT_SECONDS; then
    ``PoolTimeout`` (as ``django.db.OperationalError``), as it is after the usual wait."""
    token = _pool_wait.set(seconds)
    try:
        yield
    finally:
        _pool_wait.reset(token)


class DatabaseOperations(base.DatabaseOperations):
    def last_executed_query(self, cursor, sql, params):
        """The statement as it ran, values written in, as for Django's own statements (what
        the tests and the benchmarks capture): a prepared cursor keeps its values apart."""
        if isinstance(cursor, base.ServerBindingCursor):
            return self.compose_sql(sql, params) if params else sql
        return super().last_executed_query(cursor, sql, params)


def _is_read(sql: object) -> bool:
    """Whether the statement only reads (Django's SELECTs and ours): run twice, it changes
    nothing."""
    return isinstance(sql, str) and sql.lstrip(" \n(")[:7].upper() == "SELECT "


class _RetriedOnANewConnection:
    """The cursors of ``DatabaseWrapper``: the first statement on a connection, when that
    connection turns out broken, runs again once on a new one where that cannot apply it twice
    (``DatabaseWrapper.replace_broken``)."""

    # What ``create_cursor`` was given: a new cursor like this one is made on the new connection.
    made_as: str | None = None

    def _execute(self, sql, params, *args):
        return self._attempt(super()._execute, sql, params, *args)

    def _executemany(self, sql, param_list, *args):
        return self._attempt(super()._executemany, sql, param_list, *args)

    def _attempt(self, run, sql, params, *args):
        db = self.db
        if not db.first_statement_pending:
            return run(sql, params, *args)
        db.first_statement_pending = False
        errors_occurred = db.errors_occurred
        try:
            return run(sql, params, *args)
        except (OperationalError, InterfaceError):
            if not (db.connection is not None and db.connection.closed
                    and (_is_read(sql) or not db.get_autocommit())):
                raise
            logger.warning("A connection broke on its first statement; it runs again on a new "
                           "connection")
            db.replace_broken()
        db.errors_occurred = errors_occurred  # the new connection has had none
        with contextlib.suppress(Exception):
            self.cursor.close()
        with db.wrap_database_errors:
            self.cursor = db.create_cursor(self.made_as)
        return run(sql, params, *args)


class _Cursor(_RetriedOnANewConnection, CursorWrapper):
    pass


class _DebugCursor(_RetriedOnANewConnection, base.CursorDebugWrapper):
    pass


class DatabaseWrapper(base.DatabaseWrapper):
    ops_class = DatabaseOperations

    # True from the moment a connection is made (lent by the pool) until its first statement.
    first_statement_pending = False

    @property
    def pool(self):
        """Django's pool (``base.DatabaseWrapper.pool``), whose ``check`` replaces every idle
        connection once one fails its check."""
        options = self.settings_dict["OPTIONS"].get("pool")
        if (options and self.alias != base.NO_DB_ALIAS
                and self.alias not in self._connection_pools
                and self.settings_dict["CONN_HEALTH_CHECKS"]
                and not self.settings_dict.get("CONN_MAX_AGE")):  # else Django refuses it
            kwargs = self.get_connection_params()
            kwargs["autocommit"] = True  # as Django's: it sets autocommit itself later

            def check(connection) -> None:
                try:
                    ConnectionPool.check_connection(connection)
                except Exception:
                    logger.warning("A pooled connection died while it waited; the pool's idle "
                                   "connections are all replaced")
                    pool.drain()
                    raise

            pool = ConnectionPool(kwargs=kwargs, open=False, check=check,
                                  configure=self._configure_connection,
                                  **({} if options is True else options))
            self._connection_pools.setdefault(self.alias, pool)
        return super().pool

    def connect(self):
        super().connect()
        self.first_statement_pending = True

    def _cursor(self, name=None):
        cursor = super()._cursor(name)
        cursor.made_as = name
        return cursor

    def make_cursor(self, cursor):
        return _Cursor(cursor, self)

    def make_debug_cursor(self, cursor):
        return _DebugCursor(cursor, self)

    def replace_broken(self) -> None:
        """Gives the connection a new one in its place, in the state Django had set on the
        broken one (autocommit, or inside ``atomic``), whose bookkeeping (savepoints,
        ``on_commit`` callbacks) stays as it is. When no new connection can be had, the broken
        one stays and this raises."""
        with self.wrap_database_errors:
            new = self.get_new_connection(self.get_connection_params())
        broken, self.connection = self.connection, new
        try:
            self._set_autocommit(self.autocommit)
            self.init_connection_state()
        finally:
            with contextlib.suppress(Exception):
                if hasattr(broken, "_pool"):
                    broken._pool.putconn(broken)  # as Django's _close: the pool discards it
                else:
                    broken.close()
        connection_created.send(sender=self.__class__, connection=self)

    def prepared_cursor(self):
        """A cursor as ``cursor()`` gives (wrapped, its statements logged and counted), whose
        parameters are bound by the server instead of written into the statement: one text per
        statement, which psycopg prepares from its second run on this connection."""
        return self._cursor(PREPARED)

    def create_cursor(self, name=None):
        if name is not PREPARED:
            return super().create_cursor(name)
        cursor = base.ServerBindingCursor(self.connection)
        # As Django does for its own cursors.
        tzloader = self.connection.adapters.get_loader(base.TIMESTAMPTZ_OID, base.Format.TEXT)
        if self.timezone != tzloader.timezone:
            base.register_tzloader(self.timezone, cursor)
        return cursor

    def get_new_connection(self, conn_params):
        breaker, probe = _shared(self.settings_dict)
        if not breaker.allows():
            raise self.Database.OperationalError(
                "the database server cannot be reached (it did not answer moments ago)")
        try:
            if not breaker.closed:
                self._direct(conn_params)  # a trial, when no probe makes them
            connection = self._wait_for_connection(conn_params, breaker, probe)
        except PoolTimeout:
            raise  # busy for DB_POOL_TIMEOUT_SECONDS: the server answers, it is overloaded
        except self.Database.OperationalError as exc:
            breaker.failed(exc, probe=lambda: self._direct(conn_params))
            self._discard_pool()
            raise
        breaker.succeeded()
        return connection

    def _wait_for_connection(self, conn_params, breaker: Breaker, probe: _Probe):
        if not self.settings_dict["OPTIONS"].get("pool"):
            return super().get_new_connection(conn_params)  # bounded by connect_timeout
        wait = _pool_wait.get()
        deadline = time.monotonic() + (settings.DB_POOL_TIMEOUT_SECONDS if wait is None else wait)
        while True:
            try:
                return super().get_new_connection(conn_params)
            except PoolTimeout:
                # A slice in vain: a busy pool, or a server gone? A direct connection says,
                # unless another thread found out meanwhile.
                if not breaker.closed:
                    raise self.Database.OperationalError(
                        "the database server cannot be reached") from None
                probe.confirm(lambda: self._direct(conn_params))
                if time.monotonic() >= deadline:
                    raise

    def _direct(self, conn_params) -> None:
        self.Database.connect(**conn_params).close()

    def _discard_pool(self) -> None:
        """Forgets the pool (its connections are dead, its reconnection backs off); the next
        connection builds a new one. Connections still lent out go back to the old pool, which
        closes them."""
        pool = self._connection_pools.pop(self.alias, None)
        if pool is not None:
            # Closing waits for the pool's workers, which may be inside a connection attempt.
            threading.Thread(target=pool.close, name="discard-db-pool", daemon=True).start()
