"""The baseline task of the webhooks benchmark (tests/benchmarks/test_webhooks_bench.py): a Celery
task that does nothing, drained by the very workers that deliver webhooks (they import this
module with ``-I``), so that both drains run with the same pool, concurrency, processes and
prefetch."""

from celery import shared_task


@shared_task(name="bench.noop", ignore_result=True, acks_late=True)
def noop(marker: str) -> None:
    """Nothing: the cost of a task is then Celery's and the broker's alone."""
