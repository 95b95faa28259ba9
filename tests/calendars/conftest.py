"""Fixtures of the calendar tests: a Radicale server, calendar URLs allowed on 127.0.0.1 over
plain HTTP, and a rep whose calendar is connected."""

from __future__ import annotations

import pytest
from django.core.cache import cache

from calendars import services
from tests.fakes.radicale import USERS, Radicale


@pytest.fixture
def radicale(tmp_path):
    server = Radicale(tmp_path)
    server.start()
    yield server
    server.stop()


@pytest.fixture(autouse=True)
def local_calendars(settings):
    """Radicale listens on 127.0.0.1 over plain HTTP: lift both rules for these tests only."""
    settings.CALENDARS_ALLOW_HTTP = True
    settings.CALENDARS_ALLOW_PRIVATE_TARGETS = True
    cache.clear()
    yield settings
    cache.clear()


@pytest.fixture
def enqueued(monkeypatch):
    """Records the write tasks instead of sending them; tests run the attempts themselves."""
    ids: list = []
    monkeypatch.setattr(services, "enqueue",
                        lambda meeting_ids, only_pending=False: ids.extend(map(str, meeting_ids)))
    return ids


@pytest.fixture
def connected(kit, rep, radicale):
    """``rep``'s Radicale calendar, connected through the service."""
    radicale.make_calendar()
    return services.calendar_connect(tenant=kit.tenant, user=rep, url=radicale.url,
                                     username="ray", password=USERS["ray"])
