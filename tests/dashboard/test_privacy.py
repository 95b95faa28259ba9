"""The staff access audit (issue 28, "Staff access audit"; docs/privacy.md): opening a lead's or a
conversation's page records who saw whose data and when, in one INSERT, with ids only; managers
and the admin token read it on the Privacy page, in pages, per tenant and mode; reps are sent
away. Over HTTP with Django's test client; the browser flow is test_browser_privacy.py."""

from __future__ import annotations

import re
import uuid
from datetime import timedelta

import pytest
from django.utils import timezone

from conversations.models import Conversation
from tenants.models import StaffAccess, StaffAccessAction
from tenants.services import ADMIN_TOKEN_LABEL, record_staff_access, user_create
from tests.chat_helpers import chat
from tests.dashboard.client import Client, signed_in
from tests.factories import PASSWORD, make_lead

ROW = re.compile(r'<tr data-staff-access="([0-9a-f-]{36})">')
EMAIL, NAME = "sam.visitor@umbrella.io", "Sam Visitor"


@pytest.fixture
def visited(api, kit):
    """A visitor who chatted and gave their name and address: a lead and a conversation."""
    sid = chat(api, kit, f"Hi, I'm {NAME}, {EMAIL}", visitor="v-audit").json()["sessionId"]
    conversation = Conversation.objects.get(pk=uuid.UUID(hex=sid.removeprefix("sess_")))
    assert conversation.lead_id is not None
    return conversation


def _accesses(kit, livemode: bool = True) -> list[StaffAccess]:
    return list(StaffAccess.objects.filter(tenant=kit.tenant, livemode=livemode)
                .order_by("at", "id"))


# --- recording ----------------------------------------------------------------------------------

def test_opening_a_lead_and_a_conversation_records_who_saw_them(kit, manager, visited):
    client = signed_in(manager)
    assert client.get(f"/dashboard/leads/{visited.lead_id}/").status_code == 200
    assert client.get(f"/dashboard/conversations/{visited.pk}/").status_code == 200
    lead_view, conversation_view = _accesses(kit)
    assert (lead_view.user, lead_view.user_label, lead_view.action, lead_view.lead_id,
            lead_view.conversation_id) == (manager, manager.display_name, "viewed",
                                           visited.lead_id, None)
    assert (conversation_view.lead_id, conversation_view.conversation_id) == (visited.lead_id,
                                                                              visited.pk)
    assert lead_view.at <= conversation_view.at <= timezone.now()


def test_lists_and_pages_that_find_nothing_record_nothing(kit, manager, stranger, visited):
    client = signed_in(manager)
    for url in ["/dashboard/", "/dashboard/leads/", f"/dashboard/leads/?q={EMAIL}",
                "/dashboard/conversations/?view=all", "/dashboard/privacy/"]:
        assert client.get(url).status_code == 200, url
    theirs = make_lead(stranger, email="theirs@stranger.test")
    assert client.get(f"/dashboard/leads/{theirs.pk}/").status_code == 404
    assert client.get(f"/dashboard/leads/{uuid.uuid4()}/").status_code == 404
    assert not StaffAccess.objects.exists()


def test_the_admin_token_and_the_test_mode_are_recorded_as_such(kit, manager, visited):
    admin = Client()
    admin.post("/dashboard/login/token/", {"token": kit.admin_token})
    admin.get(f"/dashboard/leads/{visited.lead_id}/")
    [access] = _accesses(kit)
    assert access.user is None and access.user_label == ADMIN_TOKEN_LABEL
    test_lead = make_lead(kit, mode="test", email="tess@test.example")
    client = signed_in(manager)
    client.post("/dashboard/mode/", {"mode": "test"})
    assert client.get(f"/dashboard/leads/{test_lead.pk}/").status_code == 200
    assert [a.lead_id for a in _accesses(kit, livemode=False)] == [test_lead.pk]


def test_recording_costs_one_insert(kit, manager, visited, django_assert_num_queries):
    client = signed_in(manager)
    client.get("/dashboard/")
    for url in [f"/dashboard/leads/{visited.lead_id}/", f"/dashboard/conversations/{visited.pk}/"]:
        with django_assert_num_queries(100, exact=False) as page:
            client.get(url)
        # The conversation page also marks it read for the reader (the inbox's unread markers).
        writes = [q["sql"] for q in page.captured_queries
                  if not q["sql"].lstrip().upper().startswith(("SELECT", "SAVEPOINT", "RELEASE"))
                  and "conversations_conversationread" not in q["sql"]]
        assert len(writes) == 1 and writes[0].startswith('INSERT INTO "tenants_staffaccess"'), (
            url, writes)


def test_a_record_holds_ids_and_no_personal_data_of_the_visitor(kit, manager, visited):
    signed_in(manager).get(f"/dashboard/conversations/{visited.pk}/")
    [access] = _accesses(kit)
    stored = " ".join(str(getattr(access, f.attname)) for f in StaffAccess._meta.concrete_fields)
    assert EMAIL not in stored and "Sam" not in stored and "umbrella" not in stored
    # The line outlives the lead (an erasure removes it): no foreign key holds it back.
    visited.delete()
    from leads.models import Lead

    Lead.objects.filter(pk=access.lead_id).delete()
    assert StaffAccess.objects.get(pk=access.pk).lead_id == access.lead_id


