"""A web process asked to stop (SIGTERM) drains (config/shutdown.py; docs/deploy.md, "Rolling
deploys"): it refuses new connections at once, answers the request in flight, ends a widget's
live stream with a ``reconnect`` event, and exits; a request that never completes holds it no
longer than SHUTDOWN_GRACE_SECONDS. Real daphne processes, on either database."""

from __future__ import annotations

import json
import os
import queue
import signal
import socket
import threading
import time

import httpx
import pytest

from tests.live import daphne, manage, scratch_database

pytestmark = pytest.mark.live


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """A migrated database of its own (the embedded default's in a temporary directory, or a
    scratch PostgreSQL database), a tenant and the environment of the processes."""
    env = {"VAR_DIR": str(tmp_path_factory.mktemp("drain")), "V1_REQUIRE_HTTPS": "0", "AGENT_WARM_UP": "0"}
    if os.environ.get("DATABASE_URL"):
        with scratch_database(f"salesagent_shutdown_{os.getpid()}") as url:
            env["DATABASE_URL"] = url
            yield _tenant(env)
    else:
        env["DATABASE_URL"] = None
        yield _tenant(env)


def _tenant(env: dict) -> dict:
    manage("migrate", "--noinput", env=env, timeout=600)
    created = json.loads(manage("create_tenant", "Draining", "--json", env=env, timeout=600))
    return {"env": env, "public_id": created["tenant"]["publicId"],
            "key": created["keys"]["live"]["write"]}


def _read_stream(url: str, out: queue.Queue) -> None:
    with httpx.stream("GET", url, timeout=httpx.Timeout(30, read=30)) as r:
        out.put(("status", r.status_code))
        name = retry = None
        for line in r.iter_lines():
            if line.startswith("retry: "):
                retry = int(line[7:])
            elif line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: "):
                out.put((name, json.loads(line[6:]), retry))
    out.put(("ended", None, None))


def _refused(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
    except ConnectionRefusedError:
        return True
    return False


def _half_sent_lead(port: int, key: str) -> tuple[socket.socket, bytes]:
    """A lead create whose headers have arrived and whose body has not: a request in flight."""
    body = json.dumps({"email": "in-flight@drain.test"}).encode()
    conn = socket.create_connection(("127.0.0.1", port), timeout=10)
    conn.sendall(b"POST /api/v1/leads HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                 b"Content-Type: application/json\r\nAuthorization: Bearer " + key.encode()
                 + b"\r\nIdempotency-Key: drain-1\r\nContent-Length: "
                 + str(len(body)).encode() + b"\r\n\r\n")
    return conn, body


def _response(conn: socket.socket) -> bytes:
    chunks = []
    while chunk := conn.recv(65536):
        chunks.append(chunk)
    return b"".join(chunks)


def test_sigterm_finishes_the_request_in_flight_ends_streams_with_reconnect_and_exits(served):
    env = {**served["env"], "SHUTDOWN_GRACE_SECONDS": "20"}
    with daphne(env) as base:
        port = int(base.rsplit(":", 1)[1])
        chat = httpx.post(f"{base}/api/chat?tenant={served['public_id']}", timeout=30,
                          json={"message": "Hello", "visitorId": "drain"}).json()
        events: queue.Queue = queue.Queue()
        url = (f"{base}/api/chat/stream?tenant={served['public_id']}"
               f"&sessionId={chat['sessionId']}&visitorId=drain")
        threading.Thread(target=_read_stream, args=(url, events), daemon=True).start()
        assert events.get(timeout=15) == ("status", 200)
        assert events.get(timeout=15)[0] == "session"
        conn, body = _half_sent_lead(port, served["key"])
        time.sleep(0.3)  # its headers are read

        base.process.send_signal(signal.SIGTERM)
        name, data, retry = events.get(timeout=5)
        assert (name, data, retry) == ("reconnect", {"retryMs": 250}, 250)
        assert events.get(timeout=5)[0] == "ended"
        assert _refused(port), "a new connection was accepted after SIGTERM"
        time.sleep(1.5)
        assert base.process.poll() is None, "it exited with a request in flight"

        conn.sendall(body)
        answer = _response(conn)
        conn.close()
        head = answer.split(b"\r\n\r\n", 1)[0].lower()
        assert head.startswith(b"http/1.1 201"), answer[:300]
        assert b"connection: close" in head
        assert base.process.wait(timeout=10) == 0
    with open(base.log) as log:
        assert "Traceback" not in log.read()


def test_a_request_that_never_completes_holds_the_process_no_longer_than_the_grace(served):
    env = {**served["env"], "SHUTDOWN_GRACE_SECONDS": "2"}
    with daphne(env) as base:
        port = int(base.rsplit(":", 1)[1])
        conn, _ = _half_sent_lead(port, served["key"])
        time.sleep(0.3)
        started = time.monotonic()
        base.process.send_signal(signal.SIGTERM)
        assert base.process.wait(timeout=10) == 0
        assert 1.5 <= time.monotonic() - started < 5
        conn.close()
