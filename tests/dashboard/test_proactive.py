"""Settings → Proactive messages (docs/dashboard.md, "Proactive messages"): managers add, edit,
turn off and delete the widget's proactive messages; a refused form comes back with the reason
beside each field and saves nothing; reps and other tenants cannot touch them."""

from __future__ import annotations

import pytest

from conversations.models import ProactiveMessage
from conversations.services import proactive_message_create
from tenants.services import user_create
from tests.dashboard.client import signed_in
from tests.dashboard.html import errors_beside, value_of
from tests.factories import PASSWORD

URL = "/dashboard/settings/proactive/"


@pytest.fixture
def manager(kit):
    return user_create(tenant=kit.tenant, email="mia@acme.test", first_name="Mia",
                       role="manager", password=PASSWORD)


def form(**fields):
    data = {"message": "Questions about pricing?", "url_pattern": "/pricing",
            "seconds_on_page": "0", "returning": "any", "priority": "10", "active": "on"}
    data.update(fields)
    return {k: v for k, v in data.items() if v is not None}


def test_a_manager_adds_edits_turns_off_and_deletes_one(kit, manager):
    client = signed_in(manager)
    assert b"Proactive messages" in client.get("/dashboard/settings/").content
    r = client.post(URL, form(), follow=True)
    assert r.status_code == 200 and b"Proactive message saved." in r.content
    row = ProactiveMessage.objects.get(tenant=kit.tenant)
    assert (row.message, row.url_pattern, row.seconds_on_page, row.returning, row.priority,
            row.active) == ("Questions about pricing?", "/pricing", 0, "any", 10, True)
    listing = client.get(URL).content.decode()
    assert "Questions about pricing?" in listing and "<code>/pricing</code>" in listing

    edit = client.get(f"{URL}{row.pk}/")
    assert value_of(edit.content, "id_url_pattern") == "/pricing"
    client.post(f"{URL}{row.pk}/", form(url_pattern="/docs/*/setup", seconds_on_page="15",
                                        returning="yes", active=None))
    row.refresh_from_db()
    assert (row.url_pattern, row.seconds_on_page, row.returning, row.active) == (
        "/docs/*/setup", 15, "yes", False)
    client.post(f"{URL}{row.pk}/toggle/")
    row.refresh_from_db()
    assert row.active is True
    client.post(f"{URL}{row.pk}/delete/")
    assert not ProactiveMessage.objects.filter(tenant=kit.tenant).exists()


@pytest.mark.parametrize(("fields", "field", "reason"), [
    ({"message": ""}, "message", "Write the message."),
    ({"message": "x" * 501}, "message", "At most 500 characters."),
    ({"url_pattern": "pricing"}, "url_pattern", "A path starting with /"),
    ({"url_pattern": "/pri cing"}, "url_pattern", "without spaces"),
    ({"url_pattern": "ftp://files.example/*"}, "url_pattern", "http:// or https://"),
    ({"url_pattern": "/" + "a" * 200}, "url_pattern", "At most 200 characters."),
    ({"url_pattern": "/*a*b*c*d*e*"}, "url_pattern", "At most 5 * in a pattern."),
    ({"seconds_on_page": "-1"}, "seconds_on_page", "From 0 to 3600."),
    ({"seconds_on_page": "3601"}, "seconds_on_page", "From 0 to 3600."),
    ({"seconds_on_page": "soon"}, "seconds_on_page", "Enter a whole number."),
    ({"priority": "1001"}, "priority", "From 0 to 1000."),
    ({"returning": "maybe"}, "returning", "Select a valid choice."),
    ({"url_pattern": "", "seconds_on_page": "0", "returning": "any"}, "url_pattern",
     "Give at least one condition"),
])
def test_a_refused_form_says_why_beside_the_field_and_saves_nothing(kit, manager, fields, field,
                                                                   reason):
    r = signed_in(manager).post(URL, form(**fields))
    assert r.status_code == 400
    assert reason in " ".join(errors_beside(r.content, f"id_{field}"))
    assert not ProactiveMessage.objects.filter(tenant=kit.tenant).exists()
    if fields.get("message"):
        assert value_of(r.content, "id_message").strip() == fields["message"]  # typed, kept


def test_an_edit_that_is_refused_keeps_the_row_as_it_was(kit, manager):
    row = proactive_message_create(tenant=kit.tenant, message="Hi", url_pattern="/pricing")
    r = signed_in(manager).post(f"{URL}{row.pk}/", form(url_pattern="no slash"))
    assert r.status_code == 400 and errors_beside(r.content, "id_url_pattern")
    row.refresh_from_db()
    assert row.url_pattern == "/pricing"


def test_reps_and_other_tenants_cannot_touch_them(kit, stranger, manager):
    rep = user_create(tenant=kit.tenant, email="ray@acme.test", first_name="Ray",
                      password=PASSWORD)
    row = proactive_message_create(tenant=kit.tenant, message="Hi", url_pattern="/pricing")
    r = signed_in(rep).post(URL, form(), follow=True)
    assert b"Only sales managers" in r.content
    assert ProactiveMessage.objects.filter(tenant=kit.tenant).count() == 1
    theirs = user_create(tenant=stranger.tenant, email="sam@stranger.test", first_name="Sam",
                         role="manager", password=PASSWORD)
    client = signed_in(theirs)
    assert client.get(f"{URL}{row.pk}/").status_code == 404
    assert client.post(f"{URL}{row.pk}/delete/").status_code == 404
    assert client.post(f"{URL}{row.pk}/toggle/").status_code == 404
    assert b"Hi" not in client.get(URL).content.split(b"<main")[-1]
    row.refresh_from_db()
    assert row.active is True
