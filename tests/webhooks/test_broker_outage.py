"""Webhook deliveries while the broker is gone (docs/security.md, "Under faults"): the project's
Celery app publishes through a TCP proxy (tests/fakes/tcp_proxy.py) that refuses connections,
or accepts them and never answers. A write is held seconds at most, once; its deliveries wait
for the sweeper's next pass, which enqueues them."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from django.utils import timezone

from tests.factories import make_lead
from tests.fakes.tcp_proxy import BLACKHOLED, REFUSED
from webhooks import services
from webhooks.models import Delivery
from webhooks.services import deliveries_sweep, subscription_create

from .conftest import SECRET

pytestmark = pytest.mark.usefixtures("local_targets")


def _subscribe(kit, receiver):
    subscription_create(tenant=kit.tenant, livemode=True, url=receiver.url(),
                        events=["lead.created"], secret=SECRET)


def test_a_broker_that_never_answers_holds_one_write_seconds_and_the_next_not_at_all(
        api, kit, receiver, broken_broker, django_capture_on_commit_callbacks):
    _subscribe(kit, receiver)
    broken_broker.outage(BLACKHOLED)
    took = []
    for n in range(3):
        started = time.monotonic()
        with django_capture_on_commit_callbacks(execute=True):
            r = api.post("/api/v1/leads", headers=kit.auth("write"),
                         json={"email": f"held{n}@example.com", "name": "Held"})
        took.append(time.monotonic() - started)
        assert r.status_code == 201, r.text
    # Two socket timeouts (a publish and its one retry) for the write that finds out; then the
    # breaker gives up at once.
    assert took[0] < 6 and max(took[1:]) < 0.5, took
    # Nothing is lost: every delivery is due, carried by no task, for the sweeper.
    assert Delivery.objects.count() == 3
    assert not Delivery.objects.filter(enqueued_at__isnull=False).exists()


def test_deliveries_that_could_not_be_enqueued_are_the_next_sweeps(
        kit, receiver, broken_broker, django_capture_on_commit_callbacks, monkeypatch):
    _subscribe(kit, receiver)
    broken_broker.outage(REFUSED)
    with django_capture_on_commit_callbacks(execute=True):
        make_lead(kit, email="later@example.com")
    delivery = Delivery.objects.get()
    assert delivery.status == "pending" and delivery.enqueued_at is None

    # The broker is back: the sweeper's next pass (every 5 s) enqueues it, not a minute later
    # (REQUEUE_AFTER, for a task the broker may have lost).
    sent: list = []
    monkeypatch.setattr(services, "enqueue", lambda ids: sent.extend(ids))
    assert deliveries_sweep(now=timezone.now() + timedelta(seconds=5)).enqueued == 1
    assert sent == [delivery.pk]
