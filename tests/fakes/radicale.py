"""A real CalDAV server for the tests: Radicale on 127.0.0.1 (a free port), with a temporary
storage folder and htpasswd (plain) users, run as ``python -m radicale --config …``. It can be
stopped and started again on the same port and storage, as a calendar server that goes down."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import caldav

USERS = {"ray": "ray-app-password", "nocal": "nocal-app-password"}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Radicale:
    def __init__(self, root: Path):
        self.root = root
        self.port = free_port()
        (root / "users").write_text("".join(f"{u}:{p}\n" for u, p in USERS.items()))
        self.config = root / "config"
        self.config.write_text(
            f"[server]\nhosts = 127.0.0.1:{self.port}\n"
            f"[auth]\ntype = htpasswd\nhtpasswd_filename = {root / 'users'}\n"
            "htpasswd_encryption = plain\ndelay = 0\n"
            f"[storage]\nfilesystem_folder = {root / 'collections'}\n"
            "[logging]\nlevel = warning\n")
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    def start(self) -> None:
        log = open(self.root / "radicale.log", "ab")  # noqa: SIM115 -- the process keeps it
        self.process = subprocess.Popen([sys.executable, "-m", "radicale", "--config",
                                         str(self.config)], stdout=log, stderr=log)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                if self.process.poll() is not None:
                    break
                time.sleep(0.05)
        raise RuntimeError("Radicale did not start: "
                           + (self.root / "radicale.log").read_text()[-2000:])

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(10)
            self.process = None

    def client(self, user: str = "ray") -> caldav.DAVClient:
        return caldav.DAVClient(url=self.url, username=user, password=USERS[user],
                                enable_rfc6764=False, require_tls=False, timeout=5)

    def make_calendar(self, user: str = "ray", name: str = "work") -> str:
        """A calendar collection of ``user``; its URL."""
        calendar = self.client(user).principal().make_calendar(name=name.title(), cal_id=name)
        return str(calendar.url)

    def calendar(self, user: str = "ray", name: str = "work") -> caldav.Calendar:
        return self.client(user).calendar(url=f"{self.url}{user}/{name}/")

    def add_busy(self, start: datetime, end: datetime, *, user: str = "ray",
                 uid: str = "busy-1") -> None:
        self.calendar(user).add_event(dtstart=start, dtend=end, summary="Dentist", uid=uid)
