"""Fixtures of the privacy tests."""

from __future__ import annotations

import pytest

from tests.fakes.webhook_receiver import WebhookReceiver


@pytest.fixture
def receiver():
    """A webhook receiver on 127.0.0.1 (the suite's ``SERVER_FIXTURES`` mark its tests live)."""
    fake = WebhookReceiver()
    yield fake
    fake.close()
