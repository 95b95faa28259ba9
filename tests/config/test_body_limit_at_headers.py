"""A body over the limit costs the server no disk (issue 28, "Disk filled without credentials"),
through a real daphne: a declared ``Content-Length`` over ``MAX_REQUEST_BODY_BYTES`` is answered
413 at the headers, before a byte of the body is read, and a chunked body is dropped the moment it
passes the limit, answered 413, and its connection closed (config/serving.py).

Twisted spools a request body to a temporary file until the whole of it has arrived: before this,
one unauthenticated connection with ``Content-Length: 10737418240`` or an endless chunked body
filled the disk at the network's speed. The server runs with ``TMPDIR`` set to a directory of the
test's own, and the test measures every file the server process holds open in it (a temporary
file has no name in the directory, so its size is read through ``/proc/<pid>/fd``) while it
pushes 64 MB at it."""

from __future__ import annotations

import contextlib
import json
import os
import select
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from config.serving import LINGER_SECONDS
from tests.live import daphne, manage, scratch_database

pytestmark = pytest.mark.live  # daphne

LIMIT = 1024 * 1024  # the server's MAX_REQUEST_BODY_BYTES
PUSHED = 64 * 1024 * 1024  # what the attacker sends, whatever the server answers
BLOCK = 64 * 1024
PRODUCTION = {"DEBUG": "0", "SECRET_KEY": "body-limit-secret-key-0123456789", "V1_REQUIRE_HTTPS": "0",
              "ALLOWED_HOSTS": "127.0.0.1,localhost", "MAX_REQUEST_BODY_BYTES": str(LIMIT)}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """daphne with production settings, on a scratch PostgreSQL database when the suite runs on
    PostgreSQL (with its Redis), on an SQLite file otherwise; its temporary files in a directory
    of its own."""
    spool = tmp_path_factory.mktemp("daphne-tmp")
    env = {**PRODUCTION, "VAR_DIR": str(tmp_path_factory.mktemp("var")), "TMPDIR": str(spool)}
    if os.environ.get("DATABASE_URL", "").startswith("postgres"):
        with scratch_database(f"salesagent_body_limit_{os.getpid()}") as database:
            yield from _serve({**env, "DATABASE_URL": database}, spool)
    else:
        yield from _serve({**env, "DATABASE_URL": None, "REDIS_URL": None}, spool)


def _serve(env: dict, spool: Path) -> Iterator[dict]:
    manage("migrate", "--noinput", env=env)
    created = json.loads(manage("create_tenant", "Spool Co", "--json", env=env))
    with daphne(env) as base:
        yield {"base": base, "pid": base.process.pid, "spool": spool,
               "key": created["keys"]["live"]["write"], "log": base.log}


class DiskWatch:
    """The most the server process held in files under its temporary directory at any moment,
    sampled every few milliseconds while the block runs."""

    def __init__(self, pid: int, spool: Path):
        self.pid, self.spool, self.most = pid, str(spool), 0
        self._done = threading.Event()

    def held(self) -> int:
        total = 0
        fds = Path(f"/proc/{self.pid}/fd")
        for fd in fds.iterdir():
            with contextlib.suppress(OSError):  # closed between the listing and the look
                if os.readlink(fd).startswith(self.spool):
                    total += os.stat(fd).st_size
        named = sum(p.stat().st_size for p in Path(self.spool).rglob("*") if p.is_file())
        return total + named

    def _run(self) -> None:
        while not self._done.is_set():
            self.most = max(self.most, self.held())
            time.sleep(0.005)

    def __enter__(self) -> DiskWatch:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._done.set()
        self._thread.join()
        self.most = max(self.most, self.held())


def _connect(base: str) -> socket.socket:
    url = urlsplit(base)
    return socket.create_connection((url.hostname, url.port), timeout=10)


def _head(base: str, path: str, framing: str, extra: str = "") -> bytes:
    return (f"POST {path} HTTP/1.1\r\nHost: {urlsplit(base).netloc}\r\n"
            f"Content-Type: application/json\r\n{extra}{framing}\r\n\r\n").encode()


def _answer(received: bytes) -> tuple[int, dict[str, str], dict]:
    """(status, headers, JSON body) of one complete HTTP/1.1 answer."""
    head, _, content = received.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.split(": ", 1) for line in lines[1:])
    headers = {name.lower(): value for name, value in headers.items()}
    if headers.get("transfer-encoding") == "chunked":
        body = b""
        while content:
            size, _, rest = content.partition(b"\r\n")
            if not int(size, 16):
                break
            body, content = body + rest[:int(size, 16)], rest[int(size, 16) + 2:]
        content = body
    return int(lines[0].split(" ", 2)[1]), headers, json.loads(content)


class Pushed:
    """What became of one push: what the server answered, how much was sent, when the answer
    began and when the connection ended (the server's reset, or its close for a client that
    stops at the answer)."""

    def __init__(self):
        self.received, self.sent = b"", 0
        self.answered_at: float | None = None
        self.ended_at: float | None = None


