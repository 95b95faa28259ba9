"""Leads, conversations and meetings reach HubSpot (a strict stand-in over real HTTP) as they
change: upserted by email, never duplicated; retried on 429/5xx, failed for good on 4xx, and
stopped on a refused token until the manager reconnects."""

from __future__ import annotations

import io
from datetime import timedelta

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from conversations.models import Meeting
from core.models import EventType
from integrations import services
from integrations.models import ConnectionStatus, CrmConnection, CrmSync, SyncKind, SyncStatus
from leads.services import lead_update
from tests.chat_helpers import chat, take

from .conftest import drain


def _capture(api, kit, capture, text="Hi, I'm Sam Jones, sam@umbrella.io", visitor="visitor-1"):
    with capture(execute=True):
        r = chat(api, kit, text, visitor=visitor)
    assert r.status_code == 200, r.content
    return r.json()["sessionId"]


def test_the_command_connects_by_token_stored_encrypted_and_never_shown(kit, hubspot,
                                                                        monkeypatch):
    token = hubspot.private_app_token()
    out = io.StringIO()
    monkeypatch.setattr("sys.stdin", io.StringIO(token + "\n"))
    call_command("connect_crm", str(kit.tenant.pk), "hubspot", "--token-stdin",
                 "--base-url", hubspot.url, stdout=out)
    connection = CrmConnection.objects.get(tenant=kit.tenant)
    assert connection.status == ConnectionStatus.CONNECTED and connection.livemode
    assert connection.access_token == token and token not in connection.access_token_encrypted
    assert token not in out.getvalue() and "Connected HubSpot" in out.getvalue()
    assert connection.scopes == ["crm.objects.contacts.read", "crm.objects.contacts.write",
                                 "crm.objects.owners.read"]
    assert connection.status_mapping["converted"] == {"lifecyclestage": "customer"}


def test_a_token_hubspot_refuses_connects_nothing(kit, hubspot):
    with pytest.raises(CommandError, match="HubSpot refused the token"):
        call_command("connect_crm", str(kit.tenant.pk), "hubspot", "--token", "pat-na1-wrong",
                     "--base-url", hubspot.url)
    assert not CrmConnection.objects.exists()


def test_internal_addresses_are_refused_by_default(kit, hubspot, settings):
    settings.INTEGRATIONS_ALLOW_PRIVATE_TARGETS = False
    with pytest.raises(CommandError, match="not public"):
        call_command("connect_crm", str(kit.tenant.pk), "hubspot", "--token",
                     hubspot.private_app_token(), "--base-url", hubspot.url)
    assert not CrmConnection.objects.exists() and not hubspot.requests


def test_a_captured_lead_is_one_contact_and_a_second_chat_updates_it(
        api, kit, connected, hubspot, django_capture_on_commit_callbacks):
    _capture(api, kit, django_capture_on_commit_callbacks)
    drain()
    contacts = hubspot.contacts()
    assert len(contacts) == 1
    contact = contacts[0]["properties"]
    assert contact["email"] == "sam@umbrella.io" and contact["firstname"] == "Sam"
    assert contact["lastname"] == "Jones" and contact["lifecyclestage"] == "lead"
    notes = hubspot.associated("notes", contacts[0]["id"])
    assert len(notes) == 1 and "sam@umbrella.io" in notes[0]["properties"]["hs_note_body"]

    # The same person comes back in another chat: the same contact, a note for that chat.
    _capture(api, kit, django_capture_on_commit_callbacks, visitor="visitor-2",
             text="Hello again, Sam Jones here (sam@umbrella.io), I work at Umbrella")
    drain()
    assert len(hubspot.contacts()) == 1
    assert len(hubspot.associated("notes", contacts[0]["id"])) == 2
    contact_sync = CrmSync.objects.get(kind=SyncKind.CONTACT)
    assert contact_sync.remote_id == contacts[0]["id"] and contact_sync.status == SyncStatus.SYNCED
    # Every contact call after the first found it by its stored id: one search, one create.
    creates = [r for r in hubspot.requests if r.method == "POST"
               and r.path == "/crm/v3/objects/contacts"]
    assert len(creates) == 1


def test_the_conversations_note_is_updated_as_it_goes_on_not_added_again(
        api, kit, connected, hubspot, django_capture_on_commit_callbacks):
    sid = _capture(api, kit, django_capture_on_commit_callbacks)
    drain()
    contact_id = hubspot.contacts()[0]["id"]
    sent = len(hubspot.requests)
    # Each turn's message waits a moment for the next ones (services.GATHER): two turns, and
    # nothing goes to HubSpot until the first is due; then one update carries both.
    for question in ("What does the enterprise plan cost?", "And is there a yearly discount?"):
        with django_capture_on_commit_callbacks(execute=True):
            chat(api, kit, question, session=sid)
        drain(timezone.now())
    assert len(hubspot.requests) == sent, hubspot.requests[sent:]
    assert "enterprise plan cost" not in hubspot.associated("notes", contact_id)[0][
        "properties"]["hs_note_body"]
    drain()
    notes = hubspot.associated("notes", contact_id)
    assert len(notes) == 1
    body = notes[0]["properties"]["hs_note_body"]
    assert "enterprise plan cost" in body and "yearly discount" in body


