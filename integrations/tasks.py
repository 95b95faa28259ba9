"""Thin Celery tasks of the integrations: they take ids and call the services (idempotent: a
sync is claimed before it is sent, and an upsert sent twice updates the same CRM record)."""

from uuid import UUID

from celery import shared_task

from .services import crm_sync_attempt, crm_syncs_sweep


@shared_task(name="integrations.sync", ignore_result=True, acks_late=True)
def sync(sync_id: str) -> bool:
    """One attempt at a due CRM sync; nothing when it is not due or taken."""
    return crm_sync_attempt(sync_id=UUID(sync_id)) is not None


@shared_task(name="integrations.sweep", ignore_result=True)
def sweep() -> int:
    """Beat, every few seconds: enqueue the due CRM syncs that no task is carrying."""
    return crm_syncs_sweep()
