"""``Idempotency-Key`` on v1 POSTs, with Stripe's semantics (docs/idempotency.md).

The first request with a key runs and its response is stored (2xx and 4xx other than 429);
a later request with the same key and the same method, path and JSON body gets that response
again, marked ``Idempotent-Replayed: true``, without running. The same key with another request
is 422; while the first request still runs, duplicates get 409.

A request that holds a key marks its record ``written`` in each transaction that writes, before
its first write (a wrapper around the statements its connection executes), so that a retry can
tell a first request that died having done nothing, whose key it takes over at once, from one
whose work may have committed (``apikeys.liveness``; docs/idempotency.md, "When the first
request dies"). The mark is conditioned on the request still holding the key: once a retry took
it over, the request's next write is refused (409) and its transaction rolled back, so that the
work is done once.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import threading
from collections import deque
from collections.abc import Callable
from functools import partial

from django.db import InterfaceError, OperationalError, connection, transaction
from django.http import HttpResponse

from apikeys import services
from apikeys.models import IdempotencyKey
from core import errors as domain

HEADER = "Idempotency-Key"
MAX_KEY_LENGTH = 255
REPLAYED_HEADER = "Idempotent-Replayed"
# Headers that belong to the response itself rather than to the moment it was sent (rate-limit
# state, request id, cookies): only these are stored and replayed.
STORED_HEADERS = ("Content-Type", "Location", "Content-Language")

logger = logging.getLogger("salesagent.api")

# Keys whose request ended while the database could not be reached, so that neither its response
# could be stored nor the key released: this process settles them before its next claim, and a
# retry with the key then runs (or replays) instead of getting 409 until the lock expires.
_unsettled: deque[Callable[[], None]] = deque(maxlen=10_000)
_unsettled_lock = threading.Lock()


class IdempotentReplay(Exception):
    """Raised in ``initial()`` to answer with a stored response instead of running the view."""

    def __init__(self, response: HttpResponse):
        super().__init__("idempotent replay")
        self.response = response


def should_store(status: int) -> bool:
    """2xx and 4xx answers are final for the request that got them; a 429 or a 5xx says "try
    again", so the key stays free for that retry."""
    return 200 <= status < 300 or (400 <= status < 500 and status != 429)


def fingerprint(method: str, path: str, data) -> str:
    """What "the same request" means: method, full path and the JSON body, keys sorted, so that
    whitespace and key order do not matter."""
    body = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      default=_body_part)
    return hashlib.sha256(f"{method}\n{path}\n{body}".encode()).hexdigest()


def _body_part(value) -> str:
    """A multipart body's file counts by its content, not only its name: two different files
    under one name are two requests (the knowledge-base upload)."""
    if hasattr(value, "chunks"):
        digest = hashlib.sha256()
        for chunk in value.chunks():
            digest.update(chunk)
        value.seek(0)  # the view reads the file after this
        return f"file:{value.name}:{digest.hexdigest()}"
    return str(value)


def _validated_key(request) -> str | None:
    key = request.headers.get(HEADER)
    if key is None:
        return None
    if not key.strip():
        raise domain.InvalidRequest(f"The {HEADER} header is empty.", details=[
            domain.FieldError(HEADER, "too_short", "Send 1 to 255 characters, or no header.")])
    if len(key) > MAX_KEY_LENGTH:
        raise domain.InvalidRequest(f"The {HEADER} header is too long.", details=[
            domain.FieldError(HEADER, "too_long", f"At most {MAX_KEY_LENGTH} characters.")])
    return key


def _settle(settle: Callable[[], None]) -> None:
    """Stores a response or releases a key; if the database cannot be reached, later."""
    try:
        settle()
    except (OperationalError, InterfaceError) as exc:
        logger.warning("Idempotency-Key not settled (the database cannot be reached: %s); "
                       "settled before this process's next claim", exc)
        with _unsettled_lock:
            _unsettled.append(settle)


def settle_pending() -> None:
    """Settles what ``_settle`` could not, oldest first, until the database fails again."""
    while _unsettled:
        with _unsettled_lock:
            if not _unsettled:
                return
            settle = _unsettled.popleft()
        try:
            settle()
        except (OperationalError, InterfaceError):
            with _unsettled_lock:
                _unsettled.appendleft(settle)
            return


