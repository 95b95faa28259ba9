"""The Integrations page over HTTP: a manager connects with a token (never echoed), reads the
sync log and tries a failed sync again; a forged OAuth state connects nothing; another tenant's
sync is 404; reps are sent away; a fixed number of queries however long the log."""

from __future__ import annotations

import pytest
from django.core import signing

from integrations import services
from integrations.models import CrmConnection, CrmSync, SyncStatus
from tests.dashboard.client import signed_in
from tests.factories import make_lead

from .conftest import drain


def test_a_manager_connects_with_a_token_that_is_never_shown(kit, manager, hubspot, settings):
    settings.HUBSPOT_API_BASE_URL = hubspot.url
    token = hubspot.private_app_token()
    client = signed_in(manager)
    r = client.post("/dashboard/integrations/hubspot/token/", {"token": token}, follow=True)
    assert r.status_code == 200
    body = r.content.decode()
    assert "HubSpot connected." in body and token not in body
    assert CrmConnection.objects.get(tenant=kit.tenant).status == "connected"


def test_a_refused_token_says_so_and_connects_nothing(kit, manager, hubspot, settings):
    settings.HUBSPOT_API_BASE_URL = hubspot.url
    r = signed_in(manager).post("/dashboard/integrations/hubspot/token/", {"token": "pat-bad"},
                                follow=True)
    assert "HubSpot refused the token" in r.content.decode()
    assert not CrmConnection.objects.exists()


def test_the_log_shows_a_failed_sync_with_hubspots_message_and_try_again_sends_it(
        kit, manager, connected, hubspot, django_capture_on_commit_callbacks,
        django_assert_max_num_queries):
    CrmConnection.objects.filter(pk=connected.pk).update(
        field_mapping={**connected.field_mapping, "source": "no_such_property"})
    with django_capture_on_commit_callbacks(execute=True):
        for n in range(5):
            make_lead(kit, email=f"lead{n}@umbrella.io")
    drain()
    assert set(CrmSync.objects.values_list("status", flat=True)) == {SyncStatus.FAILED}
    client = signed_in(manager)
    with django_assert_max_num_queries(20):
        r = client.get("/dashboard/integrations/")
    body = r.content.decode()
    assert body.count("Try again") == 5 and "no_such_property" in body

    CrmConnection.objects.filter(pk=connected.pk).update(field_mapping=connected.field_mapping)
    sync = CrmSync.objects.first()
    with django_capture_on_commit_callbacks(execute=True):
        r = client.post(f"/dashboard/integrations/syncs/{sync.pk}/retry/", follow=True)
    assert "Trying again now." in r.content.decode()
    drain()
    sync.refresh_from_db()
    assert sync.status == SyncStatus.SYNCED and len(hubspot.contacts()) == 1


def test_another_tenants_sync_is_404(kit, stranger, manager, hubspot, enqueued,
                                     django_capture_on_commit_callbacks):
    services.crm_connect_token(tenant=stranger.tenant, livemode=True, provider="hubspot",
                               token=hubspot.private_app_token(), base_url=hubspot.url)
    with django_capture_on_commit_callbacks(execute=True):
        make_lead(stranger, email="theirs@stranger.io")
    theirs = CrmSync.objects.get()
    r = signed_in(manager).post(f"/dashboard/integrations/syncs/{theirs.pk}/retry/")
    assert r.status_code == 404
    r = signed_in(manager).post("/dashboard/integrations/hubspot/disconnect/")
    assert r.status_code == 404  # kit has no connection; the stranger's is not reachable
    assert CrmConnection.objects.get().status == "connected"


def test_a_forged_oauth_state_connects_nothing(kit, manager, hubspot, oauth_app):
    client = signed_in(manager)
    r = client.get("/dashboard/integrations/hubspot/oauth/")
    assert r.status_code == 302 and r["Location"].startswith(f"{hubspot.url}/oauth/authorize?")
    forged = signing.dumps({"t": str(kit.tenant.pk), "l": True, "p": "hubspot", "n": "guess"},
                           salt="dashboard.integrations.oauth")
    r = client.get(f"/dashboard/integrations/hubspot/oauth/callback/?code=x&state={forged}",
                   follow=True)
    assert "was not started here" in r.content.decode()
    assert not CrmConnection.objects.exists() and not hubspot.requests


def test_disconnect_revokes_at_hubspot_and_wipes_the_tokens(kit, manager, hubspot, oauth_app):
    hubspot.codes["c0de"] = ("http://testserver/cb", ["oauth", "crm.objects.contacts.read",
                                                      "crm.objects.contacts.write"])
    connection = services.crm_connect_oauth(tenant=kit.tenant, livemode=True, provider="hubspot",
                                            code="c0de", redirect_uri="http://testserver/cb",
                                            base_url=hubspot.url)
    assert connection.account_id == "24680" and connection.expires_at is not None
    refresh = connection.refresh_token
    assert refresh in hubspot.refresh_tokens
    r = signed_in(manager).post("/dashboard/integrations/hubspot/disconnect/", follow=True)
    assert "access was revoked" in r.content.decode()
    assert refresh not in hubspot.refresh_tokens
    connection.refresh_from_db()
    assert connection.status == "disconnected" and connection.access_token_encrypted == ""
    assert connection.refresh_token_encrypted == ""


@pytest.mark.parametrize("path", ["/dashboard/integrations/"])
def test_reps_are_sent_away(rep, path):
    r = signed_in(rep).get(path)
    assert r.status_code == 302 and r["Location"] == "/dashboard/"


def test_the_page_shows_the_backfills_progress(kit, manager, hubspot, enqueued):
    from integrations.models import BackfillStatus

    for n in range(5):
        make_lead(kit, email=f"old{n}@umbrella.io")
    connection = services.crm_connect_token(tenant=kit.tenant, livemode=True, provider="hubspot",
                                            token=hubspot.private_app_token(),
                                            base_url=hubspot.url)
    services.crm_backfill_page(connection_id=connection.pk, size=2)
    client = signed_in(manager)
    body = client.get("/dashboard/integrations/").content.decode()
    assert "Existing leads: 2 of 5 sent" in body and 'value="2" max="5"' in body
    while services.crm_backfill_page(connection_id=connection.pk, size=2):
        pass
    assert CrmConnection.objects.get().backfill_status == BackfillStatus.DONE
    body = client.get("/dashboard/integrations/").content.decode()
    assert "Existing leads: all 5 sent." in body and "<progress" not in body and len(hubspot.contacts()) == 5
