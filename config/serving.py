"""What the service tells daphne, which has no setting for it: Twisted must not parse request
bodies.

Twisted's ``http.Request`` parses every ``multipart/form-data`` and form body into its own
``args`` before daphne hands the request over, unless built with
``parsePOSTFormSubmission=False``, which daphne never passes. Daphne ignores those ``args`` (the
ASGI body is the raw bytes, which Django parses), so the parse only costs: a 10 MiB upload is
read and split twice, and a malformed multipart body gets Twisted's bare ``400 Bad Request``,
with no envelope and no log line, before Django sees it. Turned off, Django's parser answers it
in the surface's envelope (docs/decisions.md, "Malformed multipart bodies").
"""

from __future__ import annotations


def stop_twisted_parsing_bodies() -> None:
    """Called when the ASGI application is loaded, which daphne does before it serves."""
    try:
        from daphne import http_protocol
    except ImportError:  # not served by daphne
        return
    if getattr(http_protocol.WebRequest, "_salesagent_raw_bodies", False):
        return

    class WebRequest(http_protocol.WebRequest):
        _salesagent_raw_bodies = True

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self._parsePOSTFormSubmission = False  # read by Request.requestReceived

    http_protocol.WebRequest = WebRequest