def test_a_booking_creates_the_meeting_on_the_contact(
        api, kit, connected, hubspot, django_capture_on_commit_callbacks):
    sid = _capture(api, kit, django_capture_on_commit_callbacks)
    with django_capture_on_commit_callbacks(execute=True):
        r = chat(api, kit, "Can we book a demo?", session=sid)
    slots = [a for a in r.json()["suggestedActions"] if a["type"] == "reply"]
    with django_capture_on_commit_callbacks(execute=True):
        assert take(api, kit, slots[0], session=sid).json()["intent"] == "booking"
    drain()
    meeting = Meeting.objects.get()
    contact = hubspot.contacts()[0]
    meetings = hubspot.associated("meetings", contact["id"])
    assert len(meetings) == 1
    props = meetings[0]["properties"]
    assert props["hs_meeting_outcome"] == "SCHEDULED"
    assert props["hs_meeting_start_time"].startswith(meeting.starts_at.strftime("%Y-%m-%dT%H:%M"))
    assert contact["properties"]["hs_lead_status"] == "OPEN_DEAL"  # booked, by the mapping


def test_a_429_storm_is_waited_out_without_spending_the_schedule(
        kit, connected, hubspot, django_capture_on_commit_callbacks):
    from tests.factories import make_lead

    hubspot.rate_limit(12, retry_after="2")
    with django_capture_on_commit_callbacks(execute=True):
        make_lead(kit, email="storm@umbrella.io", name="Storm")
    now = timezone.now()
    sync = services.crm_sync_attempt(sync_id=CrmSync.objects.get().pk, now=now)
    assert sync.status == SyncStatus.PENDING and sync.last_status_code == 429
    assert sync.next_attempt_at == now + timedelta(seconds=2) and sync.attempts == 0
    assert "secondly limit" in sync.last_error
    for _ in range(20):
        now += timedelta(seconds=2)
        sync = services.crm_sync_attempt(sync_id=sync.pk, now=now) or sync
        if sync.status != SyncStatus.PENDING:
            break
    assert sync.status == SyncStatus.SYNCED and len(hubspot.contacts()) == 1


def test_a_5xx_is_retried_on_the_backoff_and_a_4xx_fails_with_hubspots_message(
        kit, connected, hubspot, django_capture_on_commit_callbacks):
    from tests.factories import make_lead

    hubspot.fail_5xx = 1
    with django_capture_on_commit_callbacks(execute=True):
        lead = make_lead(kit, email="five@umbrella.io", name="Five")
    now = timezone.now()
    sync = services.crm_sync_attempt(sync_id=CrmSync.objects.get().pk, now=now)
    assert sync.status == SyncStatus.PENDING and sync.last_status_code == 502
    assert sync.next_attempt_at == now + timedelta(seconds=10)
    sync = services.crm_sync_attempt(sync_id=sync.pk, now=now + timedelta(seconds=10))
    assert sync.status == SyncStatus.SYNCED

    # A mapping to a property HubSpot does not have: refused for good, its message kept.
    CrmConnection.objects.filter(pk=connected.pk).update(
        field_mapping={**connected.field_mapping, "source": "lead_source_here"})
    with django_capture_on_commit_callbacks(execute=True):
        lead_update(lead=lead, changes={"company": "Umbrella"})
    sync = services.crm_sync_attempt(sync_id=sync.pk, now=timezone.now() + services.GATHER)
    assert sync.status == SyncStatus.FAILED and sync.last_status_code == 400
    assert 'Property \\"lead_source_here\\" does not exist' in sync.last_error or \
        'lead_source_here' in sync.last_error
    assert sync.next_attempt_at is None

    # Mapping fixed, "Try again": synced.
    CrmConnection.objects.filter(pk=connected.pk).update(field_mapping=connected.field_mapping)
    services.crm_sync_retry(sync=sync)
    assert services.crm_sync_attempt(sync_id=sync.pk).status == SyncStatus.SYNCED
    assert hubspot.contacts()[0]["properties"]["company"] == "Umbrella"


