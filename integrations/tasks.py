"""Thin Celery tasks of the integrations: they take ids and call the services (idempotent: a
sync is claimed before it is sent, and an upsert sent twice updates the same CRM record)."""

from uuid import UUID

from celery import shared_task

from .services import (
    crm_backfill_page,
    crm_poll,
    crm_polls_enqueue,
    crm_sync_attempt,
    crm_syncs_sweep,
)


@shared_task(name="integrations.sync", ignore_result=True, acks_late=True,
             reject_on_worker_lost=True)  # the claim makes a second run wait its lease out
def sync(sync_id: str) -> bool:
    """One attempt at a due CRM sync; nothing when it is not due or taken."""
    return crm_sync_attempt(sync_id=UUID(sync_id)) is not None


@shared_task(name="integrations.sweep", ignore_result=True)
def sweep() -> int:
    """Beat, every few seconds: enqueue the due CRM syncs that no task is carrying."""
    return crm_syncs_sweep()


@shared_task(name="integrations.polls", ignore_result=True)
def polls() -> int:
    """Beat, every minute: one ``integrations.poll`` per connected CRM (and stalled backfills)."""
    return crm_polls_enqueue()


@shared_task(name="integrations.poll", ignore_result=True, acks_late=True)
def poll(connection_id: str) -> int:
    """Reads what changed in the CRM since the connection's cursor; the leads follow."""
    return crm_poll(connection_id=UUID(connection_id))


@shared_task(name="integrations.backfill", ignore_result=True, acks_late=True,
             reject_on_worker_lost=True)  # a page already sent is skipped
def backfill(connection_id: str) -> None:
    """The backfill of the existing leads, page by page from its stored cursor (a redelivered
    message or the beat's resume goes on where it stood)."""
    while crm_backfill_page(connection_id=UUID(connection_id)):
        pass
