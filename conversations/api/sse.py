"""Server-Sent Events for the chat endpoints: one ``event:``/``data:`` frame per event, sent as
it is produced (no buffering by the service or by a proxy that honours X-Accel-Buffering)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from typing import Any

from django.http import StreamingHttpResponse

# The events of a chat request's stream (both surfaces: the specification's v1 names).
CHAT_EVENTS = ("message_start", "content_delta", "message_end", "error")


def event_schema(events: tuple[str, ...]) -> dict[str, Any]:
    """One event of a ``text/event-stream`` response, as OpenAPI 3.0 describes a stream (its
    ``schema`` is each event's, read as ``{event, data}``): the event's name and its fields as
    JSON text."""
    return {"type": "object", "required": ["event", "data"], "properties": {
        "event": {"type": "string", "enum": list(events)},
        "data": {"type": "string", "description": "The event's fields, as a JSON object."},
    }}


def frame(event: str, data: dict[str, Any]) -> bytes:
    # ``reconnect`` (the process is stopping) also sets EventSource's own reconnection delay,
    # so that a page that does not know the event comes back as soon as the widget does.
    retry = f"retry: {data['retryMs']}\n" if event == "reconnect" else ""
    return f"{retry}event: {event}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n".encode()


def event_stream(events: AsyncIterator[tuple[str, dict]],
                 shape: Callable[[str, dict], dict]) -> StreamingHttpResponse:
    async def body():
        async for event, data in events:
            yield frame(event, shape(event, data))

    return event_stream_response(body())


def event_stream_response(frames: AsyncIterator[bytes]) -> StreamingHttpResponse:
    """A response that sends each frame as it comes, past any buffering proxy."""
    response = StreamingHttpResponse(frames, content_type="text/event-stream; charset=utf-8")
    response["Cache-Control"] = "no-cache, no-transform"
    response["X-Accel-Buffering"] = "no"
    return response
