"""Background work of privacy: an accepted erasure, the sweeper of erasures that wait (a lost
task, a calendar to retry), and the tenants' retention (docs/privacy.md)."""

from celery import shared_task

from .services import erasure_run, erasures_sweep, retention_sweep


@shared_task(name="privacy.erase", ignore_result=True)
def erase(erasure_id: str) -> str | None:
    """Runs one erasure; its only argument is the erasure's id, so no broker message ever holds
    the person. Idempotent: a finished erasure is left alone."""
    erasure = erasure_run(erasure_id=erasure_id)
    return erasure.status if erasure else None


@shared_task(name="privacy.sweep", ignore_result=True)
def sweep() -> int:
    return erasures_sweep()


@shared_task(name="privacy.retention", ignore_result=True, soft_time_limit=1200, time_limit=1260)
def retention() -> int:
    return retention_sweep()