def replay(stored: services.StoredResponse) -> HttpResponse:
    response = HttpResponse(stored.body, status=stored.status)
    for name, value in stored.headers.items():
        response[name] = value
    response[REPLAYED_HEADER] = "true"
    return response


# The statements that write (the ORM's, and any hand-written one): an INSERT, UPDATE or DELETE,
# alone or in a WITH. A read taken for a write only costs a retry the wait for the lock.
_WRITES = re.compile(r"\s*(?:INSERT|UPDATE|DELETE|REPLACE|MERGE)\b|\s*WITH\b.*\b(?:INSERT|UPDATE|DELETE)\b",
                     re.IGNORECASE | re.DOTALL)


class _WriteMark:
    """The execute wrapper of a request that may hold a key: before the first write of each of
    its transactions, it marks the held record ``written`` in that same transaction, which also
    checks that the request still holds the key."""

    def __init__(self, view: IdempotencyMixin):
        self.view = view
        self._marking = False

    def __call__(self, execute, sql, params, many, context):
        record = self.view.idempotency_record
        if record is not None and not self._marking and _WRITES.match(sql):
            self._mark(record, context["connection"])
        return execute(sql, params, many, context)

    def _mark(self, record: IdempotencyKey, conn) -> None:
        if conn.in_atomic_block and any(hook[1] == self._marked for hook in conn.run_on_commit):
            return  # this transaction holds the mark (a rollback drops the hooks made inside it)
        self._marking = True
        try:
            services.idempotency_mark_written(record=record)
        finally:
            self._marking = False
        if conn.in_atomic_block:
            transaction.on_commit(self._marked)

    def _marked(self) -> None:
        """The on-commit hook that tells that a transaction holds the mark; nothing to do."""


class IdempotencyMixin:
    """For v1 views: claims the key after authentication, rate limiting and permissions (so a
    refused request never occupies a key), stores or releases it in ``finalize_response()``."""

    idempotent_methods = ("POST",)
    idempotency_record: IdempotencyKey | None = None

    def dispatch(self, request, *args, **kwargs):
        if request.method not in self.idempotent_methods or HEADER not in request.headers:
            return super().dispatch(request, *args, **kwargs)
        with connection.execute_wrapper(_WriteMark(self)):
            return super().dispatch(request, *args, **kwargs)

    def initial(self, request, *args, **kwargs):
        self.idempotency_record = None
        super().initial(request, *args, **kwargs)
        if request.method not in self.idempotent_methods:
            return
        api_key = getattr(request.user, "api_key", None)
        if api_key is None:
            return  # no key, no keys: an unknown path or a view without authentication
        key = _validated_key(request)
        if key is None:
            return
        # A body that does not parse fails here as it would in the view, and is not remembered.
        fp = fingerprint(request.method, request.get_full_path(), request.data)
        settle_pending()
        outcome = services.idempotency_claim(api_key=api_key, key=key, fingerprint=fp)
        if isinstance(outcome, services.StoredResponse):
            raise IdempotentReplay(replay(outcome))
        self.idempotency_record = outcome

    def handle_exception(self, exc):
        if isinstance(exc, IdempotentReplay):
            return exc.response
        return super().handle_exception(exc)

    def finalize_response(self, request, response, *args, **kwargs):
        response = super().finalize_response(request, response, *args, **kwargs)
        record, self.idempotency_record = self.idempotency_record, None
        if record is None:
            return response
        if getattr(response, "streaming", False) or not should_store(response.status_code):
            _settle(partial(services.idempotency_release, record=record))
            return response
        if hasattr(response, "render") and not getattr(response, "is_rendered", True):
            response.render()
        headers = {name: response[name] for name in STORED_HEADERS if response.has_header(name)}
        # The response stands even if it cannot be stored now: a 2xx means the work is done.
        _settle(partial(services.idempotency_complete, record=record, status=response.status_code,
                        headers=headers, body=bytes(response.content)))
        return response
