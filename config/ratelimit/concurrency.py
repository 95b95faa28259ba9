"""Holding a concurrency slot for as long as an open stream lasts.

The v1 base view takes a slot for every request and gives it back when the response is ready;
for a streaming response it hands the slot to :func:`guard_stream`, which keeps it (renewing its
lease every third of the lease) until the stream ends or the client goes away.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Iterable, Iterator

from . import core

logger = logging.getLogger("salesagent.ratelimit")


@contextlib.asynccontextmanager
async def _kept(slot: core.Slot) -> AsyncIterator[core.Slot]:
    """Renews ``slot``'s lease while the block runs and gives the slot back when it ends."""
    keeper = asyncio.create_task(_keep_alive(slot)) if not slot.released else None
    try:
        yield slot
    finally:
        if keeper is not None:
            keeper.cancel()
        await slot.arelease()


async def _keep_alive(slot: core.Slot) -> None:
    interval = max(slot.lease / 3, 0.05)
    while not slot.released:
        await asyncio.sleep(interval)
        if not await slot.arefresh():
            logger.warning("a held concurrency slot had already expired; the stream goes on")
            return


def guard_stream(slot: core.Slot, content: Iterable | AsyncIterator):
    """Wraps a streaming response's content so that ``slot`` is held until the stream is done:
    exhausted, failed, or closed because the client disconnected."""
    if hasattr(content, "__aiter__"):
        return _guard_async(slot, content)
    return _guard_sync(slot, content)


async def _guard_async(slot: core.Slot, content: AsyncIterator) -> AsyncIterator:
    async with _kept(slot):
        async for chunk in content:
            yield chunk


def _guard_sync(slot: core.Slot, content: Iterable) -> Iterator:
    # Django consumes a synchronous stream in one go under ASGI; renew on the way if it is slow.
    renewed = time.monotonic()
    try:
        for chunk in content:
            yield chunk
            if time.monotonic() - renewed > slot.lease / 3:
                slot.refresh()
                renewed = time.monotonic()
    finally:
        slot.release()
