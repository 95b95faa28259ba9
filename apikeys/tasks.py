"""Periodic work of the apikeys app."""

from celery import shared_task

from .services import idempotency_keys_purge


@shared_task(name="apikeys.tasks.idempotency_keys_purge", ignore_result=True)
def idempotency_keys_purge_task() -> int:
    """Hourly (CELERY_BEAT_SCHEDULE): drops idempotency records past their 24 hours. Expired
    records are already ignored; this only keeps the table small."""
    return idempotency_keys_purge()
