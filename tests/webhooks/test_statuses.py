"""Each surface's webhooks show a lead's status exactly as that surface's API shows the same
lead, for every stored status (ARCHITECTURE.md's status table): webhook payloads are rendered
from the event's stored facts, never converted back from another surface's word."""

from __future__ import annotations

import pytest

from leads.services import lead_create, lead_update
from leads.vocabulary import LeadStatus
from webhooks import services
from webhooks.models import Delivery

from .conftest import SECRET, attempt_now, envelope

pytestmark = pytest.mark.usefixtures("local_targets")


@pytest.fixture
def receivers(kit, receiver, enqueued):
    """A v1 subscription and a legacy webhook of the same tenant, both to one real receiver."""
    services.subscription_create(tenant=kit.tenant, livemode=True, url=receiver.url(),
                                 events=["lead.created", "lead.qualified"], secret=SECRET)
    services.legacy_webhook_create(tenant=kit.tenant, url=receiver.url(),
                                   events=["lead.created", "lead.qualified"], secret=SECRET)
    return receiver


def _delivered(receiver) -> dict[tuple[str, str], dict]:
    """What arrived, by (surface, event type)."""
    for delivery in Delivery.objects.order_by("created_at", "surface"):
        assert attempt_now(delivery).success
    out = {}
    for request in receiver.received:
        body = envelope(request)
        if "apiVersion" in body:
            out[("v1", body["type"])] = body["data"]
        else:
            out[("legacy", body["event"])] = body["data"]
    return out


def _api_statuses(api, kit, lead) -> dict[str, str]:
    v1 = api.get(f"/api/v1/leads/lead_{lead.pk.hex}", headers=kit.auth("read")).json()
    legacy = api.get(f"/api/leads/{lead.pk}", headers=kit.auth("read")).json()["lead"]
    return {"v1": v1["status"], "legacy": legacy["status"]}


@pytest.mark.parametrize("stored", LeadStatus.values)
def test_lead_created_shows_each_surface_its_own_status(
        api, kit, receivers, stored, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        lead = lead_create(tenant=kit.tenant, livemode=True, email=f"{stored}@example.com",
                           status=stored, qualification_reason="Imported as qualified")
    delivered = _delivered(receivers)
    shown = _api_statuses(api, kit, lead)
    assert delivered[("v1", "lead.created")]["lead"]["status"] == shown["v1"]
    assert delivered[("legacy", "lead.created")]["status"] == shown["legacy"]


@pytest.mark.parametrize("previous, reached", [
    ("qualifying", "qualified"), ("nurturing", "booked"), ("contacted", "qualified"),
    ("new", "booked"),
])
def test_lead_qualified_shows_each_surface_its_own_status_and_previous_status(
        api, kit, receivers, previous, reached, django_capture_on_commit_callbacks):
    lead = lead_create(tenant=kit.tenant, livemode=True, email="ada@example.com", status=previous)
    before = _api_statuses(api, kit, lead)
    Delivery.objects.all().delete()
    with django_capture_on_commit_callbacks(execute=True):
        lead_update(lead=lead, changes={"status": reached}, qualification_reason="BANT")
    delivered = _delivered(receivers)
    shown = _api_statuses(api, kit, lead)
    v1, legacy = delivered[("v1", "lead.qualified")], delivered[("legacy", "lead.qualified")]
    assert (v1["lead"]["status"], v1["lead"]["previousStatus"]) == (shown["v1"], before["v1"])
    assert (legacy["status"], legacy["previousStatus"]) == (shown["legacy"], before["legacy"])
