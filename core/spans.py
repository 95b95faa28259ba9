"""Spans of our own (docs/operations.md, "Traces"), for calls that no instrumentation covers.
With tracing off (config/tracing.py), OpenTelemetry's API hands out no-op spans: nothing is
recorded and nearly nothing spent."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

from opentelemetry import trace


@contextlib.contextmanager
def model_call(operation: str, base_url: Any) -> Iterator[Any]:
    """A CLIENT span over one request to an OpenAI-compatible server (``operation``:
    ``chat/completions`` or ``embeddings``), under the current span, marked failed by an
    exception that leaves it. The openai client sends through httpx2, which no instrumentation
    covers. The span is never made the current one, so the block may be a streamed reply's,
    across its generator's yields. When tracing is off, the API's no-op span."""
    url = f"{str(base_url).rstrip('/')}/{operation}"
    span = trace.get_tracer("salesagent").start_span(
        f"POST /{operation}", kind=trace.SpanKind.CLIENT,
        attributes={"http.request.method": "POST", "url.full": url,
                    "server.address": urlsplit(url).hostname or ""})
    try:
        yield span
    except Exception as exc:
        if span.is_recording():
            span.set_attribute("error.type", type(exc).__name__)
            span.set_status(trace.Status(trace.StatusCode.ERROR))
        raise
    finally:
        span.end()
