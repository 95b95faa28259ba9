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


def warm_up_the_agent() -> None:
    """Loads the agent's models (the embedding model, the language identifiers, the decisions'
    regressions: docs/agent.md, "How the agent understands") on a thread of their own as the
    process starts, so that the first visitor does not wait the few seconds they take. A turn
    that comes first waits for them behind their locks; the process serves everything else
    meanwhile. ``AGENT_WARM_UP=false`` leaves them to the first turn that needs them."""
    import logging
    import threading

    from django.conf import settings

    if not settings.AGENT_WARM_UP:
        return

    def warm() -> None:
        from agent.interface import warm_up

        try:
            warm_up()
        except Exception:  # the first turn loads them again, and says why if it cannot
            logging.getLogger(__name__).exception("warming up the agent's models failed")

    threading.Thread(target=warm, name="agent-warm-up", daemon=True).start()
