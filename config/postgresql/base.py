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
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from contextvars import ContextVar

from django.conf import settings
from django.db.backends.postgresql import base
from psycopg_pool import PoolTimeout

from core.breaker import Breaker

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
            _breakers[server] = Breaker(f"the database server {server}", cooldown=COOLDOWN_SECONDS)
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


class DatabaseWrapper(base.DatabaseWrapper):
    ops_class = DatabaseOperations

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
