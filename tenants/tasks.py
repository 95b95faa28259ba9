"""Background work of the tenants' people: the presence sweeper (beat)."""

from celery import shared_task

from .presence import presence_sweep as sweep


@shared_task(name="tenants.presence_sweep", ignore_result=True)
def presence_sweep() -> int:
    """Beat, every 15 seconds: connections of processes that died expire, and whoever has none
    left is offline. Safe to run twice at once."""
    return sweep()
