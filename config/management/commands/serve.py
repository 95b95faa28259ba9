"""Runs the whole service on one machine: daphne, a Celery worker and Celery beat, supervised.

Used by ``make run``. Ctrl-C (SIGINT) or SIGTERM stops all of them.

- **Start-up**: a child that exits in the first ``STARTUP_SECONDS`` stops the others and the
  command fails, so that a broken start (a port in use, a bad setting) is never half-running.
- **After start-up**: a child that exits is started again after a backoff (1 s, doubling up to
  60 s; back to 1 s once it has run for a minute), and each exit and restart is logged. The
  others keep running: the web server keeps serving while the worker is restarted, and the work
  queued meanwhile waits on the broker.
- **State**: the children's states are written to ``var/serve/<pid>.json`` (on every change and
  every ``HEARTBEAT_SECONDS``), whose path the children find in ``SERVE_STATE_FILE``;
  ``/api/health`` reads it (config/health.py) and reports a worker or beat that has been down
  for a while.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

logger = logging.getLogger("salesagent.serve")

GRACE_SECONDS = 10
STARTUP_SECONDS = 15.0
BACKOFF_FIRST = 1.0
BACKOFF_MAX = 60.0
STABLE_SECONDS = 60.0  # a child that ran this long starts its next backoff from the first step
HEARTBEAT_SECONDS = 2.0
TICK_SECONDS = 0.2


def exit_description(code: int) -> str:
    """``exited with status 1``, or ``killed by SIGKILL`` for a negative return code."""
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exited with status {code}"


@dataclass
class Child:
    """One supervised process: its command, its current process and its restart schedule."""

    name: str
    command: list[str]
    proc: subprocess.Popen | None = None
    started_at: float = 0.0  # monotonic
    down_since: float | None = None  # wall clock, for /api/health
    restart_at: float = 0.0  # monotonic
    restarts: int = 0
    backoff: float = BACKOFF_FIRST
    last_exit: str | None = None

    def start(self, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(self.command, env=env)
        self.started_at = time.monotonic()
        self.down_since = None

    def exited(self) -> int | None:
        """The return code if the process has exited since it was started, else None."""
        if self.proc is None:
            return None
        return self.proc.poll()

    def schedule_restart(self, code: int) -> None:
        now = time.monotonic()
        if now - self.started_at >= STABLE_SECONDS:
            self.backoff = BACKOFF_FIRST
        self.last_exit = exit_description(code)
        self.proc = None
        self.down_since = time.time()
        self.restart_at = now + self.backoff
        logger.warning("serve: %s %s; restarting it in %g s", self.name, self.last_exit,
                       self.backoff)
        self.backoff = min(self.backoff * 2, BACKOFF_MAX)

    def restart(self, env: dict[str, str]) -> None:
        self.restarts += 1
        self.start(env)
        logger.warning("serve: %s restarted (pid %d, restart %d)", self.name, self.proc.pid,
                       self.restarts)

    def state(self) -> dict:
        return {"running": self.proc is not None, "pid": self.proc.pid if self.proc else None,
                "downSince": self.down_since, "restarts": self.restarts,
                "lastExit": self.last_exit}


@dataclass
class Supervisor:
    """Starts the children, restarts those that exit after start-up, writes their states."""

    children: list[Child]
    env: dict[str, str]
    state_path: Path
    started_at: float = field(default_factory=time.monotonic)
    written_at: float = 0.0
    started_up: bool = False
    stopping: bool = False  # set by SIGINT or SIGTERM: nothing is restarted any more

    def start(self) -> None:
        for child in self.children:
            child.start(self.env)
        self.write_state()

    def tick(self) -> str | None:
        """One look at the children; returns why everything must stop, if it must."""
        now = time.monotonic()
        changed = False
        for child in self.children:
            if self.stopping:
                return None
            code = child.exited()
            if code is not None and not self.started_up:
                return f"{child.name} {exit_description(code)} during start-up"
            changed = self._look_after(child, code, now) or changed
        if not self.started_up and now - self.started_at >= STARTUP_SECONDS:
            self.started_up = True
            logger.info("serve: start-up complete; a process that exits from now on is restarted")
        if changed or now - self.written_at >= HEARTBEAT_SECONDS:
            self.write_state()
        return None

    def _look_after(self, child: Child, code: int | None, now: float) -> bool:
        """Schedules the restart of a child that exited, or restarts one whose time has come;
        True if its state changed."""
        if code is not None:
            child.schedule_restart(code)
            return True
        if child.proc is None and now >= child.restart_at:
            child.restart(self.env)
            return True
        return False

    def write_state(self) -> None:
        """The file ``/api/health`` reads; replaced whole, so a reader never sees half of it."""
        state = {"updatedAt": time.time(), "pid": os.getpid(),
                 "children": {child.name: child.state() for child in self.children}}
        partial = self.state_path.with_suffix(".partial")
        partial.write_text(json.dumps(state))
        os.replace(partial, self.state_path)
        self.written_at = time.monotonic()

    def stop(self) -> None:
        procs = [child.proc for child in self.children if child.proc is not None]
        for proc in procs:
            if proc.poll() is None:
                proc.terminate()
        deadline = time.monotonic() + GRACE_SECONDS
        for proc in procs:
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self.state_path.unlink(missing_ok=True)


class Command(BaseCommand):
    help = "Serves the ASGI app with daphne, plus a Celery worker and beat, restarted if they exit."

    def add_arguments(self, parser):
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument("--concurrency", type=int, default=2)
        parser.add_argument("--no-worker", action="store_true",
                            help="Only the web server (run workers elsewhere).")

    def handle(self, *args, host: str, port: int, concurrency: int, no_worker: bool, **options):
        celery = [sys.executable, "-m", "celery", "-A", "config"]
        children = [Child("web", [sys.executable, "-m", "daphne", "-b", host, "-p", str(port),
                                  "config.asgi:application"])]
        if not no_worker:
            children += [
                Child("worker", [*celery, "worker", "--loglevel=INFO",
                                 f"--concurrency={concurrency}"]),
                Child("beat", [*celery, "beat", "--loglevel=INFO"]),
            ]
        state_dir = Path(settings.VAR_DIR) / "serve"
        state_dir.mkdir(parents=True, exist_ok=True)
        state_path = state_dir / f"{os.getpid()}.json"
        env = os.environ.copy()
        # The links in emails (a meeting's reschedule and cancel pages) point at this server.
        env.setdefault("PUBLIC_BASE_URL", f"http://{host}:{port}")
        env["SERVE_STATE_FILE"] = str(state_path)
        supervisor = Supervisor(children, env, state_path)

        def stop(signum, frame):
            supervisor.stopping = True

        signal.signal(signal.SIGINT, stop)
        signal.signal(signal.SIGTERM, stop)
        failed = None
        supervisor.start()
        try:
            while not supervisor.stopping and failed is None:
                failed = supervisor.tick()
                time.sleep(TICK_SECONDS)
        finally:
            supervisor.stop()
        if failed:
            raise CommandError(failed)
