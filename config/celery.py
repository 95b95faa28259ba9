"""The Celery application: webhook delivery, document indexing and the periodic sweepers.

Broker: Redis when ``REDIS_URL`` is set, otherwise a SQLite file under ``var/celery/``
(config/broker.py), so that the embedded default runs a real worker without any server.
"""

import os

from celery import Celery
from celery.signals import (
    after_setup_logger,
    after_setup_task_logger,
    before_task_publish,
    task_postrun,
    task_prerun,
    worker_init,
    worker_process_init,
)

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("salesagent")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@worker_init.connect
def _keep_database_connections(**kwargs) -> None:
    """Workers keep their database connections between tasks (``WORKER_DB_CONN_MAX_AGE``).

    Web processes close theirs after each request (ASGI threads come and go); a worker's
    processes and pool threads live long, and opening a connection for every webhook attempt
    would cost more than the attempt's own queries. Django's Celery fixup still closes a
    connection that is older than this or broken, between tasks.
    """
    from django.conf import settings

    if settings.DATABASES["default"].get("OPTIONS", {}).get("pool"):
        return  # the pool keeps connections already; Django refuses CONN_MAX_AGE beside it
    settings.DATABASES["default"]["CONN_MAX_AGE"] = settings.WORKER_DB_CONN_MAX_AGE


@after_setup_logger.connect
@after_setup_task_logger.connect
def _format_log_lines(logger, **kwargs) -> None:
    """A worker's and beat's lines are written as the web's are (``LOG_FORMAT``, the context's
    fields, email addresses masked): Celery sets up its own handlers in place of the settings'
    ``LOGGING`` (config/logs.py)."""
    from django.conf import settings

    from config.logs import use_formats

    use_formats(logger, settings.LOG_FORMAT)


# The request's log context travels with the tasks it queues, in the message's headers.
CONTEXT_HEADER = "salesagent_log"


@before_task_publish.connect
def _send_log_context(headers=None, **kwargs) -> None:
    from config import logs

    if headers is None:
        return
    context = {name: value for name in ("request_id", "tenant")
               if (value := logs.current(name))}
    if context:
        headers[CONTEXT_HEADER] = context


@task_prerun.connect
def _open_task_scope(task_id=None, task=None, **kwargs) -> None:
    """Every line of a task carries the id of the request that queued it (a sweeper's tasks
    have none), that request's tenant, the surface ``task`` and the task's name as its route."""
    from config import logs

    if task is None:
        return
    if task.request.is_eager and logs.current("request_id"):
        return  # run in the caller's scope (CELERY_TASK_ALWAYS_EAGER)
    sent = getattr(task.request, CONTEXT_HEADER, None) or {}
    if not isinstance(sent, dict):
        sent = {}
    task.request.log_scope_token = logs.open_scope(
        request_id=str(sent.get("request_id") or ""), tenant=str(sent.get("tenant") or ""),
        surface="task", route=task.name)


@task_postrun.connect
def _close_task_scope(task=None, **kwargs) -> None:
    from config import logs

    token = getattr(task.request, "log_scope_token", None) if task is not None else None
    if token is not None:
        task.request.log_scope_token = None
        logs.close_scope(token)


@worker_process_init.connect
def _trace_worker_process(**kwargs) -> None:
    """Each worker process exports its own spans (docs/operations.md, "Traces"): a prefork
    child starts tracing after the fork, where the exporter's thread must run."""
    from config.tracing import start_tracing

    start_tracing("worker")


@worker_init.connect
def _trace_worker(sender=None, **kwargs) -> None:
    """A worker whose pool runs tasks in its own process (solo, threads) starts it here."""
    pool = getattr(sender, "pool_cls", None)
    name = pool if isinstance(pool, str) else getattr(pool, "__module__", "")
    if "prefork" not in str(name):
        from config.tracing import start_tracing

        start_tracing("worker")


# Task run times for /metrics (core/metrics.py), kept on the task's own request (as the log
# scope's token is): a task that retries itself eagerly runs again with the same id.
@task_prerun.connect
def _task_started_at(task=None, **kwargs) -> None:
    import time

    if task is not None:
        task.request.metrics_started = time.perf_counter()


@task_postrun.connect
def _task_finished(task=None, state=None, **kwargs) -> None:
    import time

    from core.metrics import CELERY_LAST_TASK, CELERY_TASK_SECONDS

    started = getattr(task.request, "metrics_started", None) if task is not None else None
    if started is None:
        return
    task.request.metrics_started = None
    CELERY_TASK_SECONDS.labels(task.name, (state or "unknown").lower()).observe(
        time.perf_counter() - started)
    CELERY_LAST_TASK.set(time.time())
