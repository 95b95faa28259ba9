"""Runs the whole service on one machine: daphne, a Celery worker and Celery beat, supervised.

Used by ``make run`` (``--demo-tenant``: the quickstart's demo tenant, whose keys and URLs are
printed once daphne listens, the worker and beat have started and start-up is over, below their
banners, so that they are the last thing on the screen). Ctrl-C (SIGINT) or SIGTERM stops all of them.

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
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

logger = logging.getLogger("salesagent.serve")

# Beyond the web process's own grace period (SHUTDOWN_GRACE_SECONDS), before a child that has
# not exited is killed: the worker's tasks and the web's requests in flight finish first.
GRACE_MARGIN_SECONDS = 5
STARTUP_SECONDS = 15.0
BACKOFF_FIRST = 1.0
BACKOFF_MAX = 60.0
STABLE_SECONDS = 60.0  # a child that ran this long starts its next backoff from the first step
HEARTBEAT_SECONDS = 2.0
TICK_SECONDS = 0.2


# Past this, the demo block is printed even if a banner never came: it must never be lost.
READY_TIMEOUT_SECONDS = 60
# The lines by which the worker says it is up (the smoke test, .ci/smoke-run, waits for both).
WORKER_READY = re.compile(r"celery@\S+ ready")
BEAT_READY = re.compile(r"beat: Starting")


def routine_lines() -> re.Pattern:
    """The lines of beat's periodic sweeps going well: sent, received, succeeded. Several every
    few seconds, they would scroll the demo tenant's keys away; a sweep that fails still shows."""
    from django.conf import settings

    tasks = "|".join(sorted(re.escape(entry["task"])
                            for entry in settings.CELERY_BEAT_SCHEDULE.values()))
    return re.compile(rf"Scheduler: Sending due task \S+ \(({tasks})\)"
                      rf"|Task ({tasks})\[[0-9a-f-]+\] (received|succeeded in )")


def empty_metrics_dir() -> None:
    """The series of the processes of an earlier run go: the children start from zero, as
    Prometheus expects of processes that start (a counter that restarts is a reset it handles;
    a dead process's file summed for ever is not)."""
    if not settings.METRICS_TOKEN:
        return
    for path in Path(settings.METRICS_DIR).glob("*.db"):
        path.unlink(missing_ok=True)


def metrics_line(base_url: str) -> str:
    if settings.METRICS_TOKEN:
        return (f"Metrics: {base_url}/metrics with Authorization: Bearer $METRICS_TOKEN "
                "(docs/operations.md)")
    return ("Metrics: off; METRICS_TOKEN=<a long random token> make run serves them on "
            f"{base_url}/metrics (docs/operations.md)")


class Relay:
    """Copies the children's output, line by line, to this command's standard output, without
    the routine lines of the periodic sweeps, and notes the lines that say the worker and beat
    are up."""

    def __init__(self, out):
        self.out = out
        self.routine = routine_lines()
        self.lock = threading.Lock()
        self.seen: set[str] = set()
        self.threads: list[threading.Thread] = []

    def start(self, cmd: list[str], env: dict[str, str]) -> subprocess.Popen:
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        thread = threading.Thread(target=self._copy, args=(proc.stdout,), daemon=True)
        thread.start()
        self.threads.append(thread)
        return proc

    def _copy(self, stream) -> None:
        for raw in iter(stream.readline, b""):
            line = raw.decode("utf-8", "replace")
            if self.routine.search(line):
                continue
            self.write(line)
            for name, marker in (("worker", WORKER_READY), ("beat", BEAT_READY)):
                if marker.search(line):
                    self.seen.add(name)

    def write(self, text: str) -> None:
        with self.lock:
            self.out.write(text)
            self.out.flush()

    def drain(self) -> None:
        for thread in self.threads:
            thread.join(timeout=2)


