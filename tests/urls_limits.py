"""Probe views that declare each rate-limit bucket, hold concurrency slots open, and create
something observable for idempotency tests; plus the project's URLs. Used by the rate-limit and
idempotency tests (``settings.ROOT_URLCONF``) and by the live servers of those tests
(``tests/live_settings.py``)."""

from __future__ import annotations

import asyncio
import os
import threading
import time
from pathlib import Path

from django.db import DatabaseError, connection, transaction
from django.http import StreamingHttpResponse
from django.urls import path
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework.response import Response

from apikeys.services import api_key_create
from config.api.views import LegacyAPIView, PublicLegacyAPIView, V1APIView, V1ViewSet
from config.urls import handler400, handler403, handler404, handler500  # noqa: F401 - as served
from config.urls import urlpatterns as project_urlpatterns
from tenants.models import Tenant

# Streams of the chat probe stay open until this is set (in-process tests) or until their
# "hold" seconds have passed or the client has gone (live servers).
GATE = threading.Event()
OPEN_STREAMS: list[int] = [0]


async def _stream(hold: float | None):
    OPEN_STREAMS[0] += 1
    try:
        yield b'event: message_start\ndata: {"id": "msg_probe"}\n\n'
        deadline = time.monotonic() + (hold or 60)
        while not GATE.is_set() and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
            if hold:
                yield b": keep-alive\n\n"  # lets a live server notice a client that left
        yield b'event: message_end\ndata: {"leadScore": 0}\n\n'
    finally:
        OPEN_STREAMS[0] -= 1


class DefaultProbe(V1APIView):
    def get(self, request):
        return Response({"ok": True})

    def delete(self, request):
        return Response(status=204)


class ChatProbe(V1APIView):
    rate_limit_bucket = "chat"

    def get_rate_limit_bucket(self, request) -> str:
        return "chat_stream" if request.data.get("stream") is True else "chat"

    def post(self, request):
        if request.data.get("stream") is True:
            return StreamingHttpResponse(_stream(request.data.get("hold")),
                                         content_type="text/event-stream")
        return Response({"role": "assistant", "content": "Hello"})


class AnalyticsProbe(V1APIView):
    rate_limit_bucket = "analytics"

    def get(self, request):
        return Response({"summary": {}})


class LeadsProbe(V1APIView):
    rate_limit_bucket = {"POST": "lead_create"}

    def get(self, request):
        return Response({"data": []})

    def post(self, request):
        return Response({"id": "lead_probe"}, status=201)


class LeadsViewSetProbe(V1ViewSet):
    """Buckets per viewset action, as the real leads viewset declares them."""

    queryset = Tenant.objects.none()
    rate_limit_bucket = {"search": "lead_search", "create": "lead_create"}

    def search(self, request):
        return Response({"data": []})

    def create(self, request):
        return Response({"id": "lead_probe"}, status=201)

    def list(self, request):
        return Response({"data": []})


def _lose_the_connection(flag: str | None, *, quietly: bool) -> None:
    """The first time (``flag``, a file, does not exist yet): PostgreSQL ends this request's
    connection, as a server that goes away mid-request does; every later query of the request
    fails. ``quietly``: the request does not notice (its own queries are over)."""
    if not flag or Path(flag).exists():
        return
    Path(flag).touch()
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_terminate_backend(pg_backend_pid())")
    except DatabaseError:
        if not quietly:
            raise


def _die(flag: str | None) -> None:
    """The first time (``flag``, a file, does not exist yet): the process ends there and then, as
    a killed one does: no answer, no clean-up, an open transaction never committed."""
    if not flag or Path(flag).exists():
        return
    Path(flag).touch()
    os._exit(70)


class KeysProbe(V1APIView):
    """Creates an API key per call: a side effect the tests can count. ``seconds`` makes it slow
    (to overlap duplicates on a live server), ``started`` names a file it creates when it starts
    (so that a test waits for that, not for a guessed time); ``fail`` makes it a 500;
    ``lose_connection_before`` and ``_after`` (PostgreSQL) lose the database connection, once,
    before the key is created or after (``_lose_the_connection``). ``die_before``,
    ``die_uncommitted`` and ``die_after`` end the server process, once (``_die``): before the key
    is created, after it is created but before its transaction commits, after it is committed."""

    @extend_schema(request=OpenApiTypes.OBJECT, responses={201: OpenApiTypes.OBJECT})
    def post(self, request):
        if request.data.get("started"):
            Path(request.data["started"]).touch()
        if request.data.get("seconds"):
            time.sleep(float(request.data["seconds"]))
        if request.data.get("fail"):
            raise RuntimeError("probe failure")
        _lose_the_connection(request.data.get("lose_connection_before"), quietly=False)
        _die(request.data.get("die_before"))
        caller = request.user
        with transaction.atomic():
            key, _ = api_key_create(tenant=caller.tenant, name=request.data.get("name", ""),
                                    scope="read", livemode=caller.livemode)
            _die(request.data.get("die_uncommitted"))
        _die(request.data.get("die_after"))
        _lose_the_connection(request.data.get("lose_connection_after"), quietly=True)
        return Response({"id": str(key.pk), "name": key.name}, status=201,
                        headers={"Location": f"/api/v1/_probe/keys/{key.pk}"})


class LegacyProbe(LegacyAPIView):
    def get(self, request):
        return Response({"ok": True})


def _tenant(public_id) -> Tenant | None:
    return Tenant.objects.filter(public_id=str(public_id or "")).first()


class PublicChatProbe(PublicLegacyAPIView):
    rate_limit_bucket = "public_chat"

    def rate_limit_tenant(self, request) -> Tenant | None:
        return _tenant(request.data.get("tenantId"))

    def post(self, request):
        return Response({"reply": "Hello"})


class PublicWidgetProbe(PublicLegacyAPIView):
    rate_limit_bucket = "public_widget"

    def rate_limit_tenant(self, request) -> Tenant | None:
        return _tenant(request.query_params.get("tenant"))

    def get(self, request):
        return Response({"greeting": "Hi"})


class PublicUndeclaredProbe(PublicLegacyAPIView):
    def get(self, request):
        return Response({"ok": True})


urlpatterns = [
    path("api/v1/_probe/default", DefaultProbe.as_view()),
    path("api/v1/_probe/chat", ChatProbe.as_view()),
    path("api/v1/_probe/analytics", AnalyticsProbe.as_view()),
    path("api/v1/_probe/leads", LeadsProbe.as_view()),
    path("api/v1/_probe/vleads", LeadsViewSetProbe.as_view({"get": "list", "post": "create"})),
    path("api/v1/_probe/vleads/search", LeadsViewSetProbe.as_view({"get": "search"})),
    path("api/v1/_probe/keys", KeysProbe.as_view()),
    path("api/_probe/legacy", LegacyProbe.as_view()),
    path("api/_probe/chat", PublicChatProbe.as_view()),
    path("api/_probe/widget", PublicWidgetProbe.as_view()),
    path("api/_probe/open", PublicUndeclaredProbe.as_view()),
    *project_urlpatterns,
]
