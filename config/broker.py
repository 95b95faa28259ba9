"""The Celery broker of the embedded default: kombu's SQLAlchemy transport on a SQLite file.

kombu's filesystem transport, used before, writes a message file in place and its consumers read
whatever is in the folder, so a worker could read a message before its writer had finished it and
die of ``JSONDecodeError`` (kombu#1551, still open). Here a message is one row, inserted by one
statement in its own transaction: a consumer sees all of it or nothing. What this module changes
in kombu's transport (docs/decisions.md, "The embedded default's broker"):

- **put and claim are one short statement each.** kombu's ``_get`` claims a row with an ORM
  SELECT and UPDATE inside ``BEGIN IMMEDIATE``; ours deletes the oldest row and returns its
  payload (``DELETE ... RETURNING``) inside ``BEGIN IMMEDIATE``. Either way SQLite's write lock
  is taken before the row is chosen, so two workers never claim the same message; ours holds it
  for one statement, which is what lets producers and a busy worker share the file. A claimed
  message lives on in the worker's memory until it is acknowledged, as with kombu's (kombu's
  claimed rows stay in the table, invisible, forever); one that is not acknowledged is put back
  as a new row (kombu's ``restore``).
- **WAL**, so that readers never wait for a writer, and a busy timeout (``connect_args`` in the
  settings), so that writers queue for the lock instead of failing with "database is locked".
- **the tables and the queue's row are created whichever process gets there first**: processes
  starting on a new ``var/`` would otherwise all try, and all but one would fail.
- **a free prefetch slot is noticed within milliseconds** (``drain_events``), and consumers poll
  every 0.1 s (kombu's default is 1 s): a webhook's first attempt leaves well within a second of
  its event.
- **sessions are closed with their channel**, and a count (``/api/health``'s check, on a
  connection it keeps) ends its read at once, so no SQLite read transaction stays open.
"""

from __future__ import annotations

import time
from functools import cached_property
from json import dumps, loads
from queue import Empty

from kombu.transport import sqlalchemy as kombu_sqlalchemy
from kombu.transport.sqlalchemy.models import metadata
from kombu.utils.encoding import bytes_to_str
from sqlalchemy import delete, event, select, true
from sqlalchemy.exc import IntegrityError, OperationalError

POLLING_INTERVAL = 0.1
SLOT_WAIT_STEP = 0.002
CREATE_ATTEMPTS = 5


def _sqlite_pragmas(dbapi_connection, connection_record) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


def _create_tables(engine) -> None:
    """The queue and message tables, whichever process of a fresh ``var/`` gets there first."""
    for attempt in range(CREATE_ATTEMPTS):
        try:
            metadata.create_all(engine)
            return
        except OperationalError:
            # Another process created a table between our check and our CREATE ("already
            # exists") or held the lock beyond the busy timeout: look again.
            if attempt == CREATE_ATTEMPTS - 1:
                raise
            time.sleep(0.05 * (attempt + 1))


class Channel(kombu_sqlalchemy.Channel):
    """kombu's SQLAlchemy channel, with its put and claim done in one short statement each."""

    def __init__(self, *args, **kwargs) -> None:
        self._queue_ids: dict[str, int] = {}
        super().__init__(*args, **kwargs)

    def _engine_from_config(self):
        engine = super()._engine_from_config()
        if engine.dialect.name == "sqlite":
            event.listen(engine, "connect", _sqlite_pragmas)
        _create_tables(engine)
        return engine

    @property
    def _engine(self):
        return self._open()[0]

    def _get_or_create(self, queue):
        try:
            return super()._get_or_create(queue)
        except IntegrityError:
            # Another process inserted the queue between kombu's look and its insert (both
            # starting on a new file): it is there now.
            self.session.rollback()
            return super()._get_or_create(queue)

    def _queue_id(self, queue: str) -> int:
        queue_id = self._queue_ids.get(queue)
        if queue_id is None:
            queue_id = self._get_or_create(queue).id
            self.session.commit()  # gives the connection back to the pool
            if queue_id is None:  # its creation failed (kombu rolled back): try again next time
                raise OperationalError("creating the queue", {}, Exception(queue))
            self._queue_ids[queue] = queue_id
        return queue_id

    @cached_property
    def _insert(self) -> str:
        """The message INSERT (SQLite's parameter style), written once with the defaults of
        kombu's columns: building and running it through SQLAlchemy per message cost as much
        again as SQLite's own work (docs/performance.md, "Broker")."""
        table = self.message_cls.__table__
        return (f'INSERT INTO "{table.name}" ("queue_id", "payload", "visible", "version") '
                "VALUES (?, ?, 1, 1)")

    def _put(self, queue, payload, **kwargs) -> None:
        """One INSERT, committed alone: a consumer sees the whole message or nothing."""
        queue_id = self._queue_id(queue)
        connection = self._engine.raw_connection()  # the pool's; closing gives it back
        try:
            connection.cursor().execute(self._insert, (queue_id, dumps(payload)))
            connection.commit()
        except BaseException:
            connection.rollback()
            raise
        finally:
            connection.close()

    def _get(self, queue):
        """Claims the oldest message of ``queue`` and deletes its row, in one statement.

        kombu's own ``_get`` marks the row invisible with an ORM SELECT and UPDATE inside ``BEGIN
        IMMEDIATE``; this holds SQLite's write lock for one statement instead, which is what
        lets producers and a busy worker share the file (docs/performance.md, "Broker"). A
        claimed message lives on in the worker's memory until it is acknowledged, as with
        kombu's; one that is not is put back as a new row (kombu's ``restore``)."""
        table = self.message_cls.__table__
        oldest = (select(table.c.id)
                  .where(table.c.queue_id == self._queue_id(queue), table.c.visible == true())
                  .order_by(table.c.id).limit(1).scalar_subquery())
        with self._engine.begin() as conn:
            if conn.dialect.name == "sqlite":
                conn.exec_driver_sql("BEGIN IMMEDIATE")
            payload = conn.execute(delete(table).where(table.c.id == oldest)
                                   .returning(table.c.payload)).scalar()
        if payload is None:
            raise Empty()
        return loads(bytes_to_str(payload))

    def _size(self, queue) -> int:
        """kombu's count, ending its read: a connection kept between calls (``/api/health``'s)
        must not hold a read transaction open, which would keep WAL checkpoints from
        completing."""
        try:
            return super()._size(queue)
        finally:
            self.session.rollback()

    def drain_events(self, timeout=None, callback=None):
        """Waits for a free prefetch slot in short steps before polling.

        A worker takes no more messages than its prefetch limit (``--concurrency`` with
        ``CELERY_WORKER_PREFETCH_MULTIPLIER`` 1); kombu's loop, finding the slots full, sleeps a
        whole polling interval even when a task's acknowledgement frees one a millisecond
        later, so short tasks ran at about two per interval."""
        if self._consumers and not self.qos.can_consume():
            deadline = time.monotonic() + POLLING_INTERVAL
            while not self.qos.can_consume() and time.monotonic() < deadline:
                time.sleep(SLOT_WAIT_STEP)
        return super().drain_events(timeout=timeout, callback=callback)

    def close(self) -> None:
        if self._session is not None:
            self._session.close()
            self._session = None
        super().close()


class Transport(kombu_sqlalchemy.Transport):
    """kombu's SQLAlchemy transport with the channel above (``CELERY_BROKER_TRANSPORT``)."""

    Channel = Channel
    polling_interval = POLLING_INTERVAL
