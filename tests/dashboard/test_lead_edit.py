"""Editing a lead on its page: every field a person may change goes through ``lead_update`` (its
events fire as for the API), a refusal comes back beside its field, and another tenant's or
mode's lead is 404."""

from __future__ import annotations

import re

import pytest

from core.models import Event
from leads.models import Lead
from tests.dashboard.client import signed_in
from tests.factories import make_lead


def _form(lead, custom: dict | None = None, **changes) -> dict:
    """The edit form as the page sends it (the custom fields in the order the database gives
    them), with ``changes`` typed in; ``custom`` sets the value of a custom field by its name
    (None empties its row), or adds it in the first empty row."""
    lead.refresh_from_db()
    data = {"email": lead.email, "name": lead.name, "company": lead.company, "title": lead.title,
            "phone": lead.phone, "tags": ", ".join(lead.tags), "owner": str(lead.assigned_to_id or "")}
    items = list(lead.custom_fields.items())
    for number, (key, value) in enumerate(items):
        data[f"cf_key_{number}"], data[f"cf_value_{number}"] = key, str(value)
    added = len(items)
    for key, value in (custom or {}).items():
        number = next((n for n, (k, _) in enumerate(items) if k == key), None)
        if number is None:
            number, added = added, added + 1
        data[f"cf_key_{number}"] = "" if value is None else key
        data[f"cf_value_{number}"] = "" if value is None else value
    data.update(changes)
    return data


@pytest.fixture
def lead(kit):
    return make_lead(kit, email="olga@initech.example", name="Olga", company="Initech",
                     tags=["trade-show"], custom_fields={"industry": "retail", "seats": 40})


def test_every_field_is_saved_through_the_service_and_its_events_fire(kit, rep, manager, lead):
    client = signed_in(rep)
    page = client.get(f"/dashboard/leads/{lead.pk}/edit/").content.decode()
    assert 'value="olga@initech.example"' in page and 'value="trade-show"' in page
    assert 'value="industry"' in page and 'value="40"' in page  # the number, as JSON
    form = _form(lead, name="Olga Petrova", company="Initech GmbH", title="CTO",
                 phone="+49301234567", tags="trade-show, vip", owner=str(manager.pk),
                 custom={"industry": "banking", "seats": "45", "region": "EMEA"})
    response = client.post(f"/dashboard/leads/{lead.pk}/edit/", form)
    assert response.status_code == 302 and response["Location"] == f"/dashboard/leads/{lead.pk}/"
    lead.refresh_from_db()
    assert (lead.name, lead.company, lead.title, lead.phone) == (
        "Olga Petrova", "Initech GmbH", "CTO", "+49301234567")
    assert lead.tags == ["trade-show", "vip"] and lead.assigned_to_id == manager.pk
    # A value that was a number stays one while it reads as one; new fields are text.
    assert lead.custom_fields == {"industry": "banking", "seats": 45, "region": "EMEA"}
    event = Event.objects.filter(lead_id=lead.pk, type="lead.updated").latest("occurred_at")
    assert set(event.facts["previous"]) >= {"name", "company", "title", "phone", "tags",
                                            "custom_fields", "assigned_to_id"}
    detail = client.get(f"/dashboard/leads/{lead.pk}/").content.decode()
    assert "Saved: name, company, title, phone, tags, custom fields, assigned to." in detail
    assert "Mia" in detail and "EMEA" in detail


def test_a_custom_field_emptied_is_removed_and_nothing_changed_writes_nothing(kit, rep, lead):
    client = signed_in(rep)
    before = Event.objects.filter(lead_id=lead.pk).count()
    response = client.post(f"/dashboard/leads/{lead.pk}/edit/", _form(lead), follow=True)
    assert "Nothing changed." in response.content.decode()
    assert Event.objects.filter(lead_id=lead.pk).count() == before
    client.post(f"/dashboard/leads/{lead.pk}/edit/", _form(lead, custom={"seats": None}))
    lead.refresh_from_db()
    assert lead.custom_fields == {"industry": "retail"}


@pytest.mark.parametrize("changes, field, message", [
    ({"name": "x" * 201}, "name", "At most 200 characters."),
    ({"company": "Initech\nGmbH"}, "company", "Line breaks, tabs and other control characters"),
    ({"email": "not an address"}, "email", "valid email"),
    ({"tags": ", ".join(f"t{i}" for i in range(51))}, "tags", "At most 50 tags."),
    ({"cf_key_2": "", "cf_value_2": "orphan"}, "cf_key_2", "Name the field."),
], ids=["name too long", "line break", "email", "51 tags", "value without a name"])
def test_a_refusal_comes_back_beside_its_field_and_nothing_is_saved(kit, rep, lead, changes,
                                                                     field, message):
    client = signed_in(rep)
    response = client.post(f"/dashboard/leads/{lead.pk}/edit/", _form(lead, **changes))
    assert response.status_code == 400
    page = response.content.decode()
    # The field's own box: up to the next field's (a custom row's key: its own box).
    block = re.search(rf'id="field-{field}".*?(?=id="field-|<fieldset)', page, re.S) or re.search(
        rf'name="{field}".*?</div>', page, re.S)
    assert block and message in block.group(0), page
    lead.refresh_from_db()
    assert lead.name == "Olga" and lead.company == "Initech"


def test_an_address_of_another_lead_is_refused_with_a_link_to_it(kit, rep, lead):
    other = make_lead(kit, email="sam@initech.example")
    response = signed_in(rep).post(f"/dashboard/leads/{lead.pk}/edit/",
                                   _form(lead, email="SAM@initech.example"))
    assert response.status_code == 400
    page = response.content.decode()
    assert "Another lead has this address." in page and f"/dashboard/leads/{other.pk}/" in page
    assert Lead.objects.get(pk=lead.pk).email == "olga@initech.example"


def test_an_owner_must_be_of_the_team(kit, stranger, rep, lead):
    from tenants.services import user_create

    outsider = user_create(tenant=stranger.tenant, email="eve@stranger.test", first_name="Eve")
    response = signed_in(rep).post(f"/dashboard/leads/{lead.pk}/edit/",
                                   _form(lead, owner=str(outsider.pk)))
    assert response.status_code == 400 and "Select a valid choice" in response.content.decode()
    assert Lead.objects.get(pk=lead.pk).assigned_to_id is None


def test_another_tenants_or_modes_lead_is_404(kit, stranger, rep, lead):
    theirs = make_lead(stranger, email="x@stranger.example")
    test_mode = make_lead(kit, mode="test", email="t@initech.example")
    client = signed_in(rep)
    for other in (theirs, test_mode):
        assert client.get(f"/dashboard/leads/{other.pk}/edit/").status_code == 404
        assert client.post(f"/dashboard/leads/{other.pk}/edit/",
                           _form(other, name="Hacked")).status_code == 404
        other.refresh_from_db()
        assert other.name != "Hacked"
