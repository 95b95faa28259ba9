"""A rolling deploy under load fails no request (docs/deploy.md, "Rolling deploys").

nginx, with the configuration docs/deploy.md recommends (deploy/nginx.conf, on plain HTTP on a
free port instead of TLS on 443, the upstreams pointed at this test's processes), in front of
two daphne processes and two Celery workers on PostgreSQL and Redis. Threads send a steady load
through nginx: v1 reads, v1 lead creates with an Idempotency-Key (sent again with the same key
on a connection error, as a client should), widget chats (plain and streamed) and the widget's
live streams. Meanwhile each web process and then each worker is stopped with SIGTERM and
started again, one at a time, as a deploy would. Then: no request failed, every lead created
exists exactly once and its ``lead.created`` webhook reached the receiver (the workers' work
survived their restarts), and every stream ended by a stopping process came back.

Rate limits are off: the load comes from one address, and what is measured is the deploy.
It needs PostgreSQL and Redis (processes share a database, a broker and a channel layer only
through them): CI runs it in the PostgreSQL + Redis suite; on the embedded default it is
skipped, saying so. nginx is Debian's package, which ``make test`` installs (``make nginx``).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from tests.live import ROOT, environment, free_port, manage, scratch_database, wait_for_port

pytestmark = [
    pytest.mark.live,
    pytest.mark.skipif(
        not (os.environ.get("REDIS_URL") and os.environ.get("DATABASE_URL")),
        reason="a PostgreSQL + Redis deployment test: two web processes and two workers share "
               "a database, a broker and a channel layer only through them (CI runs it in the "
               "PostgreSQL + Redis suite)"),
]

NGINX = os.environ.get("NGINX", "/usr/sbin/nginx")
GRACE = 20  # SHUTDOWN_GRACE_SECONDS of the web processes
# A request with no answer by then is a failed one (a client's patience; machines shared with other
# test runs have held a request 30 s).
CLIENT_TIMEOUT = 60
SETTLE = 6  # nginx's fail_timeout (5 s) and a little: a restarted process is in rotation again


def site_config(web_ports: list[int], port: int) -> str:
    """deploy/nginx.conf as this test runs it: its HTTPS server on plain HTTP on ``port``, the
    redirecting server on port 80 left out, the upstreams pointed at ``web_ports``. Everything
    else (headers, timeouts, retries, body size, the streams' location) is the file's."""
    text = (ROOT / "deploy" / "nginx.conf").read_text()
    upstreams = re.findall(r"^    server 127\.0\.0\.1:\d+ (.*);$", text, flags=re.M)
    assert len(upstreams) == len(web_ports)
    text = re.sub(r"^    server 127\.0\.0\.1:\d+ .*;\n", "", text, flags=re.M)
    servers = "".join(f"    server 127.0.0.1:{p} {upstreams[0]};\n" for p in web_ports)
    text = text.replace("upstream salesagent {\n", "upstream salesagent {\n" + servers)
    redirect = re.search(r"server \{\n    listen 80;.*?\n\}\n", text, flags=re.S)
    text = text.replace(redirect.group(0), "")
    text, listens = re.subn(r"^    listen (\[::\]:)?443 ssl http2;\n", "", text, flags=re.M)
    assert listens == 2
    text = text.replace("    server_name salesagent.example.com;\n",
                        f"    listen 127.0.0.1:{port};\n    server_name localhost;\n")
    text, tls = re.subn(r"^    ssl_.*\n", "", text, flags=re.M)
    assert tls == 4
    return text


@contextlib.contextmanager
def nginx(directory: Path, web_ports: list[int]):
    if not os.access(NGINX, os.X_OK):
        pytest.fail(f"no nginx at {NGINX}: make test installs Debian's (make nginx), or set NGINX")
    port = free_port()
    (directory / "site.conf").write_text(site_config(web_ports, port))
    user = "user root;\n" if os.geteuid() == 0 else ""
    (directory / "nginx.conf").write_text(
        f"{user}worker_processes 1;\ndaemon off;\npid {directory}/nginx.pid;\n"
        f"error_log {directory}/error.log warn;\nevents {{ worker_connections 1024; }}\n"
        f"http {{\n  access_log {directory}/access.log;\n"
        + "".join(f"  {kind}_temp_path {directory}/{kind};\n"
                  for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
        + f"  include {directory}/site.conf;\n}}\n")
    proc = subprocess.Popen([NGINX, "-p", str(directory), "-e", str(directory / "error.log"),
                             "-c", str(directory / "nginx.conf")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    try:
        wait_for_port(port, proc=proc)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


class Process:
    """One web process or worker, stopped and started again as a deploy does."""

    def __init__(self, name: str, command: list[str], env: dict, log_dir: Path, port: int = 0):
        self.name, self.command, self.env, self.port = name, command, env, port
        self.log_dir, self.starts, self.proc = log_dir, 0, None

    @property
    def log(self) -> Path:
        return self.log_dir / f"{self.name}-{self.starts}.log"

    def start(self) -> None:
        self.starts += 1
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen(self.command, cwd=ROOT, env=environment(self.env),
                                         stdout=out, stderr=subprocess.STDOUT)

    def ready(self, timeout: float = 180, tenant: str = "") -> None:
        """Listening (a web process), and its first chat answered, directly: the readiness check
        a deploy waits for before it takes the next process down. A worker: its banner."""
        if self.port:
            wait_for_port(self.port, timeout=timeout, proc=self.proc)
            r = httpx.post(f"http://127.0.0.1:{self.port}/api/chat?tenant={tenant}",
                           json={"message": "Hello", "visitorId": "readiness"}, timeout=timeout)
            assert r.status_code == 200, r.text
            return
        deadline = time.monotonic() + timeout
        while "ready." not in self.log.read_text(errors="replace"):
            assert self.proc.poll() is None, self.log.read_text(errors="replace")[-2000:]
            assert time.monotonic() < deadline, f"{self.name} never said it was ready"
            time.sleep(0.2)

    def stop(self, timeout: float) -> int:
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=timeout)

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


@dataclass
class Tally:
    """What the load saw, per kind of request."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    ok: dict = field(default_factory=dict)
    failures: list = field(default_factory=list)
    retries: int = 0
    created: dict = field(default_factory=dict)  # email -> lead id
    reconnects: dict = field(default_factory=dict)  # stream -> reconnect events
    resumed: dict = field(default_factory=dict)  # stream -> sessions after one

    def success(self, kind: str) -> None:
        with self.lock:
            self.ok[kind] = self.ok.get(kind, 0) + 1

    def fail(self, kind: str, what: str) -> None:
        with self.lock:
            self.failures.append(f"{kind}: {what}")


def read_v1(base: str, key: str, stop: threading.Event, tally: Tally) -> None:
    with httpx.Client(base_url=base, timeout=CLIENT_TIMEOUT,
                      headers={"Authorization": f"Bearer {key}"}) as client:
        while not stop.is_set():
            try:
                r = client.get("/api/v1/leads", params={"limit": 5})
            except httpx.TransportError as exc:
                tally.fail("read", repr(exc))
                continue
            if r.status_code == 200:
                tally.success("read")
            else:
                tally.fail("read", f"{r.status_code} {r.text[:200]}")
            time.sleep(0.02)


def create_leads(base: str, key: str, stop: threading.Event, tally: Tally, tag: str) -> None:
    with httpx.Client(base_url=base, timeout=CLIENT_TIMEOUT,
                      headers={"Authorization": f"Bearer {key}"}) as client:
        n = 0
        while not stop.is_set():
            n += 1
            email = f"roll-{tag}-{n}@deploy.test"
            idempotency_key = str(uuid.uuid4())
            for _ in range(10):
                try:
                    r = client.post("/api/v1/leads", json={"email": email},
                                    headers={"Idempotency-Key": idempotency_key})
                except httpx.TransportError:
                    with tally.lock:
                        tally.retries += 1
                    time.sleep(0.2)
                    continue
                if r.status_code == 409 and "still being processed" in r.text:
                    time.sleep(0.2)
                    continue
                break
            else:
                tally.fail("create", f"{email}: no answer after 10 tries")
                continue
            if r.status_code == 201:
                tally.success("create")
                with tally.lock:
                    tally.created[email] = r.json()["id"]
            else:
                tally.fail("create", f"{r.status_code} {r.text[:200]}")
            time.sleep(0.05)


def chat(base: str, tenant: str, stop: threading.Event, tally: Tally) -> None:
    with httpx.Client(base_url=base, timeout=CLIENT_TIMEOUT) as client:
        n = 0
        while not stop.is_set():
            n += 1
            streamed = n % 2 == 0
            payload = {"message": "What does it cost?", "visitorId": f"roll-chat-{n}",
                       "stream": streamed}
            try:
                if streamed:
                    with client.stream("POST", f"/api/chat?tenant={tenant}", json=payload,
                                       headers={"Accept": "text/event-stream"}) as r:
                        body = "".join(r.iter_text())
                    good = r.status_code == 200 and "event: message_end" in body
                else:
                    r = client.post(f"/api/chat?tenant={tenant}", json=payload)
                    body, good = r.text, r.status_code == 200 and "sessionId" in r.json()
            except httpx.TransportError as exc:
                tally.fail("chat", repr(exc))
                continue
            if good:
                tally.success("chat")
            else:
                tally.fail("chat", f"{r.status_code} {body[:200]}")
            time.sleep(0.1)


def stream(base: str, tenant: str, stop: threading.Event, tally: Tally, name: str) -> None:
    """A widget's live stream, connected again after each ``reconnect`` event."""
    visitor = f"roll-{name}"
    r = httpx.post(f"{base}/api/chat?tenant={tenant}", timeout=60,
                   json={"message": "Hello", "visitorId": visitor})
    if r.status_code != 200:
        tally.fail("stream", f"its chat: {r.status_code} {r.text[:200]}")
        return
    session = r.json()["sessionId"]
    url = f"{base}/api/chat/stream?tenant={tenant}&sessionId={session}&visitorId={visitor}"
    tally.reconnects[name] = tally.resumed[name] = 0
    while not stop.is_set():
        told = False
        try:
            with httpx.stream("GET", url, timeout=httpx.Timeout(30, read=30)) as r:
                if r.status_code != 200:
                    tally.fail("stream", f"{r.status_code}")
                    time.sleep(0.5)
                    continue
                for line in r.iter_lines():
                    if line == "event: session":
                        tally.success("stream")
                        if tally.reconnects[name] > tally.resumed[name]:
                            tally.resumed[name] += 1
                    elif line == "event: reconnect":
                        tally.reconnects[name] += 1
                        told = True
                    if stop.is_set():
                        return
        except httpx.TransportError as exc:
            tally.fail("stream", repr(exc))
            continue
        if not told:
            tally.fail("stream", "ended without a reconnect event")
        time.sleep(0.25)


class Receiver(BaseHTTPRequestHandler):
    bodies: list = []

    def do_POST(self):  # noqa: N802 - http.server's name
        length = int(self.headers.get("Content-Length") or 0)
        self.bodies.append(self.rfile.read(length).decode())
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args):
        pass


