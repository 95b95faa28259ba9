"""``manage.py serve`` (what ``make run`` runs) supervises its web server, worker and beat: a
worker killed after start-up is restarted, with the restart logged, while the web server keeps
serving, and the work queued meanwhile (an upload to index, a webhook to deliver) finishes. A
failure at start-up still stops everything."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from tests.fakes.webhook_receiver import WebhookReceiver
from tests.live import ROOT, environment, free_port, manage, wait_for_port

pytestmark = pytest.mark.live  # manage.py serve: daphne, a Celery worker and beat

EMBEDDED = {"DATABASE_URL": None, "REDIS_URL": None, "DEBUG": "1", "SECRET_KEY": None,
            "ALLOWED_HOSTS": None, "V1_REQUIRE_HTTPS": "0", "PUBLIC_BASE_URL": None,
            "SERVE_STATE_FILE": None}
TIMEOUT = 30  # seconds per request: the test machine may be busy


def _children(pid: int) -> dict[int, str]:
    """The processes whose parent is ``pid``, with their command lines (Linux's /proc)."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            if int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                found[int(entry.name)] = (entry / "cmdline").read_text().replace("\0", " ")
    return found


def _child(pid: int, role: str) -> int:
    """The pid of serve's child running ``celery ... <role>``."""
    (match,) = [child for child, cmd in _children(pid).items() if f"config {role} " in cmd]
    return match


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"


def _wait(condition: Callable[[], object], what: str, log: Path, timeout: float = 90.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if result := condition():
            return result
        time.sleep(0.25)
    raise AssertionError(f"{what} after {timeout} s; serve's output:\n{log.read_text()[-4000:]}")


@contextlib.contextmanager
def serve(env: dict, port: int, log: Path) -> Iterator[subprocess.Popen]:
    """``manage.py serve`` in a session of its own; stopped with SIGTERM, as a service manager
    would, then anything left in its session is killed."""
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "manage.py", "serve", "--port", str(port), "--concurrency", "1"],
            cwd=ROOT, env=environment(env), stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True)
        try:
            yield proc
        finally:
            if proc.poll() is None:
                proc.terminate()
            try:
                proc.wait(timeout=30)
            finally:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)


def test_a_killed_worker_is_restarted_and_the_work_queued_meanwhile_finishes(tmp_path):
    env = {**EMBEDDED, "VAR_DIR": str(tmp_path), "WEBHOOKS_ALLOW_HTTP": "1",
           "WEBHOOKS_ALLOW_PRIVATE_TARGETS": "1"}
    manage("migrate", "--noinput", env=env)
    keys = json.loads(manage("create_tenant", "Supervised", "--json", env=env))["keys"]["live"]
    admin = {"Authorization": f"Bearer {keys['admin']}"}
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    log = tmp_path / "serve.log"
    receiver = WebhookReceiver()
    try:
        with serve(env, port, log) as proc:
            wait_for_port(port, timeout=60, proc=proc)
            r = httpx.post(f"{base}/api/v1/webhooks", headers=admin, timeout=TIMEOUT,
                           json={"url": receiver.url(), "events": ["lead.created"]})
            assert r.status_code == 201, r.text
            _wait(lambda: "start-up complete" in log.read_text(), "no end of start-up", log)
            worker = _child(proc.pid, "worker")
            beat = _child(proc.pid, "beat")

            os.kill(worker, signal.SIGKILL)
            # Work queued while no worker runs: it waits on the broker.
            r = httpx.post(f"{base}/api/v1/knowledge-base", headers=admin, timeout=TIMEOUT,
                           json={"title": "FAQ", "type": "faq",
                                 "content": "Q: Is there a free trial?\nA: Yes, for 14 days."})
            assert r.status_code == 201 and r.json()["status"] == "processing", r.text
            document = r.json()["id"]
            r = httpx.post(f"{base}/api/v1/leads", headers=admin, timeout=TIMEOUT,
                           json={"email": "queued@example.com"})
            assert r.status_code == 201, r.text
            # The web server serves all along.
            assert httpx.get(f"{base}/api/health", timeout=TIMEOUT).status_code == 200

            restarted = _wait(lambda: re.search(r"worker restarted \(pid (\d+), restart 1\)",
                                                log.read_text()), "no restart logged", log)
            assert "serve: worker killed by SIGKILL; restarting it in 1 s" in log.read_text()
            new_worker = int(restarted.group(1))
            assert new_worker != worker and _alive(new_worker)
            assert _child(proc.pid, "worker") == new_worker
            assert _child(proc.pid, "beat") == beat  # the others were left alone

            def indexed():
                r = httpx.get(f"{base}/api/v1/knowledge-base/{document}", headers=admin,
                              timeout=TIMEOUT)
                return r.json()["status"] == "ready"

            _wait(indexed, "the upload queued while the worker was dead is not indexed", log)
            (delivery,) = receiver.wait_for(1, timeout=90)
            assert json.loads(delivery.body)["data"]["lead"]["email"] == "queued@example.com"

            health = httpx.get(f"{base}/api/health", timeout=TIMEOUT).json()
            assert health["status"] == "ok"
            assert health["components"]["worker"] == {
                "status": "ok", "restarts": 1,
                "latencyMs": health["components"]["worker"]["latencyMs"]}
            assert health["components"]["beat"]["status"] == "ok"
            assert proc.poll() is None
    finally:
        receiver.close()


def test_a_failure_at_start_up_stops_everything(tmp_path):
    """The web server cannot listen (the port is taken): serve stops the worker and beat and
    fails, rather than run half a service."""
    env = {**EMBEDDED, "VAR_DIR": str(tmp_path)}
    manage("migrate", "--noinput", env=env)
    log = tmp_path / "serve.log"
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with serve(env, port, log) as proc:
            proc.wait(timeout=180)  # three Pythons start slowly on a busy machine
            output = log.read_text()
            assert proc.returncode == 1, output[-3000:]
            assert "web exited with status 1 during start-up" in output
            with pytest.raises(ProcessLookupError):  # nothing of serve's is left running
                os.killpg(proc.pid, 0)
