"""``GET /api/health``: is the service able to serve? A real query, a cache round trip and a
broker round trip, each with a short timeout; and, under ``manage.py serve``, whether its worker
and beat are running (read from the file serve keeps, no round trip)."""

from __future__ import annotations

import json
import logging
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

from django.conf import settings
from django.core.cache import cache
from django.db import connection
from drf_spectacular.utils import extend_schema, inline_serializer
from kombu import Connection
from rest_framework import serializers
from rest_framework.response import Response

from config.api.views import PublicLegacyAPIView
from config.celery import app as celery_app
from core.timestamps import format_timestamp

logger = logging.getLogger("salesagent.health")


def check_database() -> None:
    if connection.vendor == "postgresql" and connection.settings_dict.get("OPTIONS", {}).get("pool"):
        # A pooled connection waits up to the pool's timeout for a server that is down; the
        # check opens one connection of its own, with the check's two-second timeout.
        import psycopg

        db = connection.settings_dict
        with psycopg.connect(dbname=db["NAME"], user=db["USER"] or None,
                             password=db["PASSWORD"] or None, host=db["HOST"] or None,
                             port=db["PORT"] or None, connect_timeout=2) as conn:
            if conn.execute("SELECT 1").fetchone() != (1,):
                raise RuntimeError("unexpected answer")
        return
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        if cursor.fetchone() != (1,):
            raise RuntimeError("unexpected answer")


def check_cache() -> None:
    key = f"health:{uuid.uuid4().hex}"
    cache.set(key, "1", timeout=10)
    if cache.get(key) != "1":
        raise RuntimeError("the value written was not read back")
    cache.delete(key)


def check_broker() -> None:
    with Connection(settings.CELERY_BROKER_URL, connect_timeout=2,
                    transport=settings.CELERY_BROKER_TRANSPORT,
                    transport_options=settings.CELERY_BROKER_TRANSPORT_OPTIONS) as conn:
        conn.ensure_connection(max_retries=1, interval_start=0, interval_step=0, timeout=2)
        if settings.CELERY_BROKER_TRANSPORT:
            # The SQLite broker connects lazily: ask its file how many tasks wait.
            conn.default_channel.queue_declare(queue=celery_app.conf.task_default_queue)


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
