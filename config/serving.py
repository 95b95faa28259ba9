"""What the service tells daphne, which has no setting for either: Twisted must not parse request
bodies, and must not spool a body over the size limit.

**Bodies are not parsed.** Twisted's ``http.Request`` parses every ``multipart/form-data`` and
form body into its own ``args`` before daphne hands the request over, unless built with
``parsePOSTFormSubmission=False``, which daphne never passes. Daphne ignores those ``args`` (the
ASGI body is the raw bytes, which Django parses), so the parse only costs: a 10 MiB upload is
read and split twice, and a malformed multipart body gets Twisted's bare ``400 Bad Request``,
with no envelope and no log line, before Django sees it. Turned off, Django's parser answers it
in the surface's envelope (docs/decisions.md, "Malformed multipart bodies").

**A body over the limit is not kept.** Twisted writes a body to a temporary file (any body of
unknown length or over 100 kB) until the whole of it has arrived, and only then does daphne hand
the request to the application, which counts it against ``DATA_UPLOAD_MAX_MEMORY_SIZE``
(``MAX_REQUEST_BODY_BYTES``): one connection declaring ``Content-Length: 10737418240``, or sending
an endless chunked body, filled the disk at the network's speed, without credentials (issue 28).
Here a request whose declared length is over the limit goes to the application at the end of its
headers, before a byte of its body is read; a chunked body goes there the moment it passes the
limit, its spooled part deleted. Either is handed over without a body and with a
``Content-Length`` over the limit (the chunked one's: the bytes it had sent), which the
application answers 413 in the surface's envelope before any view runs (``config/handlers.py``).
No ``100 Continue`` is sent for it, the answer says ``Connection: close``, and the connection is
closed as a careful server closes one whose client may still be sending: the answer is sent,
then the server's half is shut and what still arrives is read and dropped, for at most
``LINGER_SECONDS``, so that the client reads the 413 rather than a reset (Apache's and nginx's
"lingering close"). Nothing of the body reaches the disk or stays in memory.
"""

from __future__ import annotations

import io
import threading

# How long a connection whose body was refused is read and dropped after the answer, at most.
LINGER_SECONDS = 5.0


def configure_daphne_requests() -> None:
    """Called when the ASGI application is loaded, which daphne does before it serves."""
    try:
        from daphne import http_protocol
        from twisted.web import http
    except ImportError:  # not served by daphne
        return
    if getattr(http_protocol.WebRequest, "_salesagent_request", False):
        return
    from django.conf import settings

    class WebRequest(http_protocol.WebRequest):
        _salesagent_request = True

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self._parsePOSTFormSubmission = False  # read by Request.requestReceived
            self._body_received = 0
            self._body_refused = False

        def gotLength(self, length):
            if length is not None and length > settings.DATA_UPLOAD_MAX_MEMORY_SIZE \
                    and self._refusable():
                self.content = io.BytesIO()
                self._refuse_body()
                # The channel hands a request whose length it takes for 0 to the application at
                # once, at the end of its headers (HTTPChannel.lineReceived).
                self.channel.length = 0
                return
            super().gotLength(length)

        def handleContentChunk(self, data):
            if self._body_refused:
                return
            self._body_received += len(data)
            if self._body_received <= settings.DATA_UPLOAD_MAX_MEMORY_SIZE \
                    or not self._refusable():
                super().handleContentChunk(data)
                return
            # A chunked body past the limit (a declared length never gets here): its spooled part
            # goes, the decoder stops, and the request goes to the application now.
            self.content.close()
            self.content = io.BytesIO()
            self.requestHeaders.removeHeader(b"Transfer-Encoding")
            self.requestHeaders.setRawHeaders(b"Content-Length",
                                              [str(self._body_received).encode()])
            channel = self.channel
            decoder = channel._transferDecoder
            decoder.dataCallback = decoder.finishCallback = _ignore
            if isinstance(getattr(decoder, "_buffer", None), bytearray):
                del decoder._buffer[:]  # the rest of this read is not parsed as chunks
            self._refuse_body()
            channel.allContentReceived()

        def __repr__(self) -> str:
            # Daphne's warnings name a request by its repr ("Application instance ... for
            # connection <WebRequest ...> took too long"), which Twisted builds with the whole
            # URI: the path alone here, as in the access log (configure_daphne_access_log).
            uri = getattr(self, "uri", None) or b""
            method = getattr(self, "method", None) or b"-"
            return (f"<WebRequest at 0x{id(self):x} method={method.decode('ascii', 'replace')} "
                    f"path={uri.partition(b'?')[0].decode('ascii', 'replace')}>")

        def _refusable(self) -> bool:
            """HTTP/1.1 and 1.0 only (daphne speaks HTTP/2 only over TLS with the h2 package,
            which the service does not install), and only the request being received."""
            channel = self.channel
            return isinstance(channel, http.HTTPChannel) and channel.requests[-1:] == [self]

        def _refuse_body(self) -> None:
            self._body_refused = True
            self.requestHeaders.removeHeader(b"Expect")  # no "100 Continue": nothing is read
            channel = self.channel
            channel.persistent = False
            self.responseHeaders.setRawHeaders(b"Connection", [b"close"])
            channel.loseConnection = lambda: _linger_then_close(channel)

    http_protocol.WebRequest = WebRequest


