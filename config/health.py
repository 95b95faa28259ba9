"""``GET /api/health``: is the service able to serve? A real query on a pooled connection, a
cache round trip and a broker round trip on a connection kept per process, each with a short
timeout; and, under ``manage.py serve``, whether its worker and beat are running (read from the
file serve keeps, no round trip). No connection is made per check while the servers answer, so
the check costs what a small API request costs (docs/performance.md, "Health")."""

from __future__ import annotations

import contextlib
import json
import logging
import threading
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

from django.conf import settings
from django.core.cache import cache
from django.db import OperationalError, connection
from drf_spectacular.utils import extend_schema, inline_serializer
from kombu import Connection
from psycopg_pool import PoolTimeout
from rest_framework import serializers
from rest_framework.response import Response

from config.api.views import PublicLegacyAPIView
from config.celery import app as celery_app
from config.postgresql.base import pool_wait_at_most
from core.timestamps import format_timestamp

logger = logging.getLogger("salesagent.health")


# A check that has not answered within this long is a "down": a server that accepts connections
# and never answers must not hold the health answer longer (the broker's socket timeouts; the
# cache's are 1 s in the settings).
CHECK_TIMEOUT_SECONDS = 2.0


def check_database() -> None:
    """``SELECT 1`` on the request's own connection, from the pool as every request's. A server
    that cannot be reached fails as it does for them: within the backend's first wait, then at
    once while its breaker is open (config/postgresql/base.py, docs/security.md). A pool that
    stays busy for the check's timeout is no outage: the server is then asked on a connection
    of the check's own."""
    try:
        with pool_wait_at_most(CHECK_TIMEOUT_SECONDS / 2), connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            answer = cursor.fetchone()
    except OperationalError as exc:
        if not isinstance(exc.__cause__, PoolTimeout):
            raise
        answer = _select_one_directly()
    if answer != (1,):
        raise RuntimeError("unexpected answer")


def _select_one_directly() -> tuple:
    import psycopg

    params = connection.get_connection_params()
    params.pop("pool", None)
    params["connect_timeout"] = CHECK_TIMEOUT_SECONDS
    with psycopg.connect(**params) as direct:
        return direct.execute("SELECT 1").fetchone()


# One cache key per process: a check writes and reads it back; it expires on its own.
_CACHE_KEY = f"health:{uuid.uuid4().hex}"


def check_cache() -> None:
    value = uuid.uuid4().hex  # a new value each time: an old one read back proves nothing
    cache.set(_CACHE_KEY, value, timeout=10)
    if cache.get(_CACHE_KEY) != value:
        raise RuntimeError("the value written was not read back")


class KeptBrokerConnection:
    """One broker connection per process for the health check, kept between checks and made
    again after any failure (a reset socket, a timeout, a server that was gone). Made again too
    when the broker's settings change. A check is one round trip: the default queue's length.
    kombu's connections are not thread-safe, so checks take turns; one that cannot have its
    turn within the check's timeout fails as a timeout."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._connection: Connection | None = None
        self._settings: tuple = ()

    def check(self) -> None:
        if not self._lock.acquire(timeout=CHECK_TIMEOUT_SECONDS):
            raise TimeoutError("an earlier check of the broker is still waiting for it")
        try:
            broker = self._kept()
            try:
                # Lazy transports (SQLite) open their file here; Redis answers LLEN.
                broker.default_channel.queue_declare(
                    queue=celery_app.conf.task_default_queue)
            except Exception:
                self.close()
                raise
        finally:
            self._lock.release()

    def queue_size(self, queue: str) -> int:
        """How many messages wait on ``queue`` (/metrics): one round trip (Redis: LLEN), on the
        same kept connection, taking turns with the checks."""
        if not self._lock.acquire(timeout=CHECK_TIMEOUT_SECONDS):
            raise TimeoutError("an earlier use of the broker connection is still waiting")
        try:
            broker = self._kept()
            try:
                return int(broker.default_channel._size(queue))
            except Exception:
                self.close()
                raise
        finally:
            self._lock.release()

    def _kept(self) -> Connection:
        wanted = (settings.CELERY_BROKER_URL, settings.CELERY_BROKER_TRANSPORT,
                  repr(settings.CELERY_BROKER_TRANSPORT_OPTIONS))
        if self._connection is None or wanted != self._settings:
            self.close()
            broker = Connection(settings.CELERY_BROKER_URL,
                                connect_timeout=CHECK_TIMEOUT_SECONDS,
                                transport=settings.CELERY_BROKER_TRANSPORT,
                                transport_options=settings.CELERY_BROKER_TRANSPORT_OPTIONS)
            try:
                broker.ensure_connection(max_retries=1, interval_start=0, interval_step=0,
                                         timeout=CHECK_TIMEOUT_SECONDS)
            except Exception:
                broker.release()
                raise
            self._connection, self._settings = broker, wanted
        return self._connection

    def close(self) -> None:
        broker, self._connection = self._connection, None
        if broker is not None:
            with contextlib.suppress(Exception):  # a broken connection may fail to close
                broker.release()


kept_broker = KeptBrokerConnection()


def check_broker() -> None:
    kept_broker.check()


CHECKS = {"database": check_database, "cache": check_cache, "broker": check_broker}

# A worker or beat that ``serve`` is restarting is "restarting" this long, then "down": a restart
# takes a few seconds, and a monitor should not page for one.
DOWN_AFTER_SECONDS = 10.0
# serve rewrites its state file every 2 s; older than this, serve itself has stopped.
STATE_STALE_SECONDS = 15.0


def _read_serve_state(path: str) -> dict | None:
    """The children's states that ``manage.py serve`` writes, or None if it is gone or silent."""
    try:
        state = json.loads(Path(path).read_text())
        if time.time() - float(state["updatedAt"]) < STATE_STALE_SECONDS:
            return state["children"]
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return None


