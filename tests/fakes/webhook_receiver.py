"""A webhook receiver on 127.0.0.1 for tests: it records every request it gets and answers
with the statuses, delays and redirects a test chooses.

Tests check what arrived here (headers, raw bytes, signatures recomputed by the test itself),
never what the code under test believes it sent.
"""

from __future__ import annotations

import contextlib
import socket
import ssl
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass(frozen=True)
class Answer:
    status: int = 200
    delay: float = 0.0  # seconds before answering
    body: bytes = b'{"ok":true}'
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Received:
    method: str
    path: str
    headers: dict[str, str]  # names in lower case
    body: bytes
    at: float  # time.time() when the request was read


class WebhookReceiver:
    def __init__(self, tls: ssl.SSLContext | None = None) -> None:
        """``tls``: a server context, to listen with HTTPS (``server_names`` records SNI)."""
        self.received: list[Received] = []
        self.server_names: list[str | None] = []
        self._answers: deque[Answer] = deque()
        self.default = Answer()
        self._lock = threading.Lock()
        self._arrived = threading.Condition(self._lock)
        # The connections open now (senders keep them alive): closed with the receiver, so that
        # nothing reaches a closed receiver through a connection kept from before.
        self.connections: set = set()
        self.connections_opened = 0
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self.scheme = "http"
        if tls is not None:
            tls.sni_callback = lambda sock, name, ctx: self.server_names.append(name)
            self._server.socket = tls.wrap_socket(self._server.socket, server_side=True)
            self.scheme = "https"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    def url(self, path: str = "/hooks", host: str = "127.0.0.1") -> str:
        return f"{self.scheme}://{host}:{self.port}{path}"

    def answer(self, *answers: Answer) -> None:
        """The next requests get these answers in order; later ones get ``default``."""
        with self._lock:
            self._answers.extend(answers)

    def reset(self) -> None:
        with self._lock:
            self.received.clear()
            self._answers.clear()
            self.default = Answer()

    def wait_for(self, count: int, timeout: float = 10.0) -> list[Received]:
        """Blocks until ``count`` requests have arrived; returns them."""
        deadline = time.monotonic() + timeout
        with self._arrived:
            while len(self.received) < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"{len(self.received)} of {count} requests arrived")
                self._arrived.wait(left)
            return list(self.received)

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self.drop_connections()

    def drop_connections(self) -> None:
        """Closes every open connection, as a receiver ending idle keep-alive connections does."""
        with self._lock:
            open_now = list(self.connections)
        for sock in open_now:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def _take(self, request: Received) -> Answer:
        with self._arrived:
            self.received.append(request)
            self._arrived.notify_all()
            return self._answers.popleft() if self._answers else self.default


def _handler(receiver: WebhookReceiver) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # Headers and body are two writes: without this, Nagle's algorithm holds the body
        # for the sender's delayed ACK (40 ms on loopback), which no real receiver adds.
        disable_nagle_algorithm = True

        def log_message(self, *args) -> None:  # keep test output clean
            pass

        def setup(self) -> None:
            super().setup()
            with receiver._lock:
                receiver.connections.add(self.connection)
                receiver.connections_opened += 1

        def finish(self) -> None:
            with receiver._lock:
                receiver.connections.discard(self.connection)
            with contextlib.suppress(OSError):
                super().finish()

        def do_POST(self) -> None:  # noqa: N802
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length)
            answer = receiver._take(Received(
                method="POST", path=self.path, body=body, at=time.time(),
                headers={k.lower(): v for k, v in self.headers.items()}))
            if answer.delay:
                time.sleep(answer.delay)
            self.send_response(answer.status)
            for name, value in answer.headers.items():
                self.send_header(name, value)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(answer.body)))
            self.end_headers()
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                self.wfile.write(answer.body)  # the sender may have given up (a timeout test)

    return Handler
