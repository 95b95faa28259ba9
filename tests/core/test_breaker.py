"""The breaker in front of the servers the service depends on (core/breaker.py): after a failure
calls fail at once, until a trial, a caller's or a probe's, succeeds."""

from __future__ import annotations

import threading
import time

from core.breaker import Breaker

COOLDOWN = 0.05


def _until(check, timeout: float = 2.0) -> bool:
    deadline = time.monotonic() + timeout
    while not check() and time.monotonic() < deadline:
        time.sleep(0.01)
    return check()


def test_a_closed_breaker_lets_every_call_through():
    breaker = Breaker("the server", cooldown=COOLDOWN)
    assert breaker.closed and all(breaker.allows() for _ in range(3))


def test_after_a_failure_calls_fail_at_once_then_one_caller_tries(caplog):
    breaker = Breaker("the server", cooldown=COOLDOWN)
    breaker.failed(ConnectionError("refused"))
    assert not breaker.closed and not breaker.allows()
    assert "the server cannot be reached (ConnectionError: refused)" in caplog.text
    time.sleep(COOLDOWN * 1.5)
    assert breaker.allows()  # the trial
    assert not breaker.allows()  # the others wait for its outcome
    breaker.failed(ConnectionError("still refused"))
    assert not breaker.allows()
    time.sleep(COOLDOWN * 1.5)
    assert breaker.allows()
    breaker.succeeded()
    assert breaker.closed and breaker.allows() and breaker.allows()
    assert "the server answers again" in caplog.text


def test_with_a_probe_no_caller_waits_for_a_trial():
    breaker = Breaker("the server", cooldown=COOLDOWN)
    back = threading.Event()
    tries = []

    def probe() -> None:
        tries.append(time.monotonic())
        if not back.is_set():
            raise ConnectionError("refused")

    breaker.failed(ConnectionError("refused"), probe=probe)
    assert _until(lambda: len(tries) >= 2)  # the probe tries on its own, every cooldown
    assert not any(breaker.allows() for _ in range(20))
    back.set()
    assert _until(lambda: breaker.closed)
    assert breaker.allows()
