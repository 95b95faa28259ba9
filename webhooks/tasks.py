"""Thin Celery tasks of the webhooks: they take ids and call the services (idempotent: running
one twice sends nothing twice, because a delivery is claimed before it is sent)."""

from uuid import UUID

from celery import shared_task

from .services import deliveries_attempt, deliveries_catch_up, deliveries_sweep, delivery_attempt


@shared_task(name="webhooks.deliver_many", ignore_result=True, acks_late=True,
             reject_on_worker_lost=True)
def deliver_many(delivery_ids: list[str]) -> int:
    """One attempt of each due delivery of a batch (deliveries to one receiver, sent in order);
    nothing for those not due or that another worker has. Returns how many were attempted."""
    return len(deliveries_attempt(delivery_ids=[UUID(pk) for pk in delivery_ids]))


@shared_task(name="webhooks.deliver", ignore_result=True, acks_late=True,
             reject_on_worker_lost=True)
def deliver(delivery_id: str) -> bool:
    """One attempt of a due delivery (the message of one delivery, as versions before batches
    enqueued it: kept so that those still on the broker at an upgrade are delivered)."""
    return delivery_attempt(delivery_id=UUID(delivery_id)) is not None


@shared_task(name="webhooks.sweep", ignore_result=True)
def sweep() -> int:
    """Beat, every few seconds: re-enqueue due and stranded deliveries."""
    result = deliveries_sweep()
    return result.enqueued + result.recovered


@shared_task(name="webhooks.catch_up", ignore_result=True)
def catch_up() -> int:
    """Beat, every minute: deliveries for recent events whose fan-out hook never ran."""
    return deliveries_catch_up()
