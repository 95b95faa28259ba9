"""Holding a concurrency slot for as long as some work lasts, including an open stream.

The v1 base view takes a slot for every request and gives it back when the response is ready;
for a streaming response it hands the slot to :func:`guard_stream`, which keeps it (renewing its
lease every third of the lease) until the stream ends or the client goes away. Code outside the
DRF views that needs a slot uses :func:`hold`::

    async with hold(caller):   # 429 (RateLimited) when the key's slots are all taken
        ...
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Iterable, Iterator

from . import core, policy

logger = logging.getLogger("salesagent.ratelimit")


@contextlib.asynccontextmanager
async def hold(caller) -> AsyncIterator[core.Slot]:
    """Holds one of the caller's concurrency slots (v1 plan limit) for the body of the block,
    renewing the lease while the block runs; raises RateLimited when none is free."""
    slot = await core.aacquire(policy.v1_slots(caller))
    keeper = asyncio.create_task(_keep_alive(slot))
    try:
        yield slot
    finally:
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
    keeper = asyncio.create_task(_keep_alive(slot)) if not slot.released else None
    try:
        async for chunk in content:
            yield chunk
    finally:
        if keeper is not None:
            keeper.cancel()
        await slot.arelease()


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
