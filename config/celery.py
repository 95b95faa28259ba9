"""The Celery application: webhook delivery, document indexing and the periodic sweepers.

Broker: Redis when ``REDIS_URL`` is set, otherwise a SQLite file under ``var/celery/``
(config/broker.py), so that the embedded default runs a real worker without any server.
"""

import os

from celery import Celery
from celery.signals import after_setup_logger, after_setup_task_logger, task_postrun, task_prerun, worker_init

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
def _redact_log_lines(logger, **kwargs) -> None:
    """A worker's and beat's lines mask email addresses as the web's do: Celery sets up its own
    handlers in place of the settings' ``LOGGING`` (config/logs.py)."""
    from config.logs import redact_handlers

    redact_handlers(logger)


# Task run times for /metrics (core/metrics.py): started by task id, in this worker process.
_task_started: dict[str, float] = {}


@task_prerun.connect
def _task_started_at(task_id=None, **kwargs) -> None:
    import time

    _task_started[task_id] = time.perf_counter()


@task_postrun.connect
def _task_finished(task_id=None, task=None, state=None, **kwargs) -> None:
    import time

    from core.metrics import CELERY_LAST_TASK, CELERY_TASK_SECONDS

    started = _task_started.pop(task_id, None)
    if started is None or task is None:
        return
    CELERY_TASK_SECONDS.labels(task.name, (state or "unknown").lower()).observe(
        time.perf_counter() - started)
    CELERY_LAST_TASK.set(time.time())
