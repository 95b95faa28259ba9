"""Thin Celery tasks of the webhooks: they take ids and call the services (idempotent: running
one twice sends nothing twice, because a delivery is claimed before it is sent)."""

from uuid import UUID

from celery import shared_task

from .services import deliveries_catch_up, deliveries_sweep, delivery_attempt


@shared_task(name="webhooks.deliver", ignore_result=True, acks_late=True)
def deliver(delivery_id: str) -> bool:
    """One attempt of a due delivery; nothing when it is not due or another worker has it."""
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