def _push(sock: socket.socket, blocks: Iterator[bytes], *, heed: bool, pace: float = 0.0,
          seconds: float = 20.0) -> Pushed:
    """Sends ``blocks`` (up to ``PUSHED`` bytes; one each ``pace`` seconds) while reading what the
    server answers. ``heed``: stop sending once the answer has begun and read it to its end, as
    an HTTP client does; else keep sending whatever the server says, as an attacker does, until
    the server cuts the connection."""
    sock.setblocking(False)
    out = Pushed()
    pending, next_send = b"", 0.0
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        sending = out.sent < PUSHED and not (heed and out.received)
        readable, writable, _ = select.select([sock], [sock] if sending else [], [], 0.05)
        if readable:
            try:
                chunk = sock.recv(65536)
            except ConnectionResetError:
                break
            if chunk:
                out.received += chunk
                out.answered_at = out.answered_at or time.monotonic()
            elif heed:
                break  # the server's close: the answer is whole
            elif not sending:
                break
        if writable and time.monotonic() >= next_send:
            pending = pending or next(blocks)
            try:
                n = sock.send(pending)
            except (BrokenPipeError, ConnectionResetError):
                break
            out.sent, pending = out.sent + n, pending[n:]
            next_send = time.monotonic() + pace
    else:
        return out  # the deadline: the connection did not end
    out.ended_at = time.monotonic()
    return out


def _zeros() -> Iterator[bytes]:
    block = b"0" * BLOCK
    while True:
        yield block


def _chunks() -> Iterator[bytes]:
    block = b"%x\r\n%s\r\n" % (BLOCK, b"0" * BLOCK)
    while True:
        yield block


def _still_serves(server) -> None:
    r = httpx.get(server["base"] + "/api/health", timeout=20)
    assert r.status_code == 200, r.text
    r = httpx.post(server["base"] + "/api/v1/leads", timeout=20,
                   headers={"Authorization": f"Bearer {server['key']}"},
                   json={"email": f"after-{time.monotonic_ns()}@example.com", "name": "After"})
    assert r.status_code == 201, r.text


@pytest.mark.parametrize("path,surface", [("/api/chat", "legacy"), ("/api/v1/leads", "v1")])
def test_a_declared_length_over_the_limit_is_413_before_any_body_is_sent(server, path, surface):
    auth = f"Authorization: Bearer {server['key']}\r\n" if surface == "v1" else ""
    with _connect(server["base"]) as sock:
        sock.sendall(_head(server["base"], path, "Content-Length: 10737418240", auth))
        received = b""
        with contextlib.suppress(TimeoutError):  # before the fix: no answer, the body awaited
            while chunk := sock.recv(65536):
                received += chunk
    assert received, "no answer to the headers: the server waits for the 10 GiB body"
    status, headers, body = _answer(received)
    assert status == 413
    assert headers["connection"] == "close"
    if surface == "v1":
        assert body["error"]["code"] == "invalid_request", body
        assert body["error"]["message"] == "The request body is too large."
    else:
        assert body == {"error": "The request body is too large."}
    _still_serves(server)


def test_a_declared_length_over_the_limit_writes_nothing_to_disk(server):
    """The attacker ignores the 413 and keeps sending (6.4 MB/s, for up to 10 s): nothing of it
    is kept, and once the answer is out the server reads and drops the rest for
    ``LINGER_SECONDS`` at most, then cuts the connection."""
    with DiskWatch(server["pid"], server["spool"]) as disk, _connect(server["base"]) as sock:
        sock.sendall(_head(server["base"], "/api/chat", "Content-Length: 10737418240"))
        pushed = _push(sock, _zeros(), heed=False, pace=0.01)
    assert disk.most < 64 * 1024, f"{disk.most} bytes spooled to disk ({pushed.sent} sent)"
    assert pushed.received.startswith(b"HTTP/1.1 413 "), pushed.received[:200]
    assert pushed.ended_at is not None and pushed.sent < PUSHED, "the server read on for ever"
    assert pushed.ended_at - pushed.answered_at < LINGER_SECONDS + 3
    _still_serves(server)


@pytest.mark.parametrize("heed", [True, False], ids=["client", "attacker"])
def test_an_endless_chunked_body_is_cut_at_the_limit(server, heed):
    with DiskWatch(server["pid"], server["spool"]) as disk, _connect(server["base"]) as sock:
        sock.sendall(_head(server["base"], "/api/chat", "Transfer-Encoding: chunked"))
        pushed = _push(sock, _chunks(), heed=heed, pace=0.0 if heed else 0.01)
    assert disk.most <= LIMIT, f"{disk.most} bytes spooled to disk for a limit of {LIMIT}"
    assert pushed.ended_at is not None and pushed.sent < PUSHED, "the server read on for ever"
    status, headers, body = _answer(pushed.received)
    assert (status, body) == (413, {"error": "The request body is too large."})
    assert headers["connection"] == "close"
    _still_serves(server)


def test_the_server_logged_no_error(server):
    log = Path(server["log"]).read_text(errors="replace")
    assert "Traceback" not in log, log[-3000:]
