"""A lead's page: Export data for the staff, Erase this person for managers, after a
confirmation that names what goes."""

from __future__ import annotations

import json

import pytest

from conversations.models import Conversation
from leads.models import Lead
from privacy.models import Erasure
from tenants.models import StaffAccess
from tests.chat_helpers import chat
from tests.dashboard.client import signed_in

from .scan import traces


@pytest.fixture
def sam(api, kit):
    sid = chat(api, kit, "Hi, I'm Sam Quill, sam.quill@umbrella.io", visitor="v-sam").json()["sessionId"]
    chat(api, kit, "We evaluate telescopes for the observatory", session=sid, visitor="v-sam")
    return Lead.objects.get(email="sam.quill@umbrella.io")


def test_a_rep_exports_the_persons_data(kit, rep, sam):
    from conversations.services import note_create

    note_create(tenant=kit.tenant, livemode=True, author=rep, lead=sam,
                content="Wants the orbital model")
    client = signed_in(rep)
    page = client.get(f"/dashboard/leads/{sam.pk}/")
    assert b"Export data" in page.content and b"Erase this person" not in page.content
    r = client.get(f"/dashboard/leads/{sam.pk}/export/")
    assert r.status_code == 200 and r["Content-Disposition"].startswith("attachment;")
    doc = json.loads(r.content)
    assert doc["leads"][0]["email"] == "sam.quill@umbrella.io"
    assert "We evaluate telescopes for the observatory" in r.content.decode()
    assert [(n["content"], n["author"]["name"]) for n in doc["notes"]] == [
        ("Wants the orbital model", rep.display_name)]


def test_a_rep_may_not_erase(kit, rep, sam):
    client = signed_in(rep)
    assert client.get(f"/dashboard/leads/{sam.pk}/erase/").status_code == 302
    assert client.post(f"/dashboard/leads/{sam.pk}/erase/").status_code == 302
    assert Lead.objects.filter(pk=sam.pk).exists() and not Erasure.objects.exists()


def test_a_manager_erases_after_a_confirmation_naming_what_goes(kit, manager, sam):
    client = signed_in(manager)
    confirm = client.get(f"/dashboard/leads/{sam.pk}/erase/")
    assert confirm.status_code == 200
    text = confirm.content.decode()
    assert "sam.quill@umbrella.io" in text and "<strong>1</strong> conversation" in text
    assert "<strong>4</strong> messages" in text
    assert Lead.objects.filter(pk=sam.pk).exists()  # asking erases nothing

    done = client.post(f"/dashboard/leads/{sam.pk}/erase/", follow=True)
    assert done.redirect_chain[-1][0] == "/dashboard/leads/"
    assert "Erased: 1 lead, 1 conversation(s), 4 message(s)" in done.content.decode()
    assert not Conversation.objects.filter(visitor_id="v-sam").exists()
    assert traces(["sam.quill@umbrella.io", "Sam Quill", "telescopes for the observatory"]) == []
    erasure = Erasure.objects.get()
    assert erasure.requested_by == manager.display_name and erasure.status == "completed"
    # The Privacy page says it happened, by whom and what went, and names nobody.
    page = client.get("/dashboard/privacy/").content.decode()
    assert f'data-erasure="{erasure.pk}"' in page and manager.display_name in page
    assert "1 lead, 1 conversation, 4 messages" in page and "sam.quill" not in page
    assert StaffAccess.objects.filter(action="erased", lead_id=sam.pk, user=manager).exists()


def test_an_export_is_in_the_staff_access_audit(kit, rep, manager, sam):
    signed_in(rep).get(f"/dashboard/leads/{sam.pk}/export/")
    access = StaffAccess.objects.get(action="exported")
    assert access.lead_id == sam.pk and access.user == rep
    page = signed_in(manager).get("/dashboard/privacy/").content.decode()
    assert f'data-staff-access="{access.pk}"' in page and "Exported" in page


def test_another_tenants_lead_is_not_found(kit, stranger, manager, sam):
    from tests.factories import make_lead

    theirs = make_lead(stranger, email="x@example.com")
    client = signed_in(manager)
    assert client.get(f"/dashboard/leads/{theirs.pk}/export/").status_code == 404
    assert client.post(f"/dashboard/leads/{theirs.pk}/erase/").status_code == 404
    assert Lead.objects.filter(pk=theirs.pk).exists()