def lead_counts(database_url: str) -> dict[str, int]:
    import psycopg

    with psycopg.connect(database_url) as conn:
        rows = conn.execute("SELECT email, count(*) FROM leads_lead "
                            "WHERE email LIKE 'roll-%%' GROUP BY email").fetchall()
    return dict(rows)


@pytest.fixture
def database():
    with scratch_database(f"salesagent_rolling_{os.getpid()}") as url:
        yield url


def test_a_rolling_restart_under_load_fails_no_request_and_loses_nothing(tmp_path, database):
    receiver = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    Receiver.bodies = []
    threading.Thread(target=receiver.serve_forever, daemon=True).start()
    env = {"VAR_DIR": str(tmp_path), "DATABASE_URL": database, "TRUST_X_FORWARDED_PROTO": "1",
           "V1_REQUIRE_HTTPS": "0", "RATE_LIMIT_ENABLED": "0", "LISTEN_AFTER_WARM_UP": "1",
           "SHUTDOWN_GRACE_SECONDS": str(GRACE), "DB_POOL_MAX_SIZE": "6",
           "WEBHOOKS_ALLOW_PRIVATE_TARGETS": "1", "WEBHOOKS_ALLOW_HTTP": "1",
           "PYTHONUNBUFFERED": "1"}
    manage("migrate", "--noinput", env=env, timeout=600)
    created = json.loads(manage("create_tenant", "Rolling", "--json", env=env, timeout=300))
    tenant, keys = created["tenant"]["publicId"], created["keys"]["live"]
    web_ports = [free_port(), free_port()]
    webs = [Process(f"web{i}", [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p",
                                str(port), "--no-server-name", "config.asgi:application"],
                    env, tmp_path, port) for i, port in enumerate(web_ports)]
    workers = [Process(f"worker{i}", [sys.executable, "-m", "celery", "-A", "config", "worker",
                                      "--loglevel=INFO", "--concurrency=1", "-n", f"w{i}@%h",
                                      "--without-gossip", "--without-mingle",
                                      "--without-heartbeat"], env, tmp_path)
               for i in range(2)]
    processes = webs + workers
    stop, tally, threads = threading.Event(), Tally(), []
    try:
        for process in processes:
            process.start()
            process.ready(tenant=tenant)
        with nginx(tmp_path, web_ports) as base:
            r = httpx.post(f"{base}/api/v1/webhooks", timeout=30,
                           headers={"Authorization": f"Bearer {keys['admin']}"},
                           json={"url": f"http://127.0.0.1:{receiver.server_port}/hook",
                                 "events": ["lead.created"]})
            assert r.status_code == 201, r.text
            threads = [
                threading.Thread(target=read_v1, args=(base, keys["read"], stop, tally)),
                threading.Thread(target=create_leads,
                                 args=(base, keys["write"], stop, tally, "a")),
                threading.Thread(target=create_leads,
                                 args=(base, keys["write"], stop, tally, "b")),
                threading.Thread(target=chat, args=(base, tenant, stop, tally)),
                *[threading.Thread(target=stream, args=(base, tenant, stop, tally, f"s{i}"))
                  for i in range(3)],
            ]
            started = time.monotonic()
            for thread in threads:
                thread.start()
            time.sleep(4)
            for process in webs:  # the web processes one at a time, then the workers
                assert process.stop(timeout=GRACE + 10) == 0, process.log.read_text()[-2000:]
                process.start()
                process.ready(tenant=tenant)
                time.sleep(SETTLE)
            for process in workers:
                assert process.stop(timeout=60) == 0, process.log.read_text()[-2000:]
                process.start()
                process.ready()
                time.sleep(2)
            time.sleep(3)
            stop.set()
            for thread in threads:
                thread.join(timeout=40)
            duration = time.monotonic() - started
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                delivered = "\n".join(Receiver.bodies)
                missing = [lead for lead in tally.created.values() if lead not in delivered]
                if not missing:
                    break
                time.sleep(0.5)
    finally:
        stop.set()
        for process in processes:
            process.kill()
        receiver.shutdown()

    requests = sum(tally.ok.values()) + len(tally.failures)
    print(f"\nrolling deploy: {requests} requests in {duration:.0f} s ({tally.ok}), "
          f"{len(tally.failures)} failed, {tally.retries} create(s) sent again, "
          f"{len(tally.created)} leads, stream reconnects {tally.reconnects}, "
          f"resumed {tally.resumed}")
    assert tally.failures == []
    assert all(tally.ok.get(kind) for kind in ("read", "create", "chat", "stream"))
    counts = lead_counts(database)
    assert set(counts) == set(tally.created), "a created lead is missing, or one was not answered"
    assert set(counts.values()) == {1}, "a lead was created twice"
    assert missing == [], f"{len(missing)} lead.created webhooks never arrived"
    # Every stream was on a process that was restarted, and came back each time it was told.
    assert all(tally.reconnects[name] >= 1 for name in tally.reconnects), tally.reconnects
    assert tally.resumed == tally.reconnects
    for process in webs:
        for log in tmp_path.glob(f"{process.name}-*.log"):
            assert "Traceback" not in log.read_text(errors="replace"), log.read_text()[-3000:]
