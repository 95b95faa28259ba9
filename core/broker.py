"""Putting tasks on the broker without letting an outage of it hold the caller.

Work that a task carries is a row before it is a task (webhook deliveries, emails, calendar
writes, documents to index), and each kind has a sweeper that enqueues its due rows again. So a
message that cannot be published loses nothing: the caller leaves its rows due and the sweeper
enqueues them once the broker answers. What must not happen is a request waiting for a broker
that is gone; the breaker (``core.breaker``) makes every publish after a failure give up at once
for a few seconds, and the broker's socket timeouts (settings) bound the one that finds out.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Sequence
from typing import Any

from .breaker import Breaker

logger = logging.getLogger("salesagent.outages")

# After a failure, publishing gives up at once for this long, then tries again.
COOLDOWN_SECONDS = 5.0
breaker = Breaker("the broker", cooldown=COOLDOWN_SECONDS, kind="broker")


def publish(task, ids: Sequence[Any]) -> bool:
    """One message of ``task`` per item of ``ids`` (its one argument: an id, or a batch of
    them), through one producer (and, where kombu has publish batches, one round trip per
    batch). False when the broker could not be
    reached, now or within the last ``COOLDOWN_SECONDS``: the caller's rows stay due for their
    sweeper (some messages may have left; a task that finds its row already done does nothing).
    """
    if not ids:
        return True
    if not breaker.allows():
        return False
    try:
        with task.app.producer_or_acquire() as producer:
            batch = producer.batch() if hasattr(producer, "batch") else contextlib.nullcontext()
            with batch:
                for one in ids:
                    task.apply_async((one,), producer=producer)
    except Exception as exc:  # kombu's OperationalError, redis and socket errors: unreachable
        breaker.failed(exc)
        logger.warning("Could not enqueue %s %s task(s) (%s); their sweeper will", len(ids),
                       task.name, exc)
        return False
    breaker.succeeded()
    return True
