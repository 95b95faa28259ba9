"""Runs the whole service on one machine: daphne, and a Celery worker with beat beside it.

Used by ``make run`` (``--demo-tenant``: the quickstart's demo tenant, whose keys and URLs are
printed once daphne listens and the worker and beat have started, below their start-up banners,
so that they are the last thing on the screen). Ctrl-C (SIGINT) or SIGTERM stops all of them; if
one of them dies, the others are stopped too and the command fails, so that a broken start is
never half-running.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time

from django.core.management.base import BaseCommand, CommandError

GRACE_SECONDS = 10
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


class Command(BaseCommand):
    help = "Serves the ASGI app with daphne, plus a Celery worker with embedded beat."

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
        commands = {
            "web": [sys.executable, "-m", "daphne", "-b", host, "-p", str(port),
                    "config.asgi:application"],
        }
        if not no_worker:
            commands["worker"] = [sys.executable, "-m", "celery", "-A", "config", "worker",
                                  "--beat", "--loglevel=INFO", f"--concurrency={concurrency}"]
        env = os.environ.copy()
        # The links in emails (a meeting's reschedule and cancel pages) point at this server.
        env.setdefault("PUBLIC_BASE_URL", base_url)
        env["PYTHONUNBUFFERED"] = "1"  # their lines reach the relay as they are written
        relay = Relay(self.stdout)
        procs = {name: relay.start(cmd, env) for name, cmd in commands.items()}
        self.relay, self.host, self.port = relay, host, port
        self.announce = self._announcement(demo, base_url, wait_for_worker=not no_worker)
        failed = self._watch(procs)
        self._terminate(procs)
        relay.drain()
        if failed:
            raise CommandError(failed)

    def _announcement(self, demo, base_url: str, *, wait_for_worker: bool) -> dict:
        from config.demo import demo_lines

        lines = demo_lines(demo, base_url=base_url) if demo else []
        lines.append(f"Serving on {base_url}/ (Ctrl-C stops the server"
                     + (", the worker and beat)" if wait_for_worker else ")"))
        return {"text": "\n".join(lines) + "\n", "wanted": {"worker", "beat"} if wait_for_worker
                else set(), "deadline": time.monotonic() + READY_TIMEOUT_SECONDS}

    def _watch(self, procs: dict[str, subprocess.Popen]) -> str | None:
        """Waits for Ctrl-C, SIGTERM or a child's exit; prints the announcement once all is up."""
        stopping = False

        def stop(signum, frame):
            nonlocal stopping
            stopping = True

        signal.signal(signal.SIGINT, stop)
        signal.signal(signal.SIGTERM, stop)
        while not stopping:
            for name, proc in procs.items():
                if proc.poll() is not None:
                    return f"{name} exited with status {proc.returncode}"
            self._announce_when_up()
            time.sleep(0.2)
        return None

    def _announce_when_up(self) -> None:
        announce = self.announce
        if announce is None:
            return
        up = (announce["wanted"] <= self.relay.seen and _listening(self.host, self.port))
        if up or time.monotonic() > announce["deadline"]:
            self.relay.write(announce["text"])
            self.announce = None

    def _terminate(self, procs: dict[str, subprocess.Popen]) -> None:
        for proc in procs.values():
            if proc.poll() is None:
                proc.terminate()
        deadline = time.monotonic() + GRACE_SECONDS
        for proc in procs.values():
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
