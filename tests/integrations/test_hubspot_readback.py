"""What comes back from HubSpot (a strict stand-in over real HTTP): a conversion, a
disqualification or a new owner made in the CRM reaches the lead through the lead services (so
``lead.converted`` fires) without being sent back; the CRM owner, when an active rep here, gets
the lead's handoffs first; and the backfill of the leads that existed before connecting resumes
after a worker dies mid-page without duplicating a contact."""

from __future__ import annotations

import uuid

import pytest

from conversations.models import Conversation
from core.models import Event, EventType
from integrations import services
from integrations.models import BackfillStatus, CrmConnection, CrmSync, SyncKind, SyncStatus
from leads.models import Lead
from leads.services import lead_update
from tests.chat_helpers import chat
from tests.factories import UserFactory, make_lead

from .conftest import drain

SEARCH = "/crm/v3/objects/contacts/search"


def _writes(hubspot, since: int) -> list:
    return [r for r in hubspot.requests[since:] if r.method in ("POST", "PATCH", "DELETE")
            and r.path != SEARCH]


@pytest.fixture
def synced_lead(kit, connected, hubspot, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        lead = make_lead(kit, email="won@umbrella.io", name="Wen Deal")
    drain()
    [contact] = hubspot.contacts()
    return lead, contact["id"]


def test_a_crm_side_conversion_converts_the_lead_fires_lead_converted_and_echoes_nothing(
        kit, connected, hubspot, enqueued, synced_lead, django_capture_on_commit_callbacks):
    lead, contact_id = synced_lead
    hubspot.edit_contact(contact_id, lifecyclestage="customer")
    enqueued.clear()
    before = len(hubspot.requests)
    with django_capture_on_commit_callbacks(execute=True):
        assert services.crm_poll(connection_id=connected.pk) == 1
    lead.refresh_from_db()
    assert lead.status == "converted"
    converted = Event.objects.get(type=EventType.LEAD_CONVERTED, lead=lead)
    assert converted.facts["origin"] == "crm:hubspot"
    assert Event.objects.filter(type=EventType.CONVERSION_COMPLETED, lead=lead).count() == 1
    # Nothing armed, nothing sent back: only the search was asked.
    assert enqueued == [] and not CrmSync.objects.filter(status=SyncStatus.PENDING).exists()
    drain()
    assert _writes(hubspot, before) == []
    assert {r.path for r in hubspot.requests[before:]} == {SEARCH}
    search = next(r for r in hubspot.requests[before:] if r.path == SEARCH).body
    assert search["sorts"] == [{"propertyName": "lastmodifieddate", "direction": "ASCENDING"}]
    connected.refresh_from_db()
    assert connected.cursor.isdigit()

    # Reading again changes nothing (the cursor moved; the last contact read again is a no-op).
    with django_capture_on_commit_callbacks(execute=True):
        assert services.crm_poll(connection_id=connected.pk) == 0
    assert Event.objects.filter(type=EventType.LEAD_CONVERTED).count() == 1

    # A later change here goes out, without sending the status HubSpot set back to it.
    before = len(hubspot.requests)
    with django_capture_on_commit_callbacks(execute=True):
        lead_update(lead=lead, changes={"company": "Umbrella"})
    drain()
    writes = _writes(hubspot, before)
    assert [w.body["properties"].get("company") for w in writes] == ["Umbrella"]
    assert all("lifecyclestage" not in w.body["properties"] for w in writes)


def test_a_crm_side_disqualification_marks_the_lead_lost(
        kit, connected, hubspot, enqueued, synced_lead, django_capture_on_commit_callbacks):
    lead, contact_id = synced_lead
    hubspot.edit_contact(contact_id, hs_lead_status="UNQUALIFIED")  # stage still "lead"
    with django_capture_on_commit_callbacks(execute=True):
        assert services.crm_poll(connection_id=connected.pk) == 0  # not the mapping of lost
    hubspot.edit_contact(contact_id, lifecyclestage="other")
    with django_capture_on_commit_callbacks(execute=True):
        assert services.crm_poll(connection_id=connected.pk) == 1
    lead.refresh_from_db()
    assert lead.status == "lost"
    updated = Event.objects.filter(type=EventType.LEAD_UPDATED, lead=lead).first()
    assert updated.facts["origin"] == "crm:hubspot"
    assert updated.facts["previous"]["status"] == "new"


def test_pages_of_changes_are_read_in_order_and_the_cursor_resumes(
        kit, connected, hubspot, enqueued, django_capture_on_commit_callbacks, monkeypatch):
    with django_capture_on_commit_callbacks(execute=True):
        leads = [make_lead(kit, email=f"p{i}@umbrella.io") for i in range(5)]
    drain()
    for contact in hubspot.contacts():
        hubspot.edit_contact(contact["id"], lifecyclestage="customer")
    monkeypatch.setattr(services, "POLL_PAGE", 2)
    with django_capture_on_commit_callbacks(execute=True):
        assert services.crm_poll(connection_id=connected.pk) == 5
    searches = [r.body for r in hubspot.requests if r.path == SEARCH and "sorts" in r.body]
    assert [s.get("after") for s in searches] == [None, "2", "4"]
    assert {lead.status for lead in Lead.objects.filter(pk__in=[x.pk for x in leads])} == {
        "converted"}


def test_a_crm_owner_who_is_an_online_rep_gets_the_handoff(
        api, kit, connected, hubspot, enqueued, django_capture_on_commit_callbacks):
    from django.utils import timezone

    # Round-robin alone would choose ``other``: the owner was assigned something just now.
    owner = UserFactory(tenant=kit.tenant, available=True, username="dana@acme.test",
                        email="dana@acme.test", last_assigned_at=timezone.now())
    other = UserFactory(tenant=kit.tenant, available=True)
    with django_capture_on_commit_callbacks(execute=True):
        r = chat(api, kit, "Hi, I'm Sam Jones, sam@umbrella.io", visitor="visitor-1")
    session = r.json()["sessionId"]
    drain()
    [contact] = hubspot.contacts()
    hubspot.add_owner("someone@else.test")
    owner_id = hubspot.add_owner("Dana@ACME.test", "Dana", "Scully")
    hubspot.edit_contact(contact["id"], hubspot_owner_id=owner_id)
    before = len(hubspot.requests)
    with django_capture_on_commit_callbacks(execute=True):
        assert services.crm_poll(connection_id=connected.pk) == 1
    lead = Lead.objects.get()
    assert lead.assigned_to == owner
    row = CrmSync.objects.get(kind=SyncKind.CONTACT)
    assert row.remote_owner_email == "dana@acme.test"
    drain()
    assert _writes(hubspot, before) == []  # the owner is HubSpot's: not sent back

    with django_capture_on_commit_callbacks(execute=True):
        r = chat(api, kit, "I want to talk to a human", session=session)
    assert r.json()["handoff"], r.text
    conversation = Conversation.objects.get(pk=uuid.UUID(hex=session[5:]))
    assert conversation.assigned_to == owner and conversation.assigned_to != other


def test_an_owner_who_is_no_rep_here_changes_nothing(
        kit, connected, hubspot, enqueued, synced_lead, django_capture_on_commit_callbacks):
    lead, contact_id = synced_lead
    hubspot.edit_contact(contact_id, hubspot_owner_id=hubspot.add_owner("nobody@else.test"))
    with django_capture_on_commit_callbacks(execute=True):
        assert services.crm_poll(connection_id=connected.pk) == 0
    lead.refresh_from_db()
    assert lead.assigned_to is None
    assert CrmSync.objects.get(kind=SyncKind.CONTACT).remote_owner_email == "nobody@else.test"


def test_a_backfill_killed_mid_page_resumes_without_duplicate_contacts(
        kit, hubspot, enqueued, monkeypatch):
    leads = [make_lead(kit, email=f"old{i}@umbrella.io", name=f"Old {i}") for i in range(7)]
    make_lead(kit, mode="test", email="testmode@umbrella.io")  # another mode: not sent
    connection = services.crm_connect_token(tenant=kit.tenant, livemode=True,
                                            provider="hubspot",
                                            token=hubspot.private_app_token(),
                                            base_url=hubspot.url)
    connection.refresh_from_db()
    assert connection.backfill_status == BackfillStatus.RUNNING
    assert (connection.backfill_done, connection.backfill_total) == (0, 7)
    assert services.crm_backfill_page(connection_id=connection.pk, size=3)
    assert len(hubspot.contacts()) == 3

    # The worker dies after sending two leads of the second page, before the cursor moves.
    real, sent = services.crm_sync_attempt, []

    def dying(**kwargs):
        if len(sent) == 2:
            raise SystemExit("worker killed")
        sent.append(kwargs["sync_id"])
        return real(**kwargs)

    monkeypatch.setattr(services, "crm_sync_attempt", dying)
    with pytest.raises(SystemExit):
        services.crm_backfill_page(connection_id=connection.pk, size=3)
    monkeypatch.setattr(services, "crm_sync_attempt", real)
    connection.refresh_from_db()
    assert connection.backfill_done == 3 and len(hubspot.contacts()) == 5

    # Resumed (the message redelivered, or the beat's resume): from the cursor, nothing twice.
    before = len(hubspot.requests)
    while services.crm_backfill_page(connection_id=connection.pk, size=3):
        pass
    connection.refresh_from_db()
    assert connection.backfill_status == BackfillStatus.DONE
    assert (connection.backfill_done, connection.backfill_total) == (7, 7)
    emails = sorted(c["properties"]["email"] for c in hubspot.contacts())
    assert emails == sorted(lead.email for lead in leads)
    creates = [r for r in hubspot.requests[before:] if r.method == "POST"
               and r.path == "/crm/v3/objects/contacts"]
    assert len(creates) == 2  # only the two the dead worker had not sent
    assert CrmSync.objects.filter(kind=SyncKind.CONTACT, status=SyncStatus.SYNCED).count() == 7
    assert not services.crm_backfill_page(connection_id=connection.pk)
    # Reconnecting later does not start it again.
    services.crm_connect_token(tenant=kit.tenant, livemode=True, provider="hubspot",
                               token=hubspot.private_app_token(), base_url=hubspot.url)
    assert CrmConnection.objects.get(pk=connection.pk).backfill_status == BackfillStatus.DONE


def test_a_grant_without_the_owners_scope_still_follows_statuses(
        kit, hubspot, enqueued, django_capture_on_commit_callbacks):
    token = hubspot.private_app_token(("crm.objects.contacts.read",
                                       "crm.objects.contacts.write"))
    connection = services.crm_connect_token(tenant=kit.tenant, livemode=True,
                                            provider="hubspot", token=token,
                                            base_url=hubspot.url)
    with django_capture_on_commit_callbacks(execute=True):
        lead = make_lead(kit, email="scope@umbrella.io")
    drain()
    [contact] = hubspot.contacts()
    hubspot.edit_contact(contact["id"], lifecyclestage="customer",
                         hubspot_owner_id=hubspot.add_owner("dana@acme.test"))
    with django_capture_on_commit_callbacks(execute=True):
        assert services.crm_poll(connection_id=connection.pk) == 1
    assert [r.status for r in hubspot.requests if r.path == "/crm/v3/owners/"] == [403]
    lead.refresh_from_db()
    assert lead.status == "converted" and lead.assigned_to is None


def test_the_first_read_starts_at_connecting_not_at_the_crms_history(
        kit, connected, hubspot, enqueued, synced_lead, django_capture_on_commit_callbacks):
    """A customer of the CRM's past is no conversion of today: with no cursor yet, reading back
    starts at the connection's time of connecting (less the search's lag margin)."""
    lead, contact_id = synced_lead
    hubspot.edit_contact(contact_id, lifecyclestage="customer")
    with hubspot.lock:  # as if that change were made two hours before connecting
        hubspot.objects["contacts"][contact_id]["_modified_ms"] -= 2 * 3600 * 1000
    assert connected.cursor == ""
    with django_capture_on_commit_callbacks(execute=True):
        assert services.crm_poll(connection_id=connected.pk) == 0
    lead.refresh_from_db()
    assert lead.status == "new"
    assert not Event.objects.filter(type=EventType.LEAD_CONVERTED, lead=lead).exists()
