"""Work that a worker does later and retries with backoff: a row per piece of work, written in
the transaction that calls for it, then claimed, attempted and settled (docs/architecture.md,
"Background work"). Outbound emails and calendar writes are such rows; webhook deliveries follow
the same shape with the specification's schedules and a state machine of their own.

The life of a row:

- ``claim``: one UPDATE whose conditions (due, pending, no live lease) are the claim, so of two
  workers one wins; it counts the attempt and sets a lease after which the sweeper may take the
  row back from a worker that died.
- ``settle``: one UPDATE conditioned on the claim's token, so a result that arrives after its
  lease was taken back is dropped rather than overwriting a newer attempt's.
- ``due``: what the beat sweeper enqueues, the due rows that no task is known to carry (a retry
  whose backoff ended, a message the broker lost, a claim whose worker died).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, ClassVar

from django.db import models
from django.db.models import F, Q
from django.utils import timezone


@dataclass(frozen=True)
class Backoff:
    """The delays after each failed attempt; the attempt after the last delay is the last one."""

    delays: tuple[timedelta, ...]

    @property
    def max_attempts(self) -> int:
        return len(self.delays) + 1

    def next_attempt_at(self, attempts: int, now: datetime) -> datetime | None:
        """When to try again after ``attempts`` failed ones; None when the schedule is spent."""
        if attempts < 1 or attempts > len(self.delays):
            return None
        return now + self.delays[attempts - 1]


_MINUTE, _HOUR = timedelta(minutes=1), timedelta(hours=1)
# The specification's v1 webhook schedule (1 min … 24 h, seven attempts over about 39 hours),
# which calendar writes share: a rep's calendar may be down for a night.
V1_SCHEDULE = Backoff((_MINUTE, 5 * _MINUTE, 30 * _MINUTE, 2 * _HOUR, 12 * _HOUR, 24 * _HOUR))
# Email: five attempts over about 2.5 hours; an invitation days late is worse than none.
EMAIL_SCHEDULE = Backoff(V1_SCHEDULE.delays[:4])


class RetriedWork(models.Model):
    """The bookkeeping columns of a row of retried work. A concrete model has a ``status`` field
    whose ``PENDING`` value (a class attribute) marks work to do, now or at ``next_attempt_at``."""

    PENDING: ClassVar[str]

    attempts = models.PositiveIntegerField(default=0)  # of the current schedule
    last_error = models.CharField(max_length=500, blank=True)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    enqueued_at = models.DateTimeField(null=True, blank=True)
    # A worker's claim on the row while it works; an expired lease may be taken back.
    claim_token = models.UUIDField(null=True, blank=True, editable=False)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        abstract = True

    @classmethod
    def claim(cls, pk: Any, *, now: datetime, lease: timedelta) -> uuid.UUID | None:
        """Takes the due row ``pk`` for this worker alone, counting the attempt; the token that
        settles it, or None when it is not due, taken, settled or gone."""
        token = uuid.uuid4()
        taken = (cls._default_manager
                 .filter(_free(now), pk=pk, status=cls.PENDING, next_attempt_at__lte=now)
                 .update(claim_token=token, lease_expires_at=now + lease, enqueued_at=None,
                         attempts=F("attempts") + 1, updated_at=now))
        return token if taken == 1 else None

    @classmethod
    def settle(cls, pk: Any, token: uuid.UUID, changes: Mapping[str, Any]) -> bool:
        """Records an attempt's outcome, releasing the claim; False when the claim is gone."""
        released = {"claim_token": None, "lease_expires_at": None, "enqueued_at": None, **changes}
        return cls._default_manager.filter(pk=pk, claim_token=token).update(**released) == 1

    @classmethod
    def due(cls, *, now: datetime, requeue_after: timedelta) -> models.QuerySet:
        """The due pending rows that no task is known to carry, the longest waiting first."""
        return (cls._default_manager
                .filter(_free(now), status=cls.PENDING, next_attempt_at__lte=now)
                .exclude(enqueued_at__gt=now - requeue_after).order_by("next_attempt_at"))

    @staticmethod
    def failure(schedule: Backoff, *, attempts: int, now: datetime, failed: str,
                retry: bool = True) -> dict[str, Any]:
        """The changes after a failed attempt: wait for the next step of ``schedule``, or end in
        ``failed`` when it is spent or the failure is not worth retrying."""
        later = schedule.next_attempt_at(attempts, now) if retry else None
        return {"next_attempt_at": later} if later else {"status": failed, "next_attempt_at": None}


def _free(now: datetime) -> Q:
    return Q(lease_expires_at__isnull=True) | Q(lease_expires_at__lt=now)