def configure_daphne_access_log() -> None:
    """Keeps query strings out of daphne's access log (issue 28, "Logs").

    Daphne writes one line per request to standard output (its ``--access-log``, on at the
    default verbosity; ``runserver`` logs the same through ``django.channels.server``) with the
    request's whole URI. A query string is where searches go (``/api/v1/leads?search=…``,
    ``/dashboard/leads/?q=…``), and searches are names, emails and phone numbers: the line
    keeps the path and drops the query, for every endpoint, since which ones carry personal data
    changes as the API grows. Both loggers are fed by one method, ``Server.log_action``; it is
    wrapped here, before daphne builds its server (it loads the application first).
    docs/privacy.md, "Logs", says what a line holds."""
    try:
        from daphne.server import Server
    except ImportError:  # not served by daphne
        return
    if getattr(Server.log_action, "_salesagent_path_only", False):
        return
    log_action = Server.log_action
    from django.conf import settings

    # With LOG_FORMAT=json the request's own line (config.middleware.RequestIdMiddleware) is
    # the access log: one JSON object with the request id, tenant and route template.
    json_lines = settings.LOG_FORMAT == "json"

    def path_only(self, protocol, action, details):
        if json_lines:
            return
        path = details.get("path")
        if isinstance(path, str) and "?" in path:
            details = {**details, "path": path.partition("?")[0]}
        log_action(self, protocol, action, details)

    path_only._salesagent_path_only = True  # type: ignore[attr-defined]
    Server.log_action = path_only


def _ignore(data: bytes) -> None:
    return None


def _linger_then_close(channel) -> None:
    """Ends a connection whose client may still be sending a refused body: the answer is flushed
    and the server's half shut (FIN), then what arrives is dropped until the client closes, or
    for ``LINGER_SECONDS`` at most. A plain close with unread data would send a reset, and the
    client could lose the answer it had not read yet."""
    from twisted.internet import reactor  # daphne's, installed before it serves

    transport = channel.transport
    if transport is None:
        return
    channel._networkProducer.unregisterProducer()
    if not hasattr(transport, "loseWriteConnection"):
        transport.loseConnection()
        return
    channel.dataReceived = _ignore
    transport.resumeProducing()  # the channel paused reading while the application answered
    transport.loseWriteConnection()
    reactor.callLater(LINGER_SECONDS, transport.abortConnection)


def settle_garbage_collector() -> None:
    """Moves every object alive once the application is loaded (modules, URL patterns, the
    schema, settings: several hundred thousand) out of the cycle collector's reach.

    The collector's oldest generation otherwise walks all of them each time it runs: 70-290 ms
    in a daphne process serving the lead list, every few hundred requests, the slowest
    percentile of every endpoint (docs/performance.md, "The serving path"). What Django would
    load at the first request is loaded first, so that it is frozen too: the URL conf (which
    imports every view and its schema declarations) and the caches (the Redis client). Objects
    created later are collected as before."""
    import gc

    from django.conf import settings
    from django.core.cache import caches
    from django.urls import get_resolver

    get_resolver().reverse_dict  # noqa: B018 - imports the URL conf and builds its lookups
    for alias in settings.CACHES:
        caches[alias]  # noqa: B018 - connects nothing; imports and builds the client
    gc.collect()
    gc.freeze()


# Set once the agent's models are loaded (or their loading failed, or is off): a process that
# listens only then (LISTEN_AFTER_WARM_UP, config/shutdown.py) waits for it.
WARM = threading.Event()


def warm_up_the_agent() -> None:
    """Loads the agent's models (the embedding model, the language identifiers, the decisions'
    regressions: docs/agent.md, "How the agent understands") on a thread of their own as the
    process starts, so that the first visitor does not wait the few seconds they take. A turn
    that comes first waits for them behind their locks; the process serves everything else
    meanwhile. ``AGENT_WARM_UP=false`` leaves them to the first turn that needs them."""
    import logging

    from django.conf import settings

    if not settings.AGENT_WARM_UP:
        WARM.set()
        return

    def warm() -> None:
        from agent.interface import warm_up

        try:
            warm_up()
        except Exception:  # the first turn loads them again, and says why if it cannot
            logging.getLogger(__name__).exception("warming up the agent's models failed")
        finally:
            WARM.set()

    threading.Thread(target=warm, name="agent-warm-up", daemon=True).start()
