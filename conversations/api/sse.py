"""Server-Sent Events for the chat endpoints: one ``event:``/``data:`` frame per event, sent as
it is produced (no buffering by the service or by a proxy that honours X-Accel-Buffering)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from typing import Any

from django.http import StreamingHttpResponse


def frame(event: str, data: dict[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n".encode()


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
