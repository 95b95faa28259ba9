"""``GET /api/health``: is the service able to serve? A real query, a cache round trip and a
broker round trip, each with a short timeout."""

from __future__ import annotations

import logging
import time
import uuid

from django.conf import settings
from django.core.cache import cache
from django.db import connection
from drf_spectacular.utils import extend_schema, inline_serializer
from kombu import Connection
from rest_framework import serializers
from rest_framework.response import Response

from config.api.views import PublicLegacyAPIView
from config.celery import app as celery_app

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

class HealthComponentSerializer(serializers.Serializer):
    status = serializers.ChoiceField(choices=["ok", "down"])
    latencyMs = serializers.FloatField()
    error = serializers.CharField(required=False, help_text="The kind of failure.")


class HealthView(PublicLegacyAPIView):
    rate_limit_bucket = "public_health"

    @extend_schema(
        operation_id="legacy_health",
        auth=[],
        responses={
            200: inline_serializer(
                name="Health",
                fields={
                    "status": serializers.ChoiceField(choices=["ok", "unavailable"]),
                    "components": serializers.DictField(child=HealthComponentSerializer()),
                    "error": serializers.CharField(required=False),
                },
            ),
            503: inline_serializer(
                name="HealthDown",
                fields={
                    "error": serializers.CharField(),
                    "status": serializers.CharField(),
                    "components": serializers.DictField(child=HealthComponentSerializer()),
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
        down = [name for name, c in components.items() if c["status"] != "ok"]
        if down:
            return Response(
                {"error": f"Unavailable: {', '.join(down)}", "status": "unavailable",
                 "components": components},
                status=503,
            )
        return Response({"status": "ok", "components": components})
