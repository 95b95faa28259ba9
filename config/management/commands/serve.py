"""Runs the whole service on one machine: daphne, and a Celery worker with beat beside it.

Used by ``make run``. Ctrl-C (SIGINT) or SIGTERM stops all of them; if one of them dies, the
others are stopped too and the command fails, so that a broken start is never half-running.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from django.core.management.base import BaseCommand, CommandError

GRACE_SECONDS = 10


class Command(BaseCommand):
    help = "Serves the ASGI app with daphne, plus a Celery worker with embedded beat."

    def add_arguments(self, parser):
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument("--concurrency", type=int, default=2)
        parser.add_argument("--no-worker", action="store_true",
                            help="Only the web server (run workers elsewhere).")

    def handle(self, *args, host: str, port: int, concurrency: int, no_worker: bool, **options):
        commands = {
            "web": [sys.executable, "-m", "daphne", "-b", host, "-p", str(port),
                    "config.asgi:application"],
        }
        if not no_worker:
            commands["worker"] = [sys.executable, "-m", "celery", "-A", "config", "worker",
                                  "--beat", "--loglevel=INFO", f"--concurrency={concurrency}"]
        env = os.environ.copy()
        # The links in emails (a meeting's reschedule and cancel pages) point at this server.
        env.setdefault("PUBLIC_BASE_URL", f"http://{host}:{port}")
        procs = {name: subprocess.Popen(cmd, env=env) for name, cmd in commands.items()}
        stopping = False

        def stop(signum, frame):
            nonlocal stopping
            stopping = True

        signal.signal(signal.SIGINT, stop)
        signal.signal(signal.SIGTERM, stop)
        failed = None
        while not stopping:
            for name, proc in procs.items():
                if proc.poll() is not None:
                    failed = f"{name} exited with status {proc.returncode}"
                    stopping = True
            time.sleep(0.2)
        self._terminate(procs)
        if failed:
            raise CommandError(failed)

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