def _supervised_component(child: dict) -> dict:
    component = {"status": "ok", "restarts": child.get("restarts", 0)}
    if child.get("running"):
        return component
    down_since = child.get("downSince") or time.time()
    down_for = time.time() - down_since
    component.update(
        status="down" if down_for >= DOWN_AFTER_SECONDS else "restarting",
        downSince=format_timestamp(datetime.fromtimestamp(down_since, UTC)),
        error=child.get("lastExit") or "not running",
    )
    return component


def supervised_components() -> dict[str, dict]:
    """``worker`` and ``beat`` as ``serve`` sees them; nothing when not run by ``serve``
    (``SERVE_STATE_FILE`` unset: workers run elsewhere and report nothing here)."""
    if not settings.SERVE_STATE_FILE:
        return {}
    started = time.perf_counter()
    children = _read_serve_state(settings.SERVE_STATE_FILE)
    if children is None:
        components = {"supervisor": {"status": "down", "error": "serve's state is missing or stale"}}
    else:
        components = {name: _supervised_component(child) for name, child in children.items()
                      if name != "web"}  # the web server is the one answering
    latency = round((time.perf_counter() - started) * 1000, 2)
    for component in components.values():
        component["latencyMs"] = latency
    return components


class HealthComponentSerializer(serializers.Serializer):
    status = serializers.ChoiceField(
        choices=["ok", "restarting", "down"],
        help_text="`restarting`: a worker or beat that `serve` is starting again, for up to "
                  f"{DOWN_AFTER_SECONDS:g} s; `down` after that.")
    latencyMs = serializers.FloatField()
    error = serializers.CharField(required=False, help_text="The kind of failure.")
    restarts = serializers.IntegerField(
        required=False, help_text="worker and beat: how often `serve` has restarted it.")
    downSince = serializers.CharField(
        required=False, help_text="worker and beat, when not running: since when.")


HEALTH_COMPONENTS_HELP = (
    "`database`, `cache` and `broker` always; under `manage.py serve` also `worker` and `beat` "
    "(or `supervisor`, down, when serve's state is missing or stale).")
DEGRADED_HELP = "The components that are down without making the service unavailable."


class HealthView(PublicLegacyAPIView):
    rate_limit_bucket = "public_health"

    @extend_schema(
        operation_id="legacy_health",
        auth=[],
        responses={
            200: inline_serializer(
                name="Health",
                fields={
                    "status": serializers.ChoiceField(
                        choices=["ok", "degraded"],
                        help_text="`degraded`: the API serves, background work (webhooks, "
                                  "indexing, emails) waits for a worker or beat that is down."),
                    "components": serializers.DictField(child=HealthComponentSerializer(),
                                                        help_text=HEALTH_COMPONENTS_HELP),
                    "degraded": serializers.ListField(child=serializers.CharField(),
                                                      required=False, help_text=DEGRADED_HELP),
                },
            ),
            503: inline_serializer(
                name="HealthDown",
                fields={
                    "error": serializers.CharField(),
                    "status": serializers.ChoiceField(choices=["unavailable"]),
                    "components": serializers.DictField(child=HealthComponentSerializer(),
                                                        help_text=HEALTH_COMPONENTS_HELP),
                    "degraded": serializers.ListField(child=serializers.CharField(),
                                                      required=False, help_text=DEGRADED_HELP),
                },
            ),
        },
    )
    def get(self, request):
        components: dict[str, dict] = {}
        for name, check in CHECKS.items():
            started = time.perf_counter()
            try:
                check()
                components[name] = {"status": "ok"}
            except Exception as exc:  # every failure is a "down", whatever its kind
                logger.warning("health check %s failed: %s", name, exc)
                components[name] = {"status": "down", "error": type(exc).__name__}
            components[name]["latencyMs"] = round((time.perf_counter() - started) * 1000, 2)
        down = [name for name, c in components.items() if c["status"] == "down"]
        supervised = supervised_components()
        components.update(supervised)
        body: dict = {"status": "ok", "components": components}
        if degraded := [name for name, c in supervised.items() if c["status"] == "down"]:
            body.update(status="degraded", degraded=degraded)
        if down:
            body.update(error=f"Unavailable: {', '.join(down)}", status="unavailable")
            return Response(body, status=503)
        return Response(body)
