"""Fixtures of the calendar tests (``radicale`` and ``local_calendars`` are the suite's): calendar
URLs allowed on 127.0.0.1 over plain HTTP in every test here, and a rep whose calendar is
connected."""

from __future__ import annotations

import pytest

from calendars import services
from tests.fakes.radicale import USERS


@pytest.fixture(autouse=True)
def _local(local_calendars):
    return local_calendars


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
