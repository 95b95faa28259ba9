"""End to end on the production stack: a real ``celery -A config worker --beat`` on Redis, on the
same PostgreSQL test database, delivers a committed event to the receiver at once, and the beat
sweeper sends the retry when it falls due.

It needs Redis and PostgreSQL (the worker must see the test database): skipped without them.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from tests.factories import make_lead, make_tenant
from tests.fakes.webhook_receiver import Answer
from tests.live import ROOT, environment
from webhooks import services
from webhooks.models import Delivery, DeliveryAttempt

from .conftest import SECRET, envelope, v1_signature_ok

pytestmark = [
    pytest.mark.live,  # a Celery worker
    pytest.mark.skipif(not os.environ.get("REDIS_URL"),
                       reason="needs REDIS_URL: the worker's broker is Redis"),
    pytest.mark.skipif(not os.environ.get("DATABASE_URL", "").startswith("postgres"),
                       reason="needs a PostgreSQL DATABASE_URL: the worker must see the test database"),
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("local_targets"),
]


def _test_database_url() -> str:
    """The DATABASE_URL of pytest-django's test database (``test_<name>``), for the worker."""
    base = os.environ["DATABASE_URL"].rsplit("/", 1)[0]
    return f"{base}/{connection.settings_dict['NAME']}"


def _wait(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture
def worker(tmp_path):
    env = environment({
        "DATABASE_URL": _test_database_url(),
        "WEBHOOKS_ALLOW_HTTP": "1",
        "WEBHOOKS_ALLOW_PRIVATE_TARGETS": "1",
        "WEBHOOKS_TIMEOUT_SECONDS": "5",
    })
    log = open(tmp_path / "worker.log", "w+")  # noqa: SIM115 -- read after the worker stops
    proc = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "config", "worker", "--beat",
         "-s", str(tmp_path / "beat-schedule"), "--loglevel=INFO", "--concurrency=2",
         "-n", f"webhooks-e2e-{os.getpid()}@%h", "--without-gossip", "--without-mingle"],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        log.seek(0)
        output = log.read()
        log.close()
        if proc.returncode not in (0, -signal.SIGTERM):
            print(output[-4000:])


def test_a_real_worker_delivers_at_once_and_the_sweeper_retries(receiver, worker):
    kit = make_tenant("E2E Inc")
    receiver.answer(Answer(status=503))  # the first attempt fails, the retry succeeds
    services.subscription_create(tenant=kit.tenant, livemode=True, url=receiver.url(),
                                 events=["lead.created"], secret=SECRET)

    committed = time.time()
    make_lead(kit, email="e2e@example.com")  # autocommit: the fan-out runs on this commit
    (first,) = receiver.wait_for(1, timeout=120)  # a loaded machine starts a worker slowly
    assert first.at - committed < 30  # the worker may still be starting; the bench measures
    delivery = Delivery.objects.get()
    row = _wait(lambda: Delivery.objects.filter(pk=delivery.pk, status="waiting_retry").first(),
                20, "the failed first attempt to be recorded")
    assert row.attempt_count == 1

    # Time moves on: the retry is due now, and only beat's sweeper can send it.
    Delivery.objects.filter(pk=delivery.pk).update(next_attempt_at=timezone.now()
                                                   - timedelta(seconds=1))
    receiver.wait_for(2, timeout=30)
    _wait(lambda: Delivery.objects.filter(pk=delivery.pk, status="delivered").exists(),
          20, "the retry to be recorded")

    first, second = receiver.received[:2]
    assert envelope(first)["id"] == envelope(second)["id"]
    assert first.headers["x-service-delivery"] != second.headers["x-service-delivery"]
    assert v1_signature_ok(first) and v1_signature_ok(second)
    attempts = list(DeliveryAttempt.objects.filter(delivery=delivery).order_by("number"))
    assert [(a.number, a.status_code, a.success) for a in attempts] == [(1, 503, False),
                                                                        (2, 200, True)]

    # Warm now: a second event reaches the receiver at once, by the task its commit enqueued
    # (the sweeper would not enqueue it again for 60 s). The bench measures how fast exactly.
    committed = time.time()
    make_lead(kit, email="fast@example.com")
    third = receiver.wait_for(3, timeout=10)[2]
    assert third.at - committed < 3.0
    assert len(receiver.received) == 3
