"""Saved views of the list of leads: a named filter and order, personal or shared with the team,
chosen from the list's dropdown; only its owner (or a manager, for a shared one) deletes it; a
stranger never sees one."""

from __future__ import annotations

import re

import pytest

from leads.models import SavedView
from tenants.services import user_create
from tests.dashboard.client import Client, signed_in
from tests.factories import PASSWORD, make_lead

ROW = re.compile(r'href="/dashboard/leads/([0-9a-f-]{36})/"')


@pytest.fixture
def leads(kit):
    return {
        "low": make_lead(kit, email="low@globex.example", company="Globex", status="qualified",
                         source="form"),
        "other": make_lead(kit, email="chat@globex.example", company="Globex", source="chat"),
        "ivy": make_lead(kit, email="ivy@initech.example", company="Initech", status="qualified",
                         source="form"),
    }


def _save(client, **data):
    return client.post("/dashboard/leads/views/", {"next": "/dashboard/leads/", **data})


def _shown(page: str) -> list[str]:
    return ROW.findall(page)


def test_a_view_saves_the_filter_and_order_and_shows_them(kit, rep, leads):
    client = signed_in(rep)
    response = _save(client, name="Qualified from forms", status="qualified", source="form",
                     sort="oldest")
    view = SavedView.objects.get()
    assert response["Location"] == f"/dashboard/leads/?view={view.pk}"
    assert (view.owner, view.shared, view.status, view.source, view.sort) == (
        rep, False, "qualified", "form", "oldest")
    page = client.get(f"/dashboard/leads/?view={view.pk}").content.decode()
    assert _shown(page) == [str(leads["low"].pk), str(leads["ivy"].pk)]  # oldest first
    assert f'<option value="{view.pk}" selected>Qualified from forms</option>' in page
    assert '<option value="oldest" selected>Oldest first</option>' in page
    # Saved again under its name, the view is updated, not doubled.
    _save(client, name="Qualified from forms", q="globex", status="qualified", source="form")
    view.refresh_from_db()
    assert SavedView.objects.count() == 1 and view.q == "globex" and view.sort == "newest"
    page = client.get(f"/dashboard/leads/?view={view.pk}").content.decode()
    assert _shown(page) == [str(leads["low"].pk)]


def test_a_personal_view_is_its_owners_and_a_shared_one_the_teams(kit, stranger, rep, manager,
                                                                   leads):
    _save(signed_in(rep), name="Mine only", q="initech")
    _save(signed_in(rep), name="For everyone", status="qualified", shared="1")
    mine, shared = SavedView.objects.get(name="Mine only"), SavedView.objects.get(shared=True)
    colleague = signed_in(manager)
    page = colleague.get("/dashboard/leads/").content.decode()
    assert "For everyone · shared" in page and "Mine only" not in page
    response = colleague.get(f"/dashboard/leads/?view={mine.pk}", follow=True)
    assert "That view does not exist (any more)." in response.content.decode()
    assert len(_shown(response.content.decode())) == 3  # the list, unfiltered
    outsider = signed_in(user_create(tenant=stranger.tenant, email="eve@stranger.test",
                                     role="manager", password=PASSWORD))
    page = outsider.get(f"/dashboard/leads/?view={shared.pk}").content.decode()
    assert "For everyone" not in page and "That view does not exist" in page
    assert outsider.post(f"/dashboard/leads/views/{shared.pk}/delete/").status_code == 404
    # The admin token's views are its own too.
    admin = Client()
    admin.post("/dashboard/login/token/", {"token": kit.admin_token})
    _save(admin, name="Administrator's")
    assert SavedView.objects.get(name="Administrator's").owner is None
    assert "Administrator&#x27;s" not in signed_in(rep).get("/dashboard/leads/").content.decode()
    assert "Administrator&#x27;s" in admin.get("/dashboard/leads/").content.decode()


def test_who_may_delete_a_view(kit, rep, manager, leads):
    other_rep = user_create(tenant=kit.tenant, email="rob@acme.test", first_name="Rob",
                            password=PASSWORD)
    _save(signed_in(rep), name="Shared by Ray", shared="1")
    view = SavedView.objects.get()
    response = signed_in(other_rep).post(f"/dashboard/leads/views/{view.pk}/delete/", follow=True)
    assert "Only its owner, or a manager for a shared view" in response.content.decode()
    assert SavedView.objects.filter(pk=view.pk).exists()
    response = signed_in(manager).post(f"/dashboard/leads/views/{view.pk}/delete/", follow=True)
    assert "View “Shared by Ray” deleted." in response.content.decode()
    assert not SavedView.objects.exists()


@pytest.mark.parametrize("data, message", [
    ({"name": " "}, "name it"),
    ({"name": "x" * 81}, "At most 80 characters."),
    ({"name": "ok", "status": "bogus"}, "Choose one of the listed statuses."),
    ({"name": "ok", "sort": "random"}, "Choose one of the listed orders."),
])
def test_a_refused_view_is_not_saved_and_says_why(kit, rep, data, message):
    response = signed_in(rep).post("/dashboard/leads/views/",
                                   {"next": "/dashboard/leads/", **data}, follow=True)
    assert message in response.content.decode()
    assert not SavedView.objects.exists()