def test_the_service_refuses_what_is_no_access(kit, manager):
    with pytest.raises(ValueError):
        record_staff_access(tenant=kit.tenant, livemode=True, user=manager, action="printed",
                            lead_id=uuid.uuid4())
    with pytest.raises(ValueError):
        record_staff_access(tenant=kit.tenant, livemode=True, user=manager,
                            action=StaffAccessAction.EXPORTED)
    exported = record_staff_access(tenant=kit.tenant, livemode=True, user=None,
                                   action=StaffAccessAction.EXPORTED, lead_id=uuid.uuid4())
    assert exported.user_label == ADMIN_TOKEN_LABEL and exported.conversation_id is None


# --- the Privacy page ---------------------------------------------------------------------------

def test_managers_see_who_saw_whom_and_when(kit, manager, rep, visited):
    signed_in(rep).get(f"/dashboard/conversations/{visited.pk}/")
    client = signed_in(manager)
    client.get(f"/dashboard/leads/{visited.lead_id}/")
    page = client.get("/dashboard/privacy/").content.decode()
    assert '<a href="/dashboard/privacy/" aria-current="page">Privacy</a>' in page
    newest, older = ROW.findall(page)
    mine = StaffAccess.objects.get(user=manager)
    assert newest == str(mine.pk)
    first = page.index(f'data-staff-access="{newest}"')
    second = page.index(f'data-staff-access="{older}"')
    assert "Mia" in page[first:second] and "Viewed the lead" in page[first:second]
    assert f'href="/dashboard/leads/{visited.lead_id}/"' in page[first:second]
    assert "Ray" in page[second:] and "Viewed a conversation" in page[second:]
    assert f'href="/dashboard/conversations/{visited.pk}/"' in page[second:]
    assert f"lead_{visited.lead_id.hex}" in page and f"conv_{visited.pk.hex}" in page
    assert EMAIL not in page and NAME not in page  # ids only, even here


def test_reps_are_sent_away_and_see_no_link(rep, visited):
    client = signed_in(rep)
    r = client.get("/dashboard/privacy/")
    assert r.status_code == 302 and r["Location"] == "/dashboard/"
    assert 'href="/dashboard/privacy/"' not in client.get("/dashboard/").content.decode()
    assert Client().get("/dashboard/privacy/")["Location"].startswith("/dashboard/login/")


def test_the_admin_token_reads_it_too(kit, manager, visited):
    signed_in(manager).get(f"/dashboard/leads/{visited.lead_id}/")
    admin = Client()
    admin.post("/dashboard/login/token/", {"token": kit.admin_token})
    page = admin.get("/dashboard/privacy/").content.decode()
    assert len(ROW.findall(page)) == 1 and "Mia" in page


def test_another_tenants_manager_and_the_test_mode_see_none_of_it(kit, manager, stranger,
                                                                  visited):
    ours = signed_in(manager)
    ours.get(f"/dashboard/leads/{visited.lead_id}/")
    assert len(ROW.findall(ours.get("/dashboard/privacy/").content.decode())) == 1  # the control
    theirs = signed_in(user_create(tenant=stranger.tenant, email="sam@stranger.test",
                                   role="manager", password=PASSWORD))
    page = theirs.get("/dashboard/privacy/").content.decode()
    assert ROW.findall(page) == [] and str(visited.lead_id) not in page
    assert "Nobody has opened a person's data yet." in page
    test_mode = signed_in(manager)
    test_mode.post("/dashboard/mode/", {"mode": "test"})
    page = test_mode.get("/dashboard/privacy/").content.decode()
    assert ROW.findall(page) == [] and str(visited.lead_id) not in page


def test_pages_of_25_newest_first_in_fixed_queries(kit, manager, django_assert_max_num_queries):
    start = timezone.now() - timedelta(hours=1)
    lead_ids = [uuid.uuid4() for _ in range(30)]
    for i, lead_id in enumerate(lead_ids):
        StaffAccess.objects.create(tenant=kit.tenant, livemode=True, user=manager,
                                   user_label="Mia", action="viewed", lead_id=lead_id,
                                   at=start + timedelta(seconds=i))
    client = signed_in(manager)
    client.get("/dashboard/")
    with django_assert_max_num_queries(8) as first:
        page = client.get("/dashboard/privacy/").content.decode()
    assert len(ROW.findall(page)) == 25 and "Page 1 of 2" in page
    assert page.index(lead_ids[29].hex) < page.index(lead_ids[28].hex)  # newest first
    assert 'href="?access_page=2#staff-access"' in page
    with django_assert_max_num_queries(len(first.captured_queries)):
        second = client.get("/dashboard/privacy/?access_page=2").content.decode()
    assert len(ROW.findall(second)) == 5 and lead_ids[0].hex in second
    assert lead_ids[29].hex not in second
