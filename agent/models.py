"""A tenant's saved test sets: questions its own agent is tried on before it meets visitors
(docs/agent.md, "Testing your agent"). The agent keeps no other table: the turns it decides are
``conversations``'."""

from __future__ import annotations

import uuid
from datetime import timedelta

from django.db import models
from django.utils import timezone

# A run stops asking after this long (the questions left are "not asked"); one queued longer ago
# than ``RUN_STALE`` is taken for lost (a worker that died): the set may run again.
RUN_SECONDS = 25 * 60
RUN_STALE = timedelta(seconds=RUN_SECONDS + 5 * 60)


class AgentTestSet(models.Model):
    """Questions with what each should produce, and the last run's results.

    ``questions`` is a list of ``{"question": str, "expect_fact": str, "expect_decision": str}``
    (the two expectations ``""`` when not given; ``expect_fact`` holds alternatives separated by
    ``|``). A run under way has a ``run_token`` (the task that holds the same one runs it; a new
    run or an edit replaces it, and the old task stops at its next question), ``run_queued_at``
    and ``run_done``, the questions answered so far. ``last_run`` sums up the last finished
    run (when, with which provider, how many passed; ``stale`` once the questions changed since)
    and ``last_results`` holds each question's answer, decisions, passages and verdict
    (``agent.services.agent_test_set_run``): lists read the summary and ``question_count``
    without loading the results or the questions."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    # No index of its own: the composite index below starts with the tenant.
    tenant = models.ForeignKey("tenants.Tenant", on_delete=models.CASCADE, db_index=False,
                               related_name="agent_test_sets")
    livemode = models.BooleanField()
    name = models.CharField(max_length=100)
    questions = models.JSONField(default=list)
    question_count = models.PositiveSmallIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)
    run_token = models.UUIDField(null=True, blank=True)
    run_queued_at = models.DateTimeField(null=True, blank=True)
    run_done = models.PositiveSmallIntegerField(default=0)
    last_run = models.JSONField(null=True, blank=True)
    last_results = models.JSONField(default=list, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["tenant", "livemode", "created_at", "id"],
                                name="agent_testset_created")]

    def __str__(self) -> str:
        return self.name

    @property
    def running(self) -> bool:
        """Whether a run is queued or under way (and not lost: ``RUN_STALE``)."""
        return (self.run_token is not None and self.run_queued_at is not None
                and self.run_queued_at > timezone.now() - RUN_STALE)

    @property
    def last_run_current(self) -> bool:
        """Whether there is a last run, of the questions (and expectations) the set holds now."""
        return bool(self.last_run) and not self.last_run.get("stale")
