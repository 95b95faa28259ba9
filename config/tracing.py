"""Optional OpenTelemetry tracing (docs/operations.md, "Traces").

Off unless the environment asks for it with the standard variables: ``OTEL_EXPORTER_OTLP_ENDPOINT``
(or ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``) or ``OTEL_TRACES_EXPORTER`` (``otlp``, ``console``;
``none`` keeps it off), and never with ``OTEL_SDK_DISABLED=true``. Everything else is the SDK's
own configuration, read from its variables: ``OTEL_SERVICE_NAME`` and ``OTEL_RESOURCE_ATTRIBUTES``,
``OTEL_TRACES_SAMPLER``, the batch processor's ``OTEL_BSP_*``, the exporter's endpoint, headers,
timeout and compression. The OTLP exporter speaks HTTP/protobuf (port 4318 of a collector).

One trace follows a request through the process: Django's request span (its name the route
template), the PostgreSQL statements (psycopg), the Redis commands (cache, channel layer, the
broker's publish), the HTTP calls (httpx: the model's, the embeddings'), and, through the task
message's headers, the Celery task the request queued and what that task does in the worker.
Spans hold no query string (``_drop_query``) and no statement parameters; the SQL text itself is
parameterised.

Each process starts it once: daphne through ``config.asgi``, each Celery worker process through
``config.celery`` (a prefork child after the fork, where the SDK's export thread must start).
"""

from __future__ import annotations

import logging
import os
import threading

from django.core.exceptions import ImproperlyConfigured

logger = logging.getLogger("salesagent.tracing")

_lock = threading.Lock()
_provider = None


def tracing_enabled(environ: os._Environ | dict = os.environ) -> bool:
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    exporters = _exporter_names(environ)
    if exporters:
        return exporters != ["none"]
    return bool(environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip()
                or environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip())


def _exporter_names(environ) -> list[str]:
    raw = environ.get("OTEL_TRACES_EXPORTER", "")
    return [name.strip().lower() for name in raw.split(",") if name.strip()]


def _exporters(environ) -> list:
    exporters = []
    for name in _exporter_names(environ) or ["otlp"]:
        if name == "otlp":
            protocol = (environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
                        or environ.get("OTEL_EXPORTER_OTLP_PROTOCOL") or "http/protobuf")
            if protocol.strip() != "http/protobuf":
                raise ImproperlyConfigured(
                    f"OTEL_EXPORTER_OTLP_PROTOCOL: only http/protobuf is installed; got {protocol!r}")
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

            exporters.append(OTLPSpanExporter())
        elif name == "console":
            from opentelemetry.sdk.trace.export import ConsoleSpanExporter

            exporters.append(ConsoleSpanExporter())
        elif name != "none":
            raise ImproperlyConfigured(
                f"OTEL_TRACES_EXPORTER must be otlp, console or none; got {name!r}")
    return exporters


def start_tracing(process: str, *, exporter=None, instrument_redis: bool | None = None) -> bool:
    """Sets up the tracer provider and the instrumentations once per process; False when
    tracing is off. ``process``: ``web`` or ``worker`` (a resource attribute). ``exporter``: a
    span exporter to use instead of the environment's (the tests' in-memory one), whose spans
    are exported as each ends. Redis is instrumented in web processes only: a worker's broker
    polls Redis every second, which would make a trace of its own each time."""
    global _provider
    if exporter is None and not tracing_enabled():
        return False
    with _lock:
        if _provider is not None:
            if exporter is not None:
                from opentelemetry.sdk.trace.export import SimpleSpanProcessor

                _provider.add_span_processor(SimpleSpanProcessor(exporter))
            return True
        from opentelemetry import trace
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor

        attributes = {"salesagent.process": process}
        if not os.environ.get("OTEL_SERVICE_NAME") and \
                "service.name=" not in os.environ.get("OTEL_RESOURCE_ATTRIBUTES", ""):
            attributes["service.name"] = "salesagent"
        provider = TracerProvider(resource=Resource.create(attributes))
        if exporter is not None:
            provider.add_span_processor(SimpleSpanProcessor(exporter))
        else:
            for one in _exporters(os.environ):
                provider.add_span_processor(BatchSpanProcessor(one))
        trace.set_tracer_provider(provider)
        _provider = provider
        _instrument(web=process == "web" if instrument_redis is None else instrument_redis)
    logger.info("tracing on (%s)", process)
    return True


def _instrument(*, web: bool) -> None:
    from opentelemetry.instrumentation.celery import CeleryInstrumentor
    from opentelemetry.instrumentation.django import DjangoInstrumentor
    from opentelemetry.instrumentation.httpx import HTTPXClientInstrumentor
    from opentelemetry.instrumentation.psycopg import PsycopgInstrumentor

    # Django's middleware goes first in MIDDLEWARE: before the handler loads it (config.asgi).
    DjangoInstrumentor().instrument(request_hook=_drop_query)
    CeleryInstrumentor().instrument()
    PsycopgInstrumentor().instrument(enable_commenter=False, skip_dep_check=True)
    HTTPXClientInstrumentor().instrument()
    if web:
        from opentelemetry.instrumentation.redis import RedisInstrumentor

        RedisInstrumentor().instrument()


_QUERY_ATTRIBUTES = ("http.target", "http.url", "url.full")


def _drop_query(span, request) -> None:
    """A request span keeps the path and never the query string, where searches put names and
    addresses (as the logs do: docs/privacy.md, "Logs")."""
    if not span.is_recording() or not request.META.get("QUERY_STRING"):
        return
    attributes = getattr(span, "attributes", None) or {}
    for name in _QUERY_ATTRIBUTES:
        value = attributes.get(name)
        if isinstance(value, str) and "?" in value:
            span.set_attribute(name, value.partition("?")[0])
    if "url.query" in attributes:
        span.set_attribute("url.query", "")
