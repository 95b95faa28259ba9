"""What every log line passes through before it is written: email addresses are masked, the
request's or task's context is added, and in production each line is one JSON object
(``LOG_FORMAT``; docs/operations.md, "Logs and traces").

The service's own log lines name records by id (docs/privacy.md, "Logs"). Text that other code
puts into a line is not ours to word: an SMTP server's refusal quotes the recipient
(``550 5.1.1 <alice@example.com>: Recipient address rejected``), a database's unique-violation
detail quotes the value, a traceback quotes the exception's message. The formatter masks any
email address in the finished line, message and traceback alike, so that a visitor's address
never reaches a log whoever wrote the line. Phone numbers and names have no shape that tells them
from ids, counts and times; the call sites keep those out.
"""

from __future__ import annotations

import contextvars
import datetime
import functools
import json
import logging
import re

EMAIL = re.compile(r"[\w.!#$%&'*+/=?^`{|}~-]+@[\w-]+(?:\.[\w-]+)*\.[A-Za-z]{2,}\b")
MASK = "[email]"


def redact(text: str) -> str:
    return EMAIL.sub(MASK, text)


class RedactingFormatter(logging.Formatter):
    """A formatter whose lines have their email addresses masked. ``inner``: another formatter
    to wrap (Celery's, in a worker), else this one formats as ``logging.Formatter`` does."""

    def __init__(self, *args, inner: logging.Formatter | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.inner = inner

    def format(self, record: logging.LogRecord) -> str:
        for name in FIELDS:  # a handler without ContextFilter (another's, a test's) still formats
            if not hasattr(record, name):
                setattr(record, name, UNSET)
        return redact(self.inner.format(record) if self.inner else super().format(record))


# --- What a line says about where it comes from ------------------------------------------------
#
# Every line logged while a request or a Celery task runs carries the request's id, the tenant's
# public id, the surface and the route template (docs/operations.md, "Logs and traces"). The
# request (``config.middleware.RequestIdMiddleware``) or the task (``config.celery``) opens a
# scope, one mutable dict in a context variable: what is learnt later (the route once the URL is
# resolved, the tenant once a key is checked) is written into that dict, so that it reaches every
# line, whichever thread or copied context of the request logs it.

FIELDS = ("request_id", "tenant", "surface", "route")
UNSET = "-"

_scope: contextvars.ContextVar[dict[str, str] | None] = contextvars.ContextVar(
    "log_scope", default=None)


def open_scope(**fields: str) -> contextvars.Token:
    """Starts the scope of a request or a task; ``close_scope`` with the token ends it."""
    return _scope.set({name: value for name, value in fields.items() if value})


def close_scope(token: contextvars.Token) -> None:
    _scope.reset(token)


def bind(**fields: str | None) -> None:
    """Adds what has been learnt (``tenant=``, ``route=``) to the current scope, if there is one."""
    scope = _scope.get()
    if scope is not None:
        scope.update({name: value for name, value in fields.items() if value})


def current(name: str) -> str | None:
    scope = _scope.get()
    return scope.get(name) if scope else None


def bind_tenant(tenant) -> None:
    """The tenant the request acts for: its public id, never its name."""
    if tenant is not None:
        bind(tenant=getattr(tenant, "public_id", None))


class ContextFilter(logging.Filter):
    """Puts the scope's fields on every record (``-`` outside any request or task)."""

    def filter(self, record: logging.LogRecord) -> bool:
        scope = _scope.get() or {}
        for name in FIELDS:
            setattr(record, name, scope.get(name, UNSET))
        return True


# The surface a request is on, by the first matching prefix: the API's two, the widget's own
# endpoints (under the legacy prefix, docs/widget.md; its chat itself is the legacy
# ``/api/chat``), then a page by its first segment. Bounded: a metrics label too.
_API_SURFACES = (("/api/v1/", "v1"), ("/api/widget", "widget"), ("/api/chat/", "widget"),
                 ("/widget.js", "widget"), ("/api/", "legacy"))
_PAGE_SURFACES = frozenset({"dashboard", "admin", "meetings", "static", "demo", "docs"})


def surface_of(path: str) -> str:
    """``v1``, ``widget``, ``legacy``, a page's first segment (``dashboard``, ``admin``…), or
    ``pages`` for the others."""
    if path == "/api/v1":
        return "v1"
    for prefix, surface in _API_SURFACES:
        if path.startswith(prefix):
            return surface
    first = path.strip("/").split("/", 1)[0]
    return first if first in _PAGE_SURFACES else "pages"


_ROUTE_GROUP = re.compile(r"\(\?P<(\w+)>")
_CONVERTER = re.compile(r"<\w+:(\w+)>")


def route_template(match) -> str:
    """The route of a resolved URL (``ResolverMatch``) as a template, ``/api/v1/leads/<pk>``:
    bounded (no ids), no query string; the logs' ``route`` and the metrics' label."""
    return _template(match.route or "")


@functools.lru_cache(maxsize=1024)
def _template(route: str) -> str:
    """DRF's routers give regular expressions: their named groups become ``<name>``, their
    anchors and other groups' marks go. Once per route: the set of routes is fixed."""
    out, i = [], 0
    for found in _ROUTE_GROUP.finditer(route):
        if found.start() < i:
            continue
        out.append(route[i:found.start()] + f"<{found.group(1)}>")
        depth, j = 1, found.end()
        while j < len(route) and depth:  # to the group's closing parenthesis
            depth += {"(": 1, ")": -1}.get(route[j], 0) if route[j - 1] != "\\" else 0
            j += 1
        i = j
    out.append(route[i:])
    text = "".join(out).replace("(?:", "")
    for mark in "^$\\?()":
        text = text.replace(mark, "")
    return "/" + _CONVERTER.sub(r"<\1>", text).lstrip("/")


class JsonFormatter(RedactingFormatter):
    """One JSON object per line: time, level, logger, message, the scope's fields, the task's
    name and id in a worker, and the traceback, if any; email addresses masked as in text."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, object] = {
            "time": self.formatTime(record),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for name in FIELDS:
            value = getattr(record, name, UNSET)
            if value and value != UNSET:
                line[name] = value
        for name in ("task", "task_id", "status", "duration_ms", "method"):
            if (value := getattr(record, name, None)) is not None:
                line[name] = value
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        elif record.exc_text:
            line["exception"] = record.exc_text
        if record.stack_info:
            line["stack"] = self.formatStack(record.stack_info)
        return redact(json.dumps(line, ensure_ascii=False, default=str))

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:  # noqa: N802
        moment = datetime.datetime.fromtimestamp(record.created, tz=datetime.UTC)
        return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def use_formats(logger: logging.Logger, log_format: str) -> None:
    """Gives each of ``logger``'s handlers the scope's fields and the format: Celery replaces
    the handlers that the settings' ``LOGGING`` set up with its own in a worker and in beat
    (``config/celery.py`` calls this once it has)."""
    for handler in logger.handlers:
        if not any(isinstance(f, ContextFilter) for f in handler.filters):
            handler.addFilter(ContextFilter())
        if log_format == "json":
            if not isinstance(handler.formatter, JsonFormatter):
                handler.setFormatter(JsonFormatter())
            continue
        formatter = handler.formatter or logging.Formatter()
        if not isinstance(formatter, RedactingFormatter):
            handler.setFormatter(RedactingFormatter(inner=formatter))
