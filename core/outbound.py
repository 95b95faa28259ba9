"""The service's one outbound HTTP client, checked against server-side request forgery: what
webhooks, calendars and the CRM connectors (integrations) send to URLs that someone outside the
service chose.

A URL names a host; a host names addresses. A request must never reach the service's own
network (server-side request forgery), so the host is resolved once, every address it resolves
to must be public, and the request connects to one of those very addresses, with the name kept
for the ``Host`` header, TLS SNI and certificate check. A DNS answer that changes between the
check and the connection (DNS rebinding) therefore cannot redirect the request, and the address
actually connected to is checked once more. Redirects are never followed.

Each caller names its ``Policy``: the two settings that lift the rules for tests and local
development (``<PREFIX>_ALLOW_HTTP``, ``<PREFIX>_ALLOW_PRIVATE_TARGETS``, both off by default)
and the words of its refusals.
"""

from __future__ import annotations

import contextlib
import heapq
import http.client
import ipaddress
import itertools
import os
import socket
import ssl
import threading
import time
from dataclasses import dataclass
from functools import lru_cache
from urllib.parse import SplitResult, urlsplit

from django.conf import settings

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

MAX_URL_LENGTH = 2048
EXCERPT_CHARS = 1024  # of the receiver's answer, kept on the attempt
_READ_BYTES = 16 * 1024  # what is read of the answer's body at most

# Ranges that ipaddress does not already call private, loopback, link-local, multicast, reserved
# or unspecified, but that are no public Internet host either.
_NON_PUBLIC_V4 = (
    ipaddress.ip_network("100.64.0.0/10"),  # carrier-grade NAT (RFC 6598)
    ipaddress.ip_network("192.0.0.0/24"),  # IETF protocol assignments
    ipaddress.ip_network("198.18.0.0/15"),  # benchmarking
)
_NAT64 = ipaddress.ip_network("64:ff9b::/96")  # an IPv4 address in IPv6 clothing


@dataclass(frozen=True)
class Policy:
    """Who is sending, and so which settings lift the rules and how a refusal reads.

    What a refused URL is told names the settings that lift the rules for local development, and
    never which address a name resolved to: that would map the service's own network for
    whoever may enter a URL."""

    prefix: str  # "WEBHOOKS": WEBHOOKS_ALLOW_HTTP, WEBHOOKS_ALLOW_PRIVATE_TARGETS
    what: str  # "webhooks", in "(webhooks go to public Internet addresses only)"
    credentials: str = "Credentials in the URL are not allowed."

    def allow_http(self) -> bool:
        return bool(getattr(settings, f"{self.prefix}_ALLOW_HTTP", False))

    def allow_private(self) -> bool:
        return bool(getattr(settings, f"{self.prefix}_ALLOW_PRIVATE_TARGETS", False))

    @property
    def https_only(self) -> str:
        return f"Use an https:// URL. For local development, set {self.prefix}_ALLOW_HTTP=1."

    @property
    def not_public(self) -> str:
        return (f"resolves to an address that is not public ({self.what} go to public Internet "
                f"addresses only). For local development, set "
                f"{self.prefix}_ALLOW_PRIVATE_TARGETS=1.")


class TargetRefused(Exception):
    """The URL may not be sent to (scheme, shape, or a non-public address)."""

    def __init__(self, message: str, *, code: str = "invalid_format", semantic: bool = False,
                 permanent: bool = True):
        super().__init__(message)
        self.message = message
        self.code = code
        # True when the URL is well formed but points where requests may not go (422, not 400).
        self.semantic = semantic
        # False when trying again later may succeed (a name that does not resolve yet); a
        # delivery refused for good fails at once rather than spend its whole schedule.
        self.permanent = permanent


def is_public(address: IPAddress) -> bool:
    """Whether a request may connect to ``address``: a public unicast Internet address."""
    embedded = _embedded_ipv4(address)
    if embedded is not None:
        return is_public(embedded)
    if _is_special_purpose(address):
        return False
    if isinstance(address, ipaddress.IPv4Address) and any(address in n for n in _NON_PUBLIC_V4):
        return False
    return address.is_global


