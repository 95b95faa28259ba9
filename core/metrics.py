"""The service's Prometheus series that processes record as they work (docs/operations.md).

Every process (daphne, the Celery worker's processes, beat) records into these with
``prometheus-client``. With ``METRICS_TOKEN`` set, the settings point the client at a directory
shared by the processes of a host (``METRICS_DIR``, ``PROMETHEUS_MULTIPROC_DIR``): each process
writes its values to memory-mapped files there, and ``GET /metrics`` on any web process sums the
files of all of them (``config/metrics.py``). Without it the values stay in the process's memory,
where nothing reads them: recording costs a dictionary lookup and an addition.

Labels are bounded by the code: no tenant, user, email, path or other value a caller chooses.
What is known only at scrape time (queues, backlogs, pools, breakers) is collected then, in
``config/metrics.py``.
"""

from __future__ import annotations

import time

from prometheus_client import Counter, Gauge, Histogram

# Seconds: from a millisecond API read to a model's whole turn.
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
TURN_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0)
TASK_BUCKETS = (0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 15.0, 30.0, 60.0, 300.0)

HTTP_REQUESTS = Counter(
    "salesagent_http_requests", "Requests answered, by surface, route template, method and status.",
    ["surface", "route", "method", "status"])
HTTP_LATENCY = Histogram(
    "salesagent_http_request_duration_seconds",
    "Time from the request reaching the application to its response (a stream: its headers).",
    ["surface", "route", "method"], buckets=LATENCY_BUCKETS)

CHAT_TURNS = Counter(
    "salesagent_chat_turns",
    "Chat turns, by the tenant's agent kind (builtin, openai) and the path the turn took: "
    "builtin (the builtin agent alone), model (the model analysed and replied), rules_fallback "
    "(the model was asked, the builtin agent's rules answered all or part of the turn).",
    ["agent", "path"])
CHAT_TURN_SECONDS = Histogram(
    "salesagent_chat_turn_duration_seconds",
    "A turn's own time, from its analysis to its saved reply.", ["agent", "path"],
    buckets=TURN_BUCKETS)
MODEL_FIRST_TOKEN_SECONDS = Histogram(
    "salesagent_model_time_to_first_token_seconds",
    "From asking the model for its reply to its first streamed text.", ["agent"],
    buckets=TURN_BUCKETS)
MODEL_TOKENS = Counter(
    "salesagent_model_tokens",
    "Tokens a model used: the analysis's (as the server reports them) and the reply's streamed "
    "chunks (one token each, as OpenAI-compatible servers stream them).", ["agent", "phase"])
PROVIDER_ERRORS = Counter(
    "salesagent_provider_errors",
    "A model provider failing during a turn (unavailable, timeout); the builtin agent answered.",
    ["agent"])

HANDOFFS_UNASSIGNED = Counter(
    "salesagent_handoffs_nobody_available",
    "Handoffs that found nobody available and wait in the Unassigned queue.")

WORK_OUTCOMES = Counter(
    "salesagent_work_attempts",
    "Attempts of retried work (webhook deliveries, emails, calendar writes), by outcome: "
    "succeeded, retry (failed, tried again later), failed (failed for good).",
    ["kind", "outcome"])

RATE_LIMIT_REFUSALS = Counter(
    "salesagent_rate_limit_refusals",
    "Requests refused with 429, by the limit that refused them (minute, day, endpoint.chat, "
    "concurrency...).", ["limit"])

CELERY_TASK_SECONDS = Histogram(
    "salesagent_celery_task_duration_seconds", "Celery tasks' run times, by task and outcome.",
    ["task", "outcome"], buckets=TASK_BUCKETS)
# "max" across processes: the newest, whichever worker process ran it (a dead one's file keeps
# its last value, which is then older than a live one's).
CELERY_LAST_TASK = Gauge(
    "salesagent_celery_last_task_timestamp_seconds",
    "When a worker last finished a task (beat sends sweeps every few seconds: stale means no "
    "worker or no beat).", multiprocess_mode="max")

_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


def method_label(method: str | None) -> str:
    """A request's method, or ``other``: a method is any token a client sends."""
    return method if method in _METHODS else "other"


def work_attempt(kind: str, status: str | None, *, succeeded: str, failed: str) -> None:
    """Counts one attempt of retried work from the status it settled in: none (a retry keeps
    the row's status), the status of success, or the status of failing for good."""
    outcome = ("retry" if not status else "succeeded" if status == succeeded
               else "failed" if status == failed else "retry")
    WORK_OUTCOMES.labels(kind, outcome).inc()


class Stopwatch:
    """``time.perf_counter`` since it was made."""

    __slots__ = ("started",)

    def __init__(self) -> None:
        self.started = time.perf_counter()

    def seconds(self) -> float:
        return time.perf_counter() - self.started
