"""Fixtures of the CRM tests: the HubSpot stand-in on 127.0.0.1 (plain HTTP, so the CRM URL
rules are lifted for these tests only), a tenant connected to it, and the sync tasks recorded
rather than sent (tests run the attempts themselves, as a worker would)."""

from __future__ import annotations

from datetime import datetime

import pytest
from django.utils import timezone

from integrations import services
from integrations.models import CrmSync, SyncStatus

from .standins.hubspot import HubSpotStandIn


@pytest.fixture
def hubspot():
    standin = HubSpotStandIn().start()
    yield standin
    standin.stop()


@pytest.fixture(autouse=True)
def local_crm(settings):
    settings.INTEGRATIONS_ALLOW_HTTP = True
    settings.INTEGRATIONS_ALLOW_PRIVATE_TARGETS = True
    settings.INTEGRATIONS_TIMEOUT_SECONDS = 5
    return settings


@pytest.fixture
def oauth_app(settings, hubspot):
    settings.HUBSPOT_CLIENT_ID = hubspot.client_id
    settings.HUBSPOT_CLIENT_SECRET = hubspot.client_secret
    settings.HUBSPOT_API_BASE_URL = hubspot.url
    settings.HUBSPOT_AUTHORIZE_URL = f"{hubspot.url}/oauth/authorize"
    return settings


@pytest.fixture
def enqueued(monkeypatch):
    ids: list[str] = []
    monkeypatch.setattr(services, "enqueue", lambda sync_ids: ids.extend(map(str, sync_ids)))
    return ids


@pytest.fixture
def connected(kit, hubspot, enqueued):
    token = hubspot.private_app_token()
    connection = services.crm_connect_token(tenant=kit.tenant, livemode=True, provider="hubspot",
                                            token=token, base_url=hubspot.url)
    connection.token_value = token
    return connection


def drain(now: datetime | None = None, *, rounds: int = 10) -> list[CrmSync]:
    """Runs every due sync, as workers would, until none is due (or ``rounds`` passes). By
    default the clock is past the gathering of changes that come with chat turns
    (``services.GATHER``): what a test changed is sent."""
    now = now or timezone.now() + services.GATHER
    done = []
    for _ in range(rounds):
        due = list(CrmSync.objects.filter(status=SyncStatus.PENDING, next_attempt_at__lte=now)
                   .values_list("pk", flat=True))
        if not due:
            break
        done += [s for s in (services.crm_sync_attempt(sync_id=pk, now=now) for pk in due) if s]
    return done
