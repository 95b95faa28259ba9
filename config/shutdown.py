"""A web process's graceful shutdown: what daphne does on SIGTERM (docs/deploy.md, "Rolling
deploys").

Daphne itself stops on SIGTERM at once: Twisted stops the reactor, daphne cancels every
application still running, and the requests in flight end without an answer (a proxy's 502).
Here SIGTERM starts a drain instead:

1. **No new connections.** The listening sockets are closed, so a proxy's next connection is
   refused and goes to another upstream (nginx's ``proxy_next_upstream error``), which is safe
   for every method because nothing was sent.
2. **Requests in flight finish.** Each open connection answers the request it carries with
   ``Connection: close`` and is closed after it; a connection with no request is closed once it
   has been idle for ``FRESH_SECONDS`` (a proxy that has just connected sends its request first).
3. **Live streams end with a ``reconnect`` event** (``conversations.live.listen_group``), which
   tells the widget (and, by its ``retry:`` field, any EventSource) to connect again: through
   the proxy, to a process that is still serving.
4. **The process exits** when no connection is left, or after ``SHUTDOWN_GRACE_SECONDS`` at most
   (and ``EXIT_SECONDS`` for the threads of views still running); whatever is still running then
   is cancelled, as daphne would. A second SIGTERM (or SIGINT) stops it at once.
"""

from __future__ import annotations

import asyncio
import logging
import time
import weakref

logger = logging.getLogger("salesagent.shutdown")

# A connection accepted this recently with no request yet is waited for: its request is coming.
FRESH_SECONDS = 1.0
TICK_SECONDS = 0.05
# With LISTEN_AFTER_WARM_UP, how long the sockets wait for the agent's models at most.
WARM_UP_WAIT_SECONDS = 300
# After the grace period, how long the threads of cancelled views get before the process ends.
EXIT_SECONDS = 2.0

_state: dict = {"draining": False, "future": None, "ports": [], "server": None}
# Every HTTP connection of this process and when it was accepted (monotonic).
_channels: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def draining() -> bool:
    """True once the process has been asked to stop."""
    return _state["draining"]


def drain_future() -> asyncio.Future:
    """A future of the running loop, done when the drain starts (at once if it has): a live
    stream waits on it beside its events."""
    future = _state["future"]
    if future is None or future.get_loop() is not asyncio.get_running_loop():
        future = _state["future"] = asyncio.get_running_loop().create_future()
        if _state["draining"]:
            future.set_result(None)
    return future


def configure_daphne_shutdown() -> None:
    """Called when the ASGI application is loaded, before daphne builds its server: notes the
    listening ports and the connections, and makes SIGTERM start the drain."""
    try:
        from daphne import http_protocol
        from daphne.server import Server
        from twisted.internet import reactor
    except ImportError:  # not served by daphne
        return
    if getattr(Server.listen_success, "_salesagent_shutdown", False):
        return
    listen_success = Server.listen_success
    build_protocol = http_protocol.HTTPFactory.buildProtocol

    def noted_listen_success(self, port):
        _state["server"] = self
        _state["ports"].append(port)
        return listen_success(self, port)

    def noted_build_protocol(self, addr):
        protocol = build_protocol(self, addr)
        if protocol is not None:
            _channels[getattr(protocol, "_channel", protocol)] = time.monotonic()
        return protocol

    noted_listen_success._salesagent_shutdown = True  # type: ignore[attr-defined]
    Server.listen_success = noted_listen_success
    _listen_when_warm(Server, reactor)
    http_protocol.HTTPFactory.buildProtocol = noted_build_protocol

    def on_sigterm(number, frame) -> None:
        reactor.callFromThread(_begin)

    # Twisted installs ``reactor.sigTerm`` as the handler when the reactor starts (SIGINT keeps
    # its immediate stop: Ctrl-C in a terminal).
    reactor.sigTerm = on_sigterm


def _listen_when_warm(server_class, reactor) -> None:
    """With ``LISTEN_AFTER_WARM_UP``, daphne opens its sockets only once the agent's models are
    loaded (``config.serving.WARM``; ``WARM_UP_WAIT_SECONDS`` at most): a process that a deploy
    has just started is not sent requests by the proxy while loading them would hold those
    requests (docs/deploy.md, "Rolling deploys")."""
    from django.conf import settings

    if not settings.LISTEN_AFTER_WARM_UP:
        return
    from twisted.internet.endpoints import serverFromString
    from twisted.internet.threads import deferToThread

    from config.serving import WARM

    run = server_class.run

    def run_when_warm(self):
        endpoints, self.endpoints = self.endpoints, []

        def listen(_=None):
            for description in endpoints:
                listener = serverFromString(reactor, str(description)).listen(self.http_factory)
                listener.addCallback(self.listen_success)
                listener.addErrback(self.listen_error)
                self.listeners.append(listener)

        reactor.callWhenRunning(
            lambda: deferToThread(WARM.wait, WARM_UP_WAIT_SECONDS).addBoth(listen))
        run(self)

    server_class.run = run_when_warm


def _begin() -> None:
    from django.conf import settings
    from twisted.internet import reactor

    if _state["draining"]:
        logger.warning("shutdown: asked again; stopping now")
        _exit_soon()
        if reactor.running:
            reactor.stop()
        return
    _state["draining"] = True
    grace = settings.SHUTDOWN_GRACE_SECONDS
    logger.warning("shutdown: SIGTERM; not accepting, finishing what is in flight (up to %d s)",
                   grace)
    for port in _state["ports"]:
        port.stopListening()
    future = _state["future"]
    if future is not None and not future.done():
        future.set_result(None)
    _drain(time.monotonic() + grace)


def _drain(deadline: float) -> None:
    from twisted.internet import reactor

    now = time.monotonic()
    open_channels = [(channel, accepted) for channel, accepted in list(_channels.items())
                     if _connected(channel)]
    for channel, accepted in open_channels:
        requests = getattr(channel, "requests", None)
        if requests:
            _close_after(channel, requests)
        elif now - accepted >= FRESH_SECONDS and not channel.transport.disconnecting:
            channel.loseConnection()
    running = _running_applications()
    if not open_channels and not running:
        logger.warning("shutdown: nothing in flight; exiting")
        reactor.stop()
    elif now >= deadline:
        logger.warning("shutdown: %d connection(s) still open after the grace period; exiting",
                       len(open_channels))
        _exit_soon()
        reactor.stop()
    else:
        reactor.callLater(TICK_SECONDS, _drain, deadline)


def _exit_soon() -> None:
    """The bound holds for the views running on threads too: daphne cancels what still runs,
    but a cancelled synchronous view goes on in its thread, and the interpreter waits for those
    threads as it exits. They get ``EXIT_SECONDS`` more, then the process ends without them."""
    import os
    import threading

    timer = threading.Timer(EXIT_SECONDS, os._exit, args=(0,))
    timer.daemon = True
    timer.start()


def _connected(channel) -> bool:
    transport = getattr(channel, "transport", None)
    return transport is not None and bool(getattr(transport, "connected", False))


def _close_after(channel, requests) -> None:
    """The connection closes once its requests are answered; one whose answer has not started
    says so in its headers."""
    channel.persistent = False
    for request in requests:
        if not getattr(request, "startedWriting", True):
            request.responseHeaders.setRawHeaders(b"Connection", [b"close"])


def _running_applications() -> int:
    server = _state["server"]
    if server is None:
        return 0
    return sum(1 for details in list(server.connections.values())
               if (app := details.get("application_instance")) is not None and not app.done())