def _listening(host: str, port: int) -> bool:
    target = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(host, host)
    try:
        with socket.create_connection((target, port), timeout=0.2):
            return True
    except OSError:
        return False


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
    # How the process is started: the relay's (its output copied, the routine lines dropped).
    launch: Callable[[list[str], dict[str, str]], subprocess.Popen] = subprocess.Popen
    proc: subprocess.Popen | None = None
    started_at: float = 0.0  # monotonic
    down_since: float | None = None  # wall clock, for /api/health
    restart_at: float = 0.0  # monotonic
    restarts: int = 0
    backoff: float = BACKOFF_FIRST
    last_exit: str | None = None

    def start(self, env: dict[str, str]) -> None:
        self.proc = self.launch(self.command, env)
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
        deadline = time.monotonic() + settings.SHUTDOWN_GRACE_SECONDS + GRACE_MARGIN_SECONDS
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
        parser.add_argument("--demo-tenant", action="store_true",
                            help="Create or reuse the demo tenant first, and print its keys and "
                                 "URLs once everything is up (make run).")

    def handle(self, *args, host: str, port: int, concurrency: int, no_worker: bool,
               demo_tenant: bool, **options):
        base_url = f"http://{host}:{port}"
        demo = None
        if demo_tenant:
            from config.demo import demo_tenant_ensure

            demo = demo_tenant_ensure(base_url=base_url)  # before the start: a failure stops it
        relay = Relay(self.stdout)
        supervisor = Supervisor(self._children(host, port, concurrency, no_worker, relay.start),
                                *self._environment(base_url))
        self.relay, self.host, self.port = relay, host, port
        self.announce = self._announcement(demo, base_url, wait_for_worker=not no_worker)

        def stop(signum, frame):
            supervisor.stopping = True

        signal.signal(signal.SIGINT, stop)
        signal.signal(signal.SIGTERM, stop)
        failed = None
        empty_metrics_dir()
        supervisor.start()
        try:
            while not supervisor.stopping and failed is None:
                failed = supervisor.tick()
                self._announce_when_up(supervisor.started_up)
                time.sleep(TICK_SECONDS)
        finally:
            supervisor.stop()
            relay.drain()
        if failed:
            raise CommandError(failed)

    @staticmethod
    def _children(host: str, port: int, concurrency: int, no_worker: bool,
                  launch: Callable) -> list[Child]:
        celery = [sys.executable, "-m", "celery", "-A", "config"]
        children = [Child("web", [sys.executable, "-m", "daphne", "-b", host, "-p", str(port),
                                  "--no-server-name", "config.asgi:application"], launch)]
        if not no_worker:
            children += [
                Child("worker", [*celery, "worker", "--loglevel=INFO",
                                 f"--concurrency={concurrency}"], launch),
                Child("beat", [*celery, "beat", "--loglevel=INFO"], launch),
            ]
        return children

    @staticmethod
    def _environment(base_url: str) -> tuple[dict[str, str], Path]:
        state_dir = Path(settings.VAR_DIR) / "serve"
        state_dir.mkdir(parents=True, exist_ok=True)
        state_path = state_dir / f"{os.getpid()}.json"
        env = os.environ.copy()
        # The links in emails (a meeting's reschedule and cancel pages) point at this server.
        env.setdefault("PUBLIC_BASE_URL", base_url)
        env["PYTHONUNBUFFERED"] = "1"  # their lines reach the relay as they are written
        env["SERVE_STATE_FILE"] = str(state_path)
        return env, state_path

    def _announcement(self, demo, base_url: str, *, wait_for_worker: bool) -> dict:
        from config.demo import demo_lines

        lines = demo_lines(demo, base_url=base_url) if demo else []
        lines.append(metrics_line(base_url))
        lines.append(f"Serving on {base_url}/ (Ctrl-C stops the server"
                     + (", the worker and beat)" if wait_for_worker else ")"))
        return {"text": "\n".join(lines) + "\n", "wanted": {"worker", "beat"} if wait_for_worker
                else set(), "deadline": time.monotonic() + READY_TIMEOUT_SECONDS}

    def _announce_when_up(self, started_up: bool) -> None:
        """The block, once start-up is over (a child that fails before then stops everything:
        no keys are printed for a service that is not running) and everything is up."""
        announce = self.announce
        if announce is None:
            return
        up = (started_up and announce["wanted"] <= self.relay.seen
              and _listening(self.host, self.port))
        if up or time.monotonic() > announce["deadline"]:
            self.relay.write(announce["text"])
            self.announce = None