def _embedded_ipv4(address: IPAddress) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 one leads to (IPv4-mapped, 6to4, Teredo's client, NAT64)."""
    if not isinstance(address, ipaddress.IPv6Address):
        return None
    embedded = address.ipv4_mapped or address.sixtofour
    if embedded is not None:
        return embedded
    if address.teredo is not None:
        return address.teredo[1]
    if address in _NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def _is_special_purpose(address: IPAddress) -> bool:
    return (address.is_private or address.is_loopback or address.is_link_local
            or address.is_multicast or address.is_reserved or address.is_unspecified)


def parse_url(url: str, *, policy: Policy) -> SplitResult:
    """The URL's parts, if its shape may be sent to (scheme, host, no credentials)."""
    if len(url) > MAX_URL_LENGTH:
        raise TargetRefused(f"At most {MAX_URL_LENGTH} characters.", code="too_long")
    parts = _split(url)
    schemes = ("https", "http") if policy.allow_http() else ("https",)
    if parts.scheme not in schemes:
        raise TargetRefused(policy.https_only if parts.scheme == "http"
                            else "Expected an https:// URL.")
    if not parts.hostname:
        raise TargetRefused("The URL has no host.")
    if parts.username is not None or parts.password is not None:
        raise TargetRefused(policy.credentials)
    if any(c.isspace() for c in url):
        raise TargetRefused("The URL contains whitespace.")
    return parts


def _split(url: str) -> SplitResult:
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 -- raises ValueError on a malformed port
    except ValueError:
        raise TargetRefused("Not a valid URL.") from None
    return parts


def default_port(parts: SplitResult) -> int:
    return parts.port or (443 if parts.scheme == "https" else 80)


def resolve(host: str, port: int) -> list[str]:
    """Every address the host resolves to, in the resolver's order (tests replace this)."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    seen: list[str] = []
    for info in infos:
        address = str(info[4][0]).split("%", 1)[0]  # drop an IPv6 zone id
        if address not in seen:
            seen.append(address)
    return seen


def public_addresses(host: str, port: int, *, policy: Policy) -> list[IPAddress]:
    """The host's addresses, all of them public (unless private targets are allowed)."""
    try:
        raw = resolve(host, port)
    except (OSError, UnicodeError) as exc:
        raise TargetRefused(f"The host {host!r} does not resolve ({exc}).", semantic=True,
                            permanent=False) from None
    if not raw:
        raise TargetRefused(f"The host {host!r} does not resolve.", semantic=True, permanent=False)
    addresses = [ipaddress.ip_address(a) for a in raw]
    if not policy.allow_private():
        # One non-public address is enough to refuse: which one a client picks is not ours to say.
        for address in addresses:
            if not is_public(address):
                raise TargetRefused(f"The host {host!r} {policy.not_public}", semantic=True)
    return addresses


def check_target(url: str, *, policy: Policy) -> None:
    """Raises TargetRefused unless ``url`` may be sent to now."""
    parts = parse_url(url, policy=policy)
    public_addresses(parts.hostname, default_port(parts), policy=policy)


@dataclass(frozen=True)
class Outcome:
    """What one request achieved. ``status_code`` is None when no answer came."""

    status_code: int | None
    duration_ms: int
    error: str = ""
    excerpt: str = ""
    remote_address: str = ""
    permanent: bool = False  # refused by the address rules: no later attempt can succeed
    body: bytes = b""  # the answer's body, up to the caller's ``read_bytes``
    retry_after: str = ""  # the answer's Retry-After header, as sent

    @property
    def success(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300 and not self.error


class _PinnedConnection(http.client.HTTPConnection):
    """HTTP(S) to one given address, whatever the name resolves to by now.

    ``host`` stays the URL's name, so the ``Host`` header, SNI and the certificate check are the
    name's; only the TCP connection goes to ``address``.
    """

    def __init__(self, host: str, port: int, *, address: IPAddress, timeout: float,
                 tls_context: ssl.SSLContext | None, policy: Policy):
        super().__init__(host, port, timeout=timeout)
        self.address = address
        self.policy = policy
        self._tls = tls_context
        # The Host header omits the port when it is the scheme's default.
        self.default_port = 443 if tls_context is not None else 80
        self.raw_socket: socket.socket | None = None
        self.idle_since = 0.0

    def connect(self) -> None:
        family = socket.AF_INET6 if self.address.version == 6 else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        self.raw_socket = sock
        sock.settimeout(self.timeout)
        sock.connect((str(self.address), self.port))
        peer = ipaddress.ip_address(sock.getpeername()[0].split("%", 1)[0])
        if not _allowed(peer, self.policy):
            sock.close()
            raise TargetRefused(f"The host {self.host!r} {self.policy.not_public}", semantic=True)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock = (self._tls.wrap_socket(sock, server_hostname=self.host)
                     if self._tls is not None else sock)

    def set_deadline(self, seconds: float) -> None:
        """The socket timeout of the next exchange (a kept connection's was its first's)."""
        self.timeout = seconds
        if self.sock is not None:
            self.sock.settimeout(seconds)


def _allowed(address: IPAddress, policy: Policy) -> bool:
    return policy.allow_private() or is_public(address)


_PoolKey = tuple[str, str, str, int, str]  # policy, scheme, host name, port, the checked address


class ConnectionPool:
    """Kept-alive connections of one worker process, idle between attempts, shared by its
    threads (each connection serves one exchange at a time: taken out, used, given back).

    A connection is keyed by the URL's scheme, name and port *and the resolved address it was
    opened to*. Every attempt still resolves the name and checks every address it gets (the rule
    of ``public_addresses``), then takes a connection of the key with the checked address; a
    name whose DNS answer changed leads to another key, hence a new connection whose peer is
    checked at connect. A kept connection's address is checked again, under the rules of the
    moment, before it is reused (a setting that no longer allows it closes it). Connections idle
    longer than ``idle_seconds`` are closed rather than reused: receivers close idle keep-alive
    connections after a few seconds (Node and Apache after 5), and one closed under our feet is
    handled by ``post`` anyway.
    """

    def __init__(self, *, per_key: int = 16, total: int = 256, idle_seconds: float = 4.0):
        self.per_key = per_key
        self.total = total
        self.idle_seconds = idle_seconds
        self._lock = threading.Lock()
        self._idle: dict[_PoolKey, list[_PinnedConnection]] = {}
        self._count = 0

    def take(self, key: _PoolKey) -> _PinnedConnection | None:
        """The most recently used idle connection of ``key`` that is still fresh, or None."""
        stale: list[_PinnedConnection] = []
        found = None
        now = time.monotonic()
        with self._lock:
            kept = self._idle.get(key, [])
            while kept and found is None:
                conn = kept.pop()
                self._count -= 1
                if now - conn.idle_since < self.idle_seconds:
                    found = conn
                else:
                    stale.append(conn)
        for conn in stale:
            conn.close()
        return found

    def give(self, key: _PoolKey, conn: _PinnedConnection) -> None:
        """Keeps ``conn`` for the next attempt to ``key`` (or closes it when the pool is full)."""
        conn.idle_since = time.monotonic()
        with self._lock:
            kept = self._idle.setdefault(key, [])
            if len(kept) < self.per_key and self._count < self.total:
                kept.append(conn)
                self._count += 1
                return
        conn.close()

    def clear(self) -> None:
        """Closes every idle connection."""
        with self._lock:
            idle, self._idle, self._count = self._idle, {}, 0
        for kept in idle.values():
            for conn in kept:
                conn.close()

    def _forget(self) -> None:
        # A forked child must not share its parent's sockets; the parent keeps and closes them.
        self._lock = threading.Lock()
        self._idle, self._count = {}, 0

    def __len__(self) -> int:
        return self._count


connections = ConnectionPool()
os.register_at_fork(after_in_child=connections._forget)


@lru_cache(maxsize=1)
def _tls_context() -> ssl.SSLContext:
    return ssl.create_default_context()


# A kept connection the receiver had closed fails like this before any answer arrives.
_CLOSED_UNDER_US = (ConnectionResetError, BrokenPipeError, ConnectionAbortedError,
                    http.client.RemoteDisconnected)


def post(url: str, body: bytes, headers: dict[str, str], *, timeout: float,
         policy: Policy) -> Outcome:
    """POSTs ``body`` to ``url`` and says how it went (``send``)."""
    return send("POST", url, body, headers, timeout=timeout, policy=policy)


def send(method: str, url: str, body: bytes | None, headers: dict[str, str], *, timeout: float,
         policy: Policy, read_bytes: int = _READ_BYTES) -> Outcome:
    """Sends one request to ``url`` and says how it went; never raises for the receiver's
    faults. At most ``read_bytes`` of the answer's body are read (``Outcome.body``).

    ``timeout`` bounds the whole exchange, from the name's resolution to the answer's status line
    and headers: a receiver that trickles bytes cannot hold a worker longer than that (a
    resolver that hangs is bounded by its own timeouts).

    The connection is a kept one to the same checked address when there is one
    (``ConnectionPool``). If a kept connection turns out closed by the receiver before any
    answer came (the keep-alive race: it closed an idle connection as we reused it), the request
    goes once more over a new connection, within the same attempt and deadline.
    """
    started = time.monotonic()

    def elapsed_ms() -> int:
        return int((time.monotonic() - started) * 1000)

    try:
        parts = parse_url(url, policy=policy)
        port = default_port(parts)
        addresses = public_addresses(parts.hostname, port, policy=policy)
    except TargetRefused as exc:
        return Outcome(None, elapsed_ms(), error=f"Refused: {exc.message}", permanent=exc.permanent)

    address = addresses[0]
    key: _PoolKey = (policy.prefix, parts.scheme, parts.hostname, port, str(address))
    kept = connections.take(key)
    if kept is not None and not _allowed(kept.address, policy):
        kept.close()  # unreachable while the key holds the checked address; kept for safety
        kept = None
    exchange = _Exchange(method, parts, port, address, body, headers, started=started,
                         timeout=timeout, policy=policy, read_bytes=read_bytes)
    outcome, conn = exchange.run(kept)
    if conn is None and kept is not None and exchange.closed_under_us:
        outcome, conn = exchange.run(None)
    if conn is not None:
        connections.give(key, conn)
    return outcome


class _Exchange:
    """One request and its answer's head over a given connection (or a new one)."""

    def __init__(self, method: str, parts: SplitResult, port: int, address: IPAddress,
                 body: bytes | None, headers: dict[str, str], *, started: float, timeout: float,
                 policy: Policy, read_bytes: int):
        self.method, self.policy, self.read_bytes = method, policy, read_bytes
        self.parts, self.port, self.address = parts, port, address
        self.body, self.headers = body, headers
        self.started, self.timeout = started, timeout
        self.closed_under_us = False

    def elapsed_ms(self) -> int:
        return int((time.monotonic() - self.started) * 1000)

    def run(self, kept: _PinnedConnection | None) -> tuple[Outcome, _PinnedConnection | None]:
        """The outcome, and the connection when it may be kept for another exchange."""
        remaining = self.timeout - (time.monotonic() - self.started)
        if remaining <= 0:  # resolution counts against the timeout
            if kept is not None:
                kept.close()
            return Outcome(None, self.elapsed_ms(), error=_timeout_message(self.timeout)), None
        conn = kept or _PinnedConnection(
            self.parts.hostname, self.port, address=self.address, timeout=remaining,
            tls_context=_tls_context() if self.parts.scheme == "https" else None,
            policy=self.policy)
        conn.set_deadline(remaining)
        watchdog = _Watchdog(conn, remaining)
        keep = False
        try:
            outcome, keep = self._over(conn, watchdog, reused=kept is not None)
        finally:
            watchdog.cancel()
            if not keep:
                conn.close()
        return outcome, conn if keep else None

    def _over(self, conn: _PinnedConnection, watchdog: _Watchdog, *, reused: bool
              ) -> tuple[Outcome, bool]:
        """The exchange over ``conn``, and whether the connection may be kept."""
        remote, timed_out = str(self.address), watchdog.timed_out
        try:
            conn.request(self.method, _request_path(self.parts), body=self.body,
                         headers=self.headers)
            response = conn.getresponse()
        except (TargetRefused, OSError, http.client.HTTPException) as exc:
            self.closed_under_us = (reused and isinstance(exc, _CLOSED_UNDER_US)
                                    and not timed_out.is_set())
            error = _failure(exc, timeout=self.timeout, timed_out=timed_out)
            return Outcome(None, self.elapsed_ms(), error=error, remote_address=remote,
                           permanent=isinstance(exc, TargetRefused) and exc.permanent), False
        if timed_out.is_set():
            return Outcome(None, self.elapsed_ms(), error=_timeout_message(self.timeout),
                           remote_address=remote), False
        outcome = _answered(response, duration=self.elapsed_ms(), remote=remote,
                            read_bytes=self.read_bytes)
        watchdog.cancel()
        # Kept only when the answer was read whole, the receiver keeps the connection open, and
        # the deadline did not strike meanwhile (it cannot strike after ``cancel``).
        return outcome, (response.isclosed() and not response.will_close
                         and not timed_out.is_set())


def _request_path(parts: SplitResult) -> str:
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    return path


class _Deadlines:
    """One thread per process that ends the exchanges whose deadline passed: a timer thread
    started for every request would cost more than the request itself on a kept connection.

    An action runs under the lock, so once ``cancel`` returns it has either run whole or will
    never run: a connection given back to the pool is never shut down by a late deadline.
    """

    def __init__(self) -> None:
        self._forget()

    def _forget(self) -> None:
        self._cond = threading.Condition()
        self._heap: list[tuple[float, int, list]] = []
        self._seq = itertools.count()
        self._thread: threading.Thread | None = None

    def add(self, seconds: float, action) -> list:
        """Runs ``action`` in ``seconds`` unless cancelled; returns the handle for ``cancel``."""
        entry = [action]
        deadline = time.monotonic() + seconds
        with self._cond:
            earliest = not self._heap or deadline < self._heap[0][0]
            heapq.heappush(self._heap, (deadline, next(self._seq), entry))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="outbound-deadlines",
                                                daemon=True)
                self._thread.start()
            elif earliest:
                self._cond.notify()
        return entry

    def cancel(self, entry: list) -> None:
        with self._cond:
            entry[0] = None

    def _run(self) -> None:
        with self._cond:
            while True:
                while self._heap and self._heap[0][2][0] is None:
                    heapq.heappop(self._heap)  # cancelled
                if not self._heap:
                    self._cond.wait()
                    continue
                deadline, _, entry = self._heap[0]
                left = deadline - time.monotonic()
                if left > 0:
                    self._cond.wait(left)
                    continue
                heapq.heappop(self._heap)
                action, entry[0] = entry[0], None
                with contextlib.suppress(Exception):
                    action()


_deadlines = _Deadlines()
os.register_at_fork(after_in_child=_deadlines._forget)


class _Watchdog:
    """Ends one exchange after ``seconds`` (the deadline is the whole exchange's, not one
    read's); ``timed_out`` says it did."""

    def __init__(self, conn: _PinnedConnection, seconds: float):
        self.conn = conn
        self.timed_out = threading.Event()
        self._entry = _deadlines.add(seconds, self._abort)

    def _abort(self) -> None:
        # Wakes a worker blocked in connect/recv.
        self.timed_out.set()
        # After the TLS handshake the raw socket is detached into conn.sock.
        sock = self.conn.sock or self.conn.raw_socket
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def cancel(self) -> None:
        _deadlines.cancel(self._entry)


def _failure(exc: Exception, *, timeout: float, timed_out: threading.Event) -> str:
    """What the attempt records when sending the request or reading the answer's head failed."""
    if isinstance(exc, TargetRefused):
        return f"Refused: {exc.message}"
    if isinstance(exc, TimeoutError):
        return _timeout_message(timeout)
    if isinstance(exc, ssl.SSLError):
        return f"TLS error: {exc}"[:500]
    if isinstance(exc, ConnectionRefusedError):
        return "Connection refused."
    if timed_out.is_set():
        return _timeout_message(timeout)
    kind = "Invalid HTTP answer" if isinstance(exc, http.client.HTTPException) else \
        "Connection failed"
    return f"{kind}: {exc!r}"[:500]


def _answered(response: http.client.HTTPResponse, *, duration: int, remote: str,
              read_bytes: int) -> Outcome:
    """The outcome of an answer that came, with its body (up to ``read_bytes``)."""
    status = response.status
    try:
        raw = response.read(read_bytes)
    except (OSError, http.client.HTTPException):
        raw = b""
    excerpt = raw.decode("utf-8", errors="replace")[:EXCERPT_CHARS]
    error = ""
    if 300 <= status < 400:
        location = response.getheader("Location") or "nowhere"
        error = f"Redirect ({status} to {location[:200]}) not followed."
    elif not 200 <= status < 300:
        error = f"The receiver answered {status}."
    return Outcome(status, duration, error=error, excerpt=excerpt, remote_address=remote,
                   body=raw, retry_after=response.getheader("Retry-After") or "")


def _timeout_message(timeout: float) -> str:
    return f"Timed out: no answer within {timeout:g} s."
