"""The service traced into the OpenTelemetry SDK's in-memory exporter, for tests/config/
test_tracing.py: ``daphne tests.tracing_probe:application`` (``TRACING_PROBE=web``) serves the
project, plus ``GET /__spans``, the spans ended so far; ``celery -A tests.tracing_probe worker``
(``TRACING_PROBE=worker``) runs the project's worker and writes its spans to the JSON file
``TRACING_PROBE_SPANS`` as they end."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

from opentelemetry.sdk.trace.export.in_memory_span_exporter import (  # noqa: E402
    InMemorySpanExporter,
)

from config.tracing import start_tracing  # noqa: E402

ROLE = os.environ.get("TRACING_PROBE", "web")
EXPORTER = InMemorySpanExporter()
# Before the project's ASGI handler loads its middleware (config.asgi starts it again: no-op).
start_tracing(ROLE, exporter=EXPORTER)


def spans() -> list[dict]:
    return [{
        "name": span.name, "kind": span.kind.name,
        "trace": format(span.context.trace_id, "032x"),
        "id": format(span.context.span_id, "016x"),
        "parent": format(span.parent.span_id, "016x") if span.parent else None,
        "attributes": {k: v if isinstance(v, str | int | float | bool) else str(v)
                       for k, v in (span.attributes or {}).items()},
    } for span in EXPORTER.get_finished_spans()]


if ROLE == "web":
    from config.asgi import application as service

    async def application(scope, receive, send):
        if scope["type"] == "http" and scope["path"] == "/__spans":
            body = json.dumps(spans()).encode()
            await send({"type": "http.response.start", "status": 200,
                        "headers": [(b"content-type", b"application/json")]})
            await send({"type": "http.response.body", "body": body})
            return
        await service(scope, receive, send)
else:
    from config.celery import app  # noqa: F401 - what ``celery -A`` runs

    def _write_spans() -> None:
        target = Path(os.environ["TRACING_PROBE_SPANS"])
        while True:
            partial = target.with_suffix(".partial")
            partial.write_text(json.dumps(spans()))
            partial.replace(target)
            threading.Event().wait(0.3)

    threading.Thread(target=_write_spans, daemon=True).start()
