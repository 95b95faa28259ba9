"""Fixtures and checks shared by the webhook tests (helpers are importable from here too).

Signatures are recomputed here with ``hmac`` from the secret the test chose, independently of
``webhooks.envelopes``, so a wrong signing scheme in the code under test fails the tests.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from datetime import datetime

import pytest

from tests.fakes.webhook_receiver import Received, WebhookReceiver
from webhooks import services
from webhooks.models import Delivery

SECRET = "whsec_test_0123456789abcdefghijklmnop"


@pytest.fixture
def receiver():
    fake = WebhookReceiver()
    yield fake
    fake.close()


@pytest.fixture
def local_targets(settings):
    """The receiver listens on 127.0.0.1 over plain HTTP: lift both rules for this test only."""
    settings.WEBHOOKS_ALLOW_HTTP = True
    settings.WEBHOOKS_ALLOW_PRIVATE_TARGETS = True
    settings.WEBHOOKS_TIMEOUT_SECONDS = 5
    return settings


@pytest.fixture
def enqueued(monkeypatch):
    """Records what would go to the broker instead of sending it; tests run attempts themselves."""
    ids: list = []
    monkeypatch.setattr(services, "enqueue", lambda delivery_ids: ids.extend(delivery_ids))
    return ids


def v1_signature_ok(request: Received, secret: str = SECRET) -> bool:
    timestamp = request.headers["x-service-timestamp"]
    expected = hmac.new(secret.encode(), f"{timestamp}.".encode() + request.body,
                        hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, request.headers["x-service-signature"])


def legacy_signature_ok(request: Received, secret: str = SECRET) -> bool:
    expected = hmac.new(secret.encode(), request.body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, request.headers["x-service-signature"])


def envelope(request: Received) -> dict:
    return json.loads(request.body)


def attempt_now(delivery: Delivery, now: datetime | None = None):
    """Runs the due attempt of ``delivery`` as a worker would, at ``now``."""
    return services.delivery_attempt(delivery_id=delivery.pk, now=now)


def fresh(delivery: Delivery) -> Delivery:
    return Delivery.objects.get(pk=delivery.pk)
