"""Bulk actions on leads: set the status or the owner, add or remove a tag, or delete, on the
leads the staff chose in the list (docs/dashboard.md, "Bulk actions").

Each lead goes through the same service as one edited alone (``lead_update``, or the erasure of
the privacy app for a delete, reached through ``core.privacy``), so every event fires as for the
API, one lead at a time. A selection of at most ``SYNC_LIMIT`` leads is changed in the request
(one transaction per lead); a larger one, "all the leads matching the filter" of a large list,
is a ``LeadBulkJob`` that a Celery task works through in batches of ``BATCH`` (one transaction
per batch, holding the job's row), recording its progress for the page that polls it. A job
walks the matching leads newest first by their key, so a task run again (a worker that died,
the sweeper) goes on after the last lead it finished; the actions are idempotent besides.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.db import connection, transaction
from django.utils import timezone

from core import broker, privacy
from core.errors import FieldError, InvalidRequest, ServiceError
from tenants.models import Tenant, User

from . import selectors, validation
from .models import BulkAction, JobStatus, Lead, LeadBulkJob, LeadStatus
from .services import lead_update

SYNC_LIMIT = 500  # leads changed in the request; a larger selection goes to a Celery task
BATCH = 100  # leads per transaction of a job
DELETE_BATCH = 20  # an erasure does more than an update: smaller batches, shorter locks
# A job whose task has not moved it for this long (a lost message, a worker that died) is
# enqueued again by the sweeper.
STALE_AFTER = timedelta(minutes=5)
FILTER_KEYS = ("q", "status", "source")


@dataclass
class Outcome:
    """What a bulk action did: leads changed, leads that already were so, leads refused (with
    the first refusal's reason)."""

    changed: int = 0
    unchanged: int = 0
    failed: int = 0
    first_error: str = ""

    @property
    def processed(self) -> int:
        return self.changed + self.unchanged + self.failed


def bulk_value_clean(*, tenant: Tenant, action: str, value: Any) -> str:
    """The action's value in the form the leads keep it: a stored status, a user id ("" to
    leave leads unassigned), a tag; "" for a delete. ``InvalidRequest`` naming ``value``
    otherwise."""
    text = "" if value is None else str(value).strip()
    if action == BulkAction.STATUS:
        if text not in LeadStatus.values:
            raise _refused("invalid_enum", "Choose one of the listed statuses.")
        return text
    if action == BulkAction.OWNER:
        if not text:
            return ""
        try:
            user_id = uuid.UUID(text)
        except ValueError:
            raise _refused("invalid_enum", "Choose a member of the team.") from None
        if not User.objects.filter(pk=user_id, tenant=tenant, is_active=True).exists():
            raise _refused("invalid_enum", "Choose a member of the team.")
        return str(user_id)
    if action in (BulkAction.TAG_ADD, BulkAction.TAG_REMOVE):
        if not text:
            raise _refused("required", "Type the tag.")
        try:
            return validation.clean_tags([text])[0]
        except validation.Refused as refused:
            raise _refused(refused.code, refused.message) from None
    if action == BulkAction.DELETE:
        return ""
    raise _refused("invalid_enum", "Choose one of the listed actions.", field="action")


def _refused(code: str, message: str, field: str = "value") -> InvalidRequest:
    return InvalidRequest(message, details=[FieldError(field, code, message)])


def _apply(lead: Lead, *, action: str, value: str, requested_by: str) -> bool:
    """One lead through its service; False when it already was as asked (nothing written, no
    event). Raises the service's refusal."""
    if action == BulkAction.DELETE:
        privacy.erase_lead(lead, requested_by=requested_by)
        return True
    if action == BulkAction.STATUS:
        if lead.status == value:
            return False
        label = LeadStatus(value).label
        lead_update(lead=lead, changes={"status": value},
                    qualification_reason=f"Set to {label} by {requested_by} in the dashboard")
        return True
    if action == BulkAction.OWNER:
        owner = uuid.UUID(value) if value else None
        if lead.assigned_to_id == owner:
            return False
        lead_update(lead=lead, changes={"assigned_to_id": owner})
        return True
    tags = list(lead.tags or [])
    if action == BulkAction.TAG_ADD:
        if any(tag.lower() == value.lower() for tag in tags):
            return False
        lead_update(lead=lead, changes={"tags": [*tags, value]})
        return True
    kept = [tag for tag in tags if tag.lower() != value.lower()]  # BulkAction.TAG_REMOVE
    if kept == tags:
        return False
    lead_update(lead=lead, changes={"tags": kept})
    return True


def bulk_apply(*, leads: list[Lead], action: str, value: str, requested_by: str,
               outcome: Outcome | None = None) -> Outcome:
    """``action`` on each of ``leads`` (already scoped to the caller's tenant and mode), each in
    its own transaction (a savepoint inside a job's batch): a lead refused (a 51st tag) is
    counted and the others go on."""
    outcome = outcome or Outcome()
    for lead in leads:
        try:
            changed = _apply(lead, action=action, value=value, requested_by=requested_by)
        except ServiceError as refused:
            outcome.failed += 1
            if not outcome.first_error:
                details = "; ".join(d.message for d in refused.details)
                outcome.first_error = (details or refused.message)[:300]
            continue
        if changed:
            outcome.changed += 1
        else:
            outcome.unchanged += 1
    return outcome


def bulk_apply_now(*, tenant: Tenant, livemode: bool, action: str, value: str,
                   requested_by: str, lead_ids: list[uuid.UUID] | None = None,
                   filters: dict[str, str] | None = None) -> Outcome:
    """The action in the request: on ``lead_ids`` (the checked rows; others' ids are left out),
    or on every lead matching ``filters`` (the list's ``q``, ``status`` and ``source``). The
    caller keeps the selection under ``SYNC_LIMIT``."""
    if lead_ids is not None:
        leads = selectors.leads_of(tenant=tenant, livemode=livemode, lead_ids=lead_ids)
        return bulk_apply(leads=leads, action=action, value=value, requested_by=requested_by)
    outcome = Outcome()
    after = None
    while batch := selectors.lead_batch_matching(tenant=tenant, livemode=livemode,
                                                 **_filter_args(filters or {}), after=after,
                                                 limit=BATCH):
        bulk_apply(leads=batch, action=action, value=value, requested_by=requested_by,
                   outcome=outcome)
        after = (batch[-1].created_at, batch[-1].pk)
    return outcome


def _filter_args(filters: dict[str, str]) -> dict[str, Any]:
    return {"q": filters.get("q") or "", "stored_status": filters.get("status") or None,
            "source": filters.get("source") or None}


# --- jobs -----------------------------------------------------------------------------------

def bulk_job_create(*, tenant: Tenant, livemode: bool, user: User | None, requested_by: str,
                    action: str, value: str, filters: dict[str, str], total: int) -> LeadBulkJob:
    """Accepts the action on every lead matching ``filters`` (about ``total`` of them, the
    list's count); the Celery task ``leads.bulk_job`` does it after the commit."""
    now = timezone.now()
    with transaction.atomic():
        job = LeadBulkJob.objects.create(
            tenant=tenant, livemode=livemode, user=user, requested_by=requested_by[:200],
            action=action, value=value, total=total, created_at=now, updated_at=now,
            filters={key: filters[key] for key in FILTER_KEYS if filters.get(key)})
        transaction.on_commit(lambda: _enqueue(job.pk))
    return job


def _enqueue(job_id: uuid.UUID) -> None:
    from .tasks import bulk_job

    # An unreachable broker holds nobody (core.broker): the sweeper enqueues the job later.
    broker.publish(bulk_job, [str(job_id)])


def bulk_job_run(*, job_id: Any) -> LeadBulkJob | None:
    """Works through a queued or running job, batch by batch, until no lead is left; None when
    the job is finished, unknown, or held by another worker."""
    while True:
        with transaction.atomic():
            job = job_claim(LeadBulkJob, job_id)
            if job is None:
                return None
            size = DELETE_BATCH if job.action == BulkAction.DELETE else BATCH
            after = (job.after_created_at, job.after_id) if job.after_id else None
            batch = selectors.lead_batch_matching(tenant=job.tenant, livemode=job.livemode,
                                                  **_filter_args(job.filters), after=after,
                                                  limit=size)
            outcome = bulk_apply(leads=batch, action=job.action, value=job.value,
                                 requested_by=job.requested_by)
            job.changed += outcome.changed
            job.unchanged += outcome.unchanged
            job.failed += outcome.failed
            job.processed += outcome.processed
            job.error = job.error or outcome.first_error
            if batch:
                job.after_created_at, job.after_id = batch[-1].created_at, batch[-1].pk
            job.updated_at = timezone.now()
            job.status = JobStatus.RUNNING
            if len(batch) < size:
                job.status, job.finished_at, job.filters = JobStatus.DONE, job.updated_at, {}
            job.save()
        if job.status == JobStatus.DONE:
            return job


def job_claim(model: type, job_id: Any) -> Any:
    """The row of a job (a ``LeadBulkJob`` or a ``LeadImport``), locked for this batch, if it
    still has work; None when it is done or another worker holds it (PostgreSQL: ``SKIP
    LOCKED``)."""
    rows = model.objects.select_related("tenant").filter(
        pk=job_id, status__in=[JobStatus.QUEUED, JobStatus.RUNNING])
    if connection.features.has_select_for_update_skip_locked:
        rows = rows.select_for_update(skip_locked=True, of=("self",))
    return rows.first()


def bulk_job_fail(*, job_id: Any, reason: str) -> None:
    """The task met an error it cannot get past: the job ends, saying why (it can be asked for
    again; the leads it reached stay changed)."""
    now = timezone.now()
    LeadBulkJob.objects.filter(pk=job_id, status__in=[JobStatus.QUEUED, JobStatus.RUNNING]).update(
        status=JobStatus.FAILED, error=reason[:300], filters={}, updated_at=now, finished_at=now)


def bulk_jobs_sweep(*, now: Any = None) -> int:
    """Enqueues again the jobs that no task has moved for ``STALE_AFTER``."""
    now = now or timezone.now()
    stale = list(LeadBulkJob.objects.filter(
        status__in=[JobStatus.QUEUED, JobStatus.RUNNING], updated_at__lt=now - STALE_AFTER,
    ).values_list("pk", flat=True)[:100])
    for job_id in stale:
        _enqueue(job_id)
    return len(stale)


