"""Real server processes for tests that need them: daphne on a free port, as in production."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port: int, timeout: float | None = None,
                  proc: subprocess.Popen | None = None) -> None:
    # LIVE_START_TIMEOUT: longer waits (here and in ``manage``) for a machine shared by many
    # test runs at once.
    timeout = timeout or float(os.environ.get("LIVE_START_TIMEOUT") or 120.0)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"server exited early with {proc.returncode}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            return
        time.sleep(0.05)
    raise TimeoutError(f"nothing listening on {port} after {timeout}s")


def environment(env: dict[str, str | None] | None = None) -> dict[str, str]:
    """This process's environment with ``env`` applied; a None value removes the variable."""
    merged = dict(os.environ)
    for key, value in (env or {}).items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = value
    return merged


def manage(*args: str, env: dict[str, str | None] | None = None, timeout: float = 300) -> str:
    """Runs ``manage.py`` in a subprocess and returns its standard output."""
    proc = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=environment(env),
                          capture_output=True, text=True,
                          timeout=max(timeout, float(os.environ.get("LIVE_START_TIMEOUT") or 0)))
    if proc.returncode != 0:
        raise RuntimeError(f"manage.py {' '.join(args)} failed:\n{proc.stderr}")
    return proc.stdout


class Server(str):
    """A live server's base URL, which also knows its process (to kill it like a crash would)."""

    process: subprocess.Popen
    log: str


@contextlib.contextmanager
def daphne(env: dict[str, str | None] | None = None, port: int | None = None, *,
           startup_seconds: float | None = None) -> Iterator[Server]:
    """Runs ``daphne --no-server-name config.asgi:application`` in a subprocess, as in
    production; yields its base URL. ``port``: a given one (a server started again where a
    stopped one was), else a free one. ``startup_seconds``: how long it may take to listen.

    Its output goes to a file (``server.log``), never to an unread pipe that would fill and
    stall the server."""
    port = port or free_port()
    log = tempfile.NamedTemporaryFile(prefix="daphne-", suffix=".log", delete=False)  # noqa: SIM115 - lives as long as the server
    proc = subprocess.Popen(
        [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port),
         "--no-server-name", "config.asgi:application"],
        cwd=ROOT, env=environment(env), stdout=log, stderr=subprocess.STDOUT,
    )
    try:
        wait_for_port(port, startup_seconds, proc=proc)
        server = Server(f"http://127.0.0.1:{port}")
        server.process = proc
        server.log = log.name
        yield server
    finally:
        if proc.poll() is None:
            proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


@contextlib.contextmanager
def celery_worker(env: dict[str, str | None] | None, log_path: Path, *, beat: bool = False,
                  level: str = "WARNING", app: str = "config", pool: str | None = None,
                  quiet: bool = False) -> Iterator[subprocess.Popen]:
    """``celery -A config worker`` as ``make run`` starts it (``beat``: with beat inside, whose
    sweepers then run, as ``manage.py serve`` runs them); its output goes to a file, never to an
    unread pipe that would fill and stall it."""
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", app, *(["--quiet"] if quiet else []), "worker",
             f"--loglevel={level}",
             *([f"--pool={pool}"] if pool else []),
             "--concurrency=1", "--without-gossip", "--without-mingle", "--without-heartbeat",
             *(["--beat"] if beat else [])],
            cwd=ROOT, env=environment(env), stdout=log, stderr=subprocess.STDOUT,
        )
        try:
            yield proc
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _server_url(database: str) -> str:
    """``DATABASE_URL`` with another database of the same PostgreSQL server."""
    from urllib.parse import urlsplit, urlunsplit

    return urlunsplit(urlsplit(os.environ["DATABASE_URL"])._replace(path=f"/{database}"))


def ensure_database(name: str) -> None:
    """Creates the PostgreSQL database ``name`` beside the one in ``DATABASE_URL`` unless it
    exists (the benchmarks' persistent databases)."""
    import psycopg

    with psycopg.connect(_server_url("postgres"), autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone():
            conn.execute(f'CREATE DATABASE "{name}"')


@contextlib.contextmanager
def scratch_database(name: str) -> Iterator[str]:
    """A fresh PostgreSQL database beside the one in ``DATABASE_URL``, for server processes that
    must share one (the test run's own database is inside a test transaction); dropped after."""
    import psycopg

    admin = _server_url("postgres")
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield _server_url(name)
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
