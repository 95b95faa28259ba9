"""The backoff schedules of retried work (core.work): when each failed attempt tries again, and
that the last attempt is the last."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from core.work import EMAIL_SCHEDULE, V1_SCHEDULE

NOW = datetime(2026, 11, 24, 9, 0, tzinfo=UTC)


@pytest.mark.parametrize(("attempts", "wait"), [
    (1, timedelta(minutes=1)), (2, timedelta(minutes=5)), (3, timedelta(minutes=30)),
    (4, timedelta(hours=2)), (5, timedelta(hours=12)), (6, timedelta(hours=24)), (7, None),
])
def test_the_v1_schedule_is_the_specifications(attempts, wait):
    expected = NOW + wait if wait else None
    assert V1_SCHEDULE.next_attempt_at(attempts, NOW) == expected
    assert V1_SCHEDULE.max_attempts == 7


def test_email_gives_up_after_five_attempts_and_never_before_one():
    assert EMAIL_SCHEDULE.max_attempts == 5
    assert EMAIL_SCHEDULE.next_attempt_at(4, NOW) == NOW + timedelta(hours=2)
    assert EMAIL_SCHEDULE.next_attempt_at(5, NOW) is None
    assert EMAIL_SCHEDULE.next_attempt_at(0, NOW) is None
