"""A small HTTP/1.1 keep-alive client for the benchmarks.

It does as little as a client can: one socket per connection with Nagle off, the request
written in one ``sendall``, the answer read until its ``Content-Length`` or its last chunk. Both
sides of every comparison are measured with it, so what it costs (a few tens of microseconds)
lands on both; it never parses JSON or checks a schema while timing.
"""

from __future__ import annotations

import socket
import threading
import time
from dataclasses import dataclass, field
from urllib.parse import urlsplit


class HttpError(RuntimeError):
    pass


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes
    seconds: float  # from the first byte written to the last byte read
    first_byte: float  # from the first byte written to the end of the head


class Connection:
    """One kept-alive connection to ``base_url`` (``http://host:port``)."""

    def __init__(self, base_url: str, headers: dict[str, str] | None = None,
                 timeout: float = 60.0):
        parts = urlsplit(base_url)
        self.address = (parts.hostname or "127.0.0.1", parts.port or 80)
        self.host = parts.netloc
        self.timeout = timeout
        self.default_headers = dict(headers or {})
        self.sock: socket.socket | None = None
        self.buffer = b""

    def _connect(self) -> socket.socket:
        sock = socket.create_connection(self.address, timeout=self.timeout)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock, self.buffer = sock, b""
        return sock

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def request(self, method: str, path: str, *, body: bytes = b"",
                headers: dict[str, str] | None = None) -> Answer:
        lines = [f"{method} {path} HTTP/1.1", f"Host: {self.host}"]
        lines += [f"{name}: {value}" for name, value in {**self.default_headers,
                                                         **(headers or {})}.items()]
        if body or method in ("POST", "PUT", "PATCH"):
            lines.append(f"Content-Length: {len(body)}")
        payload = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body
        if self.sock is None or method not in ("GET", "HEAD"):
            return self._exchange(payload)
        try:
            return self._exchange(payload)
        except (OSError, HttpError):
            # The server closed the kept-alive connection while it was idle (daphne does after
            # a minute): a new one, as a browser would, and the clock starts again.
            return self._exchange(payload)

    def _exchange(self, payload: bytes) -> Answer:
        sock = self.sock or self._connect()
        started = time.perf_counter()
        try:
            sock.sendall(payload)
            status, headers_, first_byte = self._read_head(started)
            answer_body = self._read_body(headers_)
        except (OSError, HttpError):
            self.close()
            raise
        seconds = time.perf_counter() - started
        if headers_.get("connection", "").lower() == "close":
            self.close()
        return Answer(status, headers_, answer_body, seconds, first_byte)

    def _fill(self) -> None:
        assert self.sock is not None
        chunk = self.sock.recv(262144)
        if not chunk:
            raise HttpError("the server closed the connection")
        self.buffer += chunk

    def _read_head(self, started: float) -> tuple[int, dict[str, str], float]:
        while (end := self.buffer.find(b"\r\n\r\n")) < 0:
            self._fill()
        first_byte = time.perf_counter() - started
        head, self.buffer = self.buffer[:end].decode("latin-1"), self.buffer[end + 4:]
        status_line, *header_lines = head.split("\r\n")
        headers: dict[str, str] = {}
        for line in header_lines:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        return int(status_line.split(" ", 2)[1]), headers, first_byte

    def _take(self, size: int) -> bytes:
        while len(self.buffer) < size:
            self._fill()
        data, self.buffer = self.buffer[:size], self.buffer[size:]
        return data

    def _read_body(self, headers: dict[str, str]) -> bytes:
        if "content-length" in headers:
            return self._take(int(headers["content-length"]))
        if headers.get("transfer-encoding", "").lower() == "chunked":
            parts = []
            while True:
                while (end := self.buffer.find(b"\r\n")) < 0:
                    self._fill()
                size = int(self.buffer[:end].split(b";")[0], 16)
                self.buffer = self.buffer[end + 2:]
                parts.append(self._take(size))
                self._take(2)
                if size == 0:
                    return b"".join(parts)
        raise HttpError(f"no Content-Length and not chunked: {headers}")


@dataclass
class Load:
    """What ``load`` measured: requests answered in ``seconds``, and their latencies (ms)."""

    requests: int
    seconds: float
    latencies: list[float] = field(default_factory=list)
    errors: int = 0

    @property
    def rate(self) -> float:
        return self.requests / self.seconds


def load(base_url: str, paths: list[tuple[str, dict[str, str]]], *, concurrency: int,
         seconds: float) -> Load:
    """``concurrency`` kept-alive connections, each sending the next of ``paths`` (cycled; a
    path with its headers) as soon as its answer arrives, for ``seconds``. Each connection runs
    on a thread of its own; they spend their time in ``recv``, without the GIL."""
    connections = [Connection(base_url) for _ in range(concurrency)]
    for number, connection in enumerate(connections):  # open them before the clock starts
        path, headers = paths[number % len(paths)]
        connection.request("GET", path, headers=headers)
    results: list[list[float]] = [[] for _ in connections]
    errors = [0] * concurrency
    barrier = threading.Barrier(concurrency + 1)
    deadline = 0.0

    def run(index: int) -> None:
        connection, mine = connections[index], results[index]
        position = index
        barrier.wait()
        while time.perf_counter() < deadline:
            path, headers = paths[position % len(paths)]
            position += concurrency
            answer = connection.request("GET", path, headers=headers)
            if answer.status != 200:
                errors[index] += 1
            mine.append(answer.seconds * 1000)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(concurrency)]
    for thread in threads:
        thread.start()
    started = time.perf_counter()
    deadline = started + seconds
    barrier.wait()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - started
    for connection in connections:
        connection.close()
    latencies = [sample for samples in results for sample in samples]
    return Load(len(latencies), elapsed, latencies, sum(errors))
