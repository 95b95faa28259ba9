"""A circuit breaker in front of a server the service depends on: the database, or Redis as the
broker or the channel layer (docs/security.md, "Under faults").

While the server answers, every call goes through. Once a call fails, the next calls fail at
once, without touching the server, until a trial succeeds: every ``cooldown`` seconds, either one
caller goes through as the trial, or, when the failure came with a ``probe``, a thread of the
breaker's own tries the probe, so that no caller ever waits for a trial. An outage then costs one
timeout, not one per call: no request waits for a server known to be gone, and no request
thread piles up behind it.
"""

from __future__ import annotations

import logging
import threading
import time
import weakref
from collections.abc import Callable

logger = logging.getLogger("salesagent.outages")

# Every breaker of the process, for /metrics (config/metrics.py).
_all: weakref.WeakSet[Breaker] = weakref.WeakSet()


def all_breakers() -> list[Breaker]:
    return list(_all)


class Breaker:
    """One server's breaker, shared by the threads of a process."""

    def __init__(self, name: str, *, cooldown: float, kind: str = "") -> None:
        self.name = name  # what the logs call the server: "the database", "the broker"
        self.kind = kind or name  # what /metrics calls it: database, broker, channel_layer
        _all.add(self)
        self.cooldown = cooldown
        self._open_until = 0.0  # time.monotonic() until which calls fail at once; 0: closed
        self._probing = False  # a thread of the breaker's own makes the trials
        self._lock = threading.Lock()

    @property
    def closed(self) -> bool:
        return self._open_until == 0.0

    def allows(self) -> bool:
        """Whether a call may go to the server now: always while closed; while open, one call
        per ``cooldown``, the trial, unless a probe makes the trials."""
        if self._open_until == 0.0:
            return True
        with self._lock:
            if self._open_until == 0.0:
                return True
            now = time.monotonic()
            if self._probing or now < self._open_until:
                return False
            self._open_until = now + self.cooldown  # this caller is the trial
            return True

    def failed(self, error: BaseException, *, probe: Callable[[], None] | None = None) -> None:
        """Opens the breaker. ``probe``: a call that raises while the server cannot be reached,
        tried every ``cooldown`` by a thread of its own until it passes, which closes the
        breaker; callers then never make trials."""
        with self._lock:
            was_closed = self._open_until == 0.0
            self._open_until = time.monotonic() + self.cooldown
            start_probing = probe is not None and not self._probing
            self._probing = self._probing or start_probing
        if was_closed:
            logger.error("%s cannot be reached (%s: %s); calls to it fail at once until it "
                         "answers again", self.name, type(error).__name__, error)
        if start_probing:
            threading.Thread(target=self._probe, args=(probe,), daemon=True,
                             name=f"probe {self.name}").start()

    def succeeded(self) -> None:
        if self._open_until == 0.0:
            return
        with self._lock:
            self._open_until = 0.0
        logger.warning("%s answers again", self.name)

    def _probe(self, probe: Callable[[], None]) -> None:
        try:
            while not self.closed:
                time.sleep(self.cooldown)
                try:
                    probe()
                except Exception:  # still unreachable: try again after the cooldown
                    continue
                self.succeeded()
        finally:
            with self._lock:
                self._probing = False
