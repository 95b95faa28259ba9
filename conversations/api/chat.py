"""One chat request, on either surface: open the turn, then stream it as Server-Sent Events or
answer it whole. The surfaces differ only in the shapes they give the result."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from asgiref.sync import async_to_sync
from django.http import HttpResponse
from rest_framework.response import Response

from agent.interface import provider_for
from tenants.models import Tenant

from ..attachments import Upload
from ..services import Acceptance, TurnInput, TurnOutcome, run_turn, stream_turn, turn_open
from .sse import event_stream


def request_metadata(request) -> dict[str, Any]:
    """Where the visitor came from, from the request's headers (docs/conversations.md); the
    body's ``metadata`` overrides these."""
    return {"userAgent": request.headers.get("User-Agent", "")[:500] or None,
            "referrer": request.headers.get("Referer", "")[:2000] or None}


def asks_not_to_be_tracked(request) -> bool:
    """The visitor's browser sends Do Not Track or Global Privacy Control (docs/widget.md,
    "Do Not Track"); whether that keeps anything out is the tenant's setting."""
    return "1" in (request.headers.get("DNT", "").strip(), request.headers.get("Sec-GPC", "").strip())


def answer_chat(request, data: dict[str, Any], *, tenant: Tenant, livemode: bool, channel: str,
                stream_shape: Callable[[str, dict], dict],
                response_body: Callable[[TurnOutcome, str], dict],
                attachment: Upload | None = None) -> HttpResponse:
    """``data`` is the validated chat body (message, visitorId, sessionId, stream, metadata,
    language, and the widget's consent); the tenant, mode and channel are the surface's;
    ``attachment`` a file sent with the message (the widget's)."""
    provider = provider_for(tenant)
    consent = data.get("consent")
    opened = turn_open(TurnInput(
        tenant=tenant, livemode=livemode, visitor_id=data["visitorId"], message=data["message"],
        session_id=data.get("sessionId"), channel=channel, language=data.get("language"),
        metadata=data["metadata"], request_meta=request_metadata(request),
        consent=consent and Acceptance(version=consent["version"],
                                       accepted_at=consent["acceptedAt"]),
        do_not_track=asks_not_to_be_tracked(request), attachment=attachment,
    ))
    if data["stream"]:
        return event_stream(stream_turn(opened, provider), stream_shape)
    outcome = async_to_sync(run_turn)(opened, provider)
    return Response(response_body(outcome, data["visitorId"]))
