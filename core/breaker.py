"""A circuit breaker in front of a server the service depends on: the database, or Redis as the
broker or the channel layer (docs/security.md, "Under faults").

While the server answers, every call goes through. Once a call fails, the next calls fail at
once, without touching the server, for ``cooldown`` seconds; then one call at a time goes
through as a trial, whose success closes the breaker again. An outage then costs one timeout
per cooldown instead of one per call: no request waits for a server known to be gone, and no
request thread piles up behind it.
"""

from __future__ import annotations

import logging
import threading
import time

logger = logging.getLogger("salesagent.outages")


class Breaker:
    """One server's breaker, shared by the threads of a process."""

    def __init__(self, name: str, *, cooldown: float) -> None:
        self.name = name  # what the logs call the server: "the database", "the broker"
        self.cooldown = cooldown
        self._open_until = 0.0  # time.monotonic() until which calls fail at once; 0: closed
        self._lock = threading.Lock()

    @property
    def closed(self) -> bool:
        return self._open_until == 0.0

    def allows(self) -> bool:
        """Whether a call may go to the server now: always while closed; while open, one call
        per ``cooldown``, the trial (the others keep failing at once until it succeeds)."""
        if self._open_until == 0.0:
            return True
        with self._lock:
            now = time.monotonic()
            if self._open_until != 0.0 and now < self._open_until:
                return False
            if self._open_until != 0.0:
                self._open_until = now + self.cooldown
            return True

    def failed(self, error: BaseException) -> None:
        with self._lock:
            was_closed = self._open_until == 0.0
            self._open_until = time.monotonic() + self.cooldown
        if was_closed:
            logger.error("%s cannot be reached (%s: %s); calls to it fail at once, with one "
                         "trial every %g s, until it answers", self.name, type(error).__name__,
                         error, self.cooldown)

    def succeeded(self) -> None:
        if self._open_until == 0.0:
            return
        with self._lock:
            self._open_until = 0.0
        logger.warning("%s answers again", self.name)
