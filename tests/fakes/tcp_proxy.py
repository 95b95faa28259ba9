"""A TCP proxy on 127.0.0.1 between the service and one of its servers (PostgreSQL, Redis), in a
thread of the test process, that can simulate an outage of that server without touching it.

The servers of the test machine are shared by other people's tests: they may not be stopped or
restarted. The service is pointed at the proxy instead (``DATABASE_URL``/``REDIS_URL`` with the
proxy's port) and an outage happens here:

- **refused**: every open connection is reset and the port stops listening, so a new connection
  is refused at once: what a client sees while the server restarts (the fast failure);
- **blackholed**: every open connection is reset, and new connections are accepted and then
  never answered: a server that hangs, or a network that drops packets (the slow failure, which
  only the client's own timeouts bound). When the outage ends, those held connections are reset
  as a restarted server's would be.

Then :meth:`TcpProxy.restore` forwards again. One thread does all socket work (a selector), so an
outage takes effect between two reads, at once for every connection.
"""

from __future__ import annotations

import contextlib
import queue
import selectors
import socket
import struct
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

REFUSED = "refused"
BLACKHOLED = "blackholed"
MODES = (REFUSED, BLACKHOLED)


def _reset(sock: socket.socket) -> None:
    """Closes ``sock`` with a reset (RST) instead of an orderly FIN, as a dead server's peer
    sees it."""
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    with contextlib.suppress(OSError):
        sock.close()


@dataclass
class _State:
    mode: str | None = None  # None: forwarding
    pairs: dict[socket.socket, socket.socket] = field(default_factory=dict)  # both directions
    held: list[socket.socket] = field(default_factory=list)  # accepted during a blackhole


class TcpProxy:
    """Forwards ``127.0.0.1:<port>`` to ``target`` until told otherwise."""

    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        self._selector = selectors.DefaultSelector()
        self._state = _State()
        self._commands: queue.Queue = queue.Queue()
        self._listener = self._listen(0)
        self.port = self._listener.getsockname()[1]
        self.connections = 0  # accepted so far, forwarded or not
        self._running = True
        self._thread = threading.Thread(target=self._loop, name=f"tcp-proxy-{self.port}",
                                        daemon=True)
        self._thread.start()

    # --- what a test calls -------------------------------------------------------------------

    def outage(self, mode: str) -> None:
        """Starts an outage (``refused`` or ``blackholed``); returns once it has taken effect."""
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
        self._command("outage", mode)

    def restore(self) -> None:
        """Ends the outage: new connections are forwarded again."""
        self._command("restore", None)

    @contextlib.contextmanager
    def down(self, mode: str) -> Iterator[None]:
        self.outage(mode)
        try:
            yield
        finally:
            self.restore()

    def close(self) -> None:
        self._running = False
        self._thread.join(timeout=5)

    # --- the proxy's thread ------------------------------------------------------------------

    def _command(self, name: str, mode: str | None) -> None:
        done = threading.Event()
        self._commands.put((name, mode, done))
        if not done.wait(timeout=5):
            raise TimeoutError(f"the proxy did not apply {name!r} within 5 s")

    def _listen(self, port: int) -> socket.socket:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", port))
        listener.listen(128)
        listener.setblocking(False)
        self._selector.register(listener, selectors.EVENT_READ, "listener")
        return listener

    def _loop(self) -> None:
        try:
            while self._running:
                self._apply_commands()
                for key, _ in self._selector.select(timeout=0.05):
                    if key.data == "listener":
                        self._accept()
                    else:
                        self._forward(key.fileobj)
        finally:
            self._drop_all()
            for sock in self._state.held:
                _reset(sock)
            with contextlib.suppress(OSError, KeyError, ValueError):
                self._selector.unregister(self._listener)
            self._listener.close()
            self._selector.close()

    def _apply_commands(self) -> None:
        while True:
            try:
                name, mode, done = self._commands.get_nowait()
            except queue.Empty:
                return
            if name == "outage":
                self._start_outage(mode)
            else:
                self._end_outage()
            done.set()

    def _start_outage(self, mode: str) -> None:
        self._drop_all()
        if mode == REFUSED and self._state.mode != REFUSED:
            # Nothing listens on the port any more: the kernel refuses new connections.
            self._selector.unregister(self._listener)
            self._listener.close()
        self._state.mode = mode

    def _end_outage(self) -> None:
        if self._state.mode == REFUSED:
            self._listener = self._listen(self.port)
        for sock in self._state.held:
            _reset(sock)
        self._state.held.clear()
        self._state.mode = None

    def _accept(self) -> None:
        try:
            client, _ = self._listener.accept()
        except BlockingIOError:
            return
        self.connections += 1
        if self._state.mode == BLACKHOLED:
            self._state.held.append(client)  # accepted, never read, never answered
            return
        try:
            upstream = socket.create_connection(self.target, timeout=5)
        except OSError:
            _reset(client)
            return
        for sock in (client, upstream):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.settimeout(5)  # sendall to a peer that does not read gives up after this
            self._selector.register(sock, selectors.EVENT_READ, "peer")
        self._state.pairs[client] = upstream
        self._state.pairs[upstream] = client

    def _forward(self, sock: socket.socket) -> None:
        peer = self._state.pairs.get(sock)
        if peer is None:
            return
        try:
            data = sock.recv(65536)
            if data:
                peer.sendall(data)
                return
        except OSError:
            pass
        self._drop(sock)

    def _drop(self, sock: socket.socket) -> None:
        peer = self._state.pairs.pop(sock, None)
        for one in (sock, peer):
            if one is None:
                continue
            self._state.pairs.pop(one, None)
            with contextlib.suppress(KeyError, ValueError):
                self._selector.unregister(one)
            _reset(one)

    def _drop_all(self) -> None:
        for sock in list(self._state.pairs):
            self._drop(sock)
