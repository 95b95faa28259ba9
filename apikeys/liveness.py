"""Who runs the request that holds an ``Idempotency-Key``, and whether it still runs
(docs/idempotency.md, "When the first request dies").

A request that claimed a key and then died (its process killed, its database connection cut)
leaves its record in progress. Whether it died is told by what it held, which ends with it:

- on PostgreSQL, its connection: a request keeps the connection it claimed the key on until it
  ends, and the server forgets a connection the moment its client process is gone, on whichever
  machine that process ran. The owner is ``pg:<backend pid>``; it is gone when
  ``pg_stat_activity`` no longer lists that backend.
- on SQLite (one machine by nature), its process: ``os:<host>:<pid>:<start time>``; gone when no
  process of that id and start time runs on this host (a process with the same id after a
  restart, as in a container, is another process).

Whatever cannot be told (another host on SQLite, no ``/proc``, a connection pooler between the
service and PostgreSQL that hides the client's backend, a record from before owners were kept)
counts as alive: the key then waits for ``IDEMPOTENCY_LOCK_SECONDS`` as before.
"""

from __future__ import annotations

import os
import socket

from django.db import connection

_HOST = socket.gethostname()[:128]


def _process_start(pid: str) -> str | None:
    """The start time of process ``pid`` (clock ticks after boot); None when no such process runs
    or it has exited (a zombie not yet reaped by its parent); "?" where ``/proc`` cannot tell."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            fields = stat.read().rsplit(b")", 1)[1].split()
    except FileNotFoundError:
        return "?" if pid == "self" or not os.path.isdir("/proc/self") else None
    except (OSError, IndexError):
        return "?"
    if fields[0] in (b"Z", b"X"):
        return None
    return fields[19].decode()


def current_owner() -> str:
    """This request's owner mark, for the record it claims."""
    if connection.vendor == "postgresql":
        connection.ensure_connection()
        pid = getattr(getattr(connection.connection, "info", None), "backend_pid", None)
        return f"pg:{pid}" if pid else ""
    return f"os:{_HOST}:{os.getpid()}:{_process_start('self')}"


def owner_gone(owner: str) -> bool:
    """Whether the request that marked a record ``owner`` has certainly ended."""
    kind, _, rest = owner.partition(":")
    if kind == "pg" and rest.isdigit() and connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            # Inside a transaction the server answers from the first look's snapshot.
            cursor.execute("SELECT pg_stat_clear_snapshot()")
            cursor.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s", [int(rest)])
            return cursor.fetchone() is None
    if kind == "os" and connection.vendor != "postgresql":
        host, pid, started = ([""] * 3 + rest.rsplit(":", 2))[-3:]
        if host != _HOST or not pid.isdigit() or started == "?":
            return False
        now = _process_start(pid)
        return now is None or now not in ("?", started)
    return False