def test_a_revoked_token_marks_the_connection_and_stops_retrying(
        kit, connected, hubspot, enqueued, django_capture_on_commit_callbacks):
    from tests.factories import make_lead

    hubspot.revoke_all()
    with django_capture_on_commit_callbacks(execute=True):
        make_lead(kit, email="gone@umbrella.io")
        make_lead(kit, email="also@umbrella.io")
    first, second = CrmSync.objects.order_by("created_at")
    sync = services.crm_sync_attempt(sync_id=first.pk)
    assert sync.status == SyncStatus.WAITING and sync.last_status_code == 401
    connected.refresh_from_db()
    assert connected.status == ConnectionStatus.NEEDS_RECONNECT
    assert "Authentication credentials not found" in connected.last_error
    second.refresh_from_db()
    assert second.status == SyncStatus.WAITING  # not tried: the token is known refused
    calls = len(hubspot.api_calls())
    later = timezone.now() + timedelta(days=2)
    assert services.crm_syncs_sweep(now=later) == 0 and not drain(later)
    assert len(hubspot.api_calls()) == calls

    # A change meanwhile waits too; connecting again sends everything that waited.
    with django_capture_on_commit_callbacks(execute=True):
        make_lead(kit, email="third@umbrella.io")
    assert CrmSync.objects.filter(status=SyncStatus.WAITING).count() == 3
    services.crm_connect_token(tenant=kit.tenant, livemode=True, provider="hubspot",
                               token=hubspot.private_app_token(), base_url=hubspot.url)
    drain()
    assert len(hubspot.contacts()) == 3


def test_a_sync_claimed_by_a_worker_that_died_is_taken_back_and_sent_once(
        kit, connected, hubspot, enqueued, django_capture_on_commit_callbacks):
    from tests.factories import make_lead

    with django_capture_on_commit_callbacks(execute=True):
        make_lead(kit, email="restart@umbrella.io")
    sync = CrmSync.objects.get()
    now = timezone.now()
    # A worker takes the row and dies before sending: only the row knows.
    assert CrmSync.claim(sync.pk, now=now, lease=services.LEASE) is not None
    enqueued.clear()
    assert services.crm_syncs_sweep(now=now + timedelta(seconds=30)) == 0  # lease still live
    later = now + services.LEASE + timedelta(seconds=1)
    assert services.crm_syncs_sweep(now=later) == 1 and enqueued == [str(sync.pk)]
    assert services.crm_sync_attempt(sync_id=sync.pk, now=later).status == SyncStatus.SYNCED
    assert services.crm_sync_attempt(sync_id=sync.pk, now=later) is None
    assert len(hubspot.contacts()) == 1


def test_test_mode_leads_and_other_tenants_leads_stay_out(
        kit, stranger, connected, hubspot, django_capture_on_commit_callbacks):
    from tests.factories import make_lead

    with django_capture_on_commit_callbacks(execute=True):
        make_lead(kit, mode="test", email="test@umbrella.io")
        make_lead(stranger, email="other@stranger.io")
    assert not CrmSync.objects.exists()
    drain()
    assert hubspot.contacts() == []


def test_a_status_change_sets_the_lifecycle_stage_by_the_mapping(
        kit, connected, hubspot, django_capture_on_commit_callbacks):
    from tests.factories import make_lead

    with django_capture_on_commit_callbacks(execute=True):
        lead = make_lead(kit, email="won@umbrella.io")
    drain()
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        lead_update(lead=lead, changes={"status": "converted"})
    assert callbacks
    drain()
    contact = hubspot.contacts()[0]["properties"]
    assert contact["lifecyclestage"] == "customer"
    assert CrmSync.objects.get().trigger in (EventType.LEAD_CONVERTED, EventType.LEAD_UPDATED)


def test_an_erasure_forgets_the_person_s_crm_links_and_keeps_others(
        api, kit, connected, hubspot, django_capture_on_commit_callbacks):
    """The CRM's ids and last errors of an erased person's records go with them (a refused
    sync's error may echo what was sent); another person's links stay. The records in HubSpot
    stay, for HubSpot's own erasure."""
    _capture(api, kit, django_capture_on_commit_callbacks)
    _capture(api, kit, django_capture_on_commit_callbacks, visitor="visitor-2",
             text="Hi, I'm Ada Byron, ada@example.org")
    drain()
    sam = CrmSync.objects.filter(lead__email="sam@umbrella.io")
    assert {s.kind for s in sam} == {SyncKind.CONTACT, SyncKind.NOTE}
    sam.update(last_error="HubSpot refused sam@umbrella.io")
    others = set(CrmSync.objects.exclude(lead__email="sam@umbrella.io").values_list("pk", flat=True))
    assert others

    lead_id = sam.get(kind=SyncKind.CONTACT).lead_id
    with django_capture_on_commit_callbacks(execute=True):
        r = api.delete(f"/api/v1/leads/lead_{lead_id.hex}", headers=kit.auth("admin"))
    assert r.status_code == 204, r.content
    assert set(CrmSync.objects.values_list("pk", flat=True)) == others
    assert not CrmSync.objects.filter(last_error__contains="sam@").exists()
    assert len(hubspot.contacts()) == 2
