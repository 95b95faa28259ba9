"""The Celery application: webhook delivery, document indexing and the periodic sweepers.

Broker: Redis when ``REDIS_URL`` is set, otherwise kombu's filesystem transport under ``var/``,
so that the embedded default runs a real worker without any server.
"""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("salesagent")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
