"""My availability (time zone, working hours, capacity) and the team's idle time on Settings
(docs/dashboard.md, "Availability and routing"): saved through the services, refused input
shown again with its reasons and nothing changed, each person's own, read back by the API."""

from __future__ import annotations

import zoneinfo

import pytest

from tests.dashboard.client import Client, signed_in
from tests.dashboard.html import errors_beside, value_of
from tests.dashboard.html import page as parsed
from tests.factories import UserFactory

PAGE = "/dashboard/profile/availability/"  # where the form posts; a visit leads to the section
PROFILE = "/dashboard/profile/"


def test_a_rep_sets_their_own_zone_hours_and_capacity(api, kit, rep):
    client = signed_in(rep)
    r = client.get(PAGE)
    assert r.status_code == 302 and r["Location"] == PROFILE + "#availability"
    page = client.get(PROFILE).content.decode()
    assert 'id="availability"' in page and 'action="/dashboard/profile/availability/"' in page
    assert "Without your own hours, the team's apply: Mon, Tue, Wed, Thu, Fri 09:00–17:00 (UTC)" in page
    r = client.post(PAGE, {"timezone": "Europe/Paris", "own_hours": "on", "days": ["0", "2"],
                           "start_hour": "8", "end_hour": "12", "capacity": "3"}, follow=True)
    assert b"Your availability is saved." in r.content
    rep.refresh_from_db()
    assert (rep.timezone, rep.working_hours, rep.capacity) == (
        "Europe/Paris", {"days": [0, 2], "start_hour": 8, "end_hour": 12}, 3)
    shown = api.get(f"/api/v1/users/user_{rep.pk.hex}", headers=kit.auth("read")).json()
    assert shown["timezone"] == "Europe/Paris" and shown["status"] == "offline"
    # Back to the team's hours: the box unticked.
    client.post(PAGE, {"timezone": "", "days": ["0"], "start_hour": "9", "end_hour": "17",
                       "capacity": "3"})
    rep.refresh_from_db()
    assert rep.working_hours is None and rep.timezone == ""


def test_refused_input_changes_nothing(rep):
    client = signed_in(rep)
    for bad in ({"timezone": "Mars/Base", "capacity": "3"},
                {"timezone": "", "capacity": "0"},
                {"timezone": "", "capacity": "3", "own_hours": "on", "days": [],
                 "start_hour": "9", "end_hour": "17"},
                {"timezone": "", "capacity": "3", "own_hours": "on", "days": ["1"],
                 "start_hour": "17", "end_hour": "9"}):
        r = client.post(PAGE, {"start_hour": "9", "end_hour": "17", **bad})
        assert r.status_code == 400, bad
        assert b'class="errorlist' in r.content, bad
        assert b"<h1>My profile</h1>" in r.content, bad  # the whole page, the section refused
    rep.refresh_from_db()
    assert (rep.timezone, rep.working_hours, rep.capacity) == ("", None, 5)


def test_the_admin_token_has_no_availability_and_strangers_sign_in(kit):
    client = Client()
    client.post("/dashboard/login/token/", {"token": kit.admin_token})
    r = client.get(PAGE, follow=True)
    assert b"sign in as a person to set your availability" in r.content
    assert Client().get(PAGE).status_code == 302


def test_a_manager_sets_the_teams_idle_time(kit, manager, rep):
    r = signed_in(manager).post("/dashboard/settings/presence/", {"idle_minutes": "3"},
                                follow=True)
    assert b"Presence saved." in r.content
    kit.tenant.refresh_from_db()
    assert kit.tenant.presence_idle_seconds == 180
    r = signed_in(manager).post("/dashboard/settings/presence/", {"idle_minutes": "0"})
    assert r.status_code == 400
    r = signed_in(rep).post("/dashboard/settings/presence/", {"idle_minutes": "1"})
    assert r.status_code == 302  # reps do not manage the team's settings
    kit.tenant.refresh_from_db()
    assert kit.tenant.presence_idle_seconds == 180


def test_the_header_shows_my_status_and_the_unread_handoffs(api, kit, rep):
    from tests.chat_helpers import chat
    from tests.factories import make_available

    make_available(rep)
    page = signed_in(rep).get("/dashboard/").content.decode()
    assert 'data-presence-label>Online<' in page and 'data-unread' in page
    assert 'data-unread title="Handoffs given to you that you have not joined yet" hidden' in page
    chat(api, kit, "I want to talk to a human")
    page = signed_in(rep).get("/dashboard/").content.decode()
    assert 'not joined yet">1</span>' in page
    stranger = UserFactory(tenant=kit.tenant)
    assert 'not joined yet" hidden>0</span>' in signed_in(stranger).get("/dashboard/").content.decode()


@pytest.mark.parametrize(("page", "action", "extra"), [
    (PROFILE, PAGE, {"start_hour": "9", "end_hour": "17", "capacity": "3"}),
    ("/dashboard/settings/", "/dashboard/settings/meetings/",
     {"days": ["0"], "start_hour": "9", "end_hour": "17", "minutes": "30"}),
])
def test_a_time_zone_is_picked_from_a_list_of_every_zone(kit, manager, page, action, extra):
    """Issue 29: a free-text box for the time zone. Each is now a box with the list of every
    IANA zone the server knows (a <datalist>: the browser offers the zones matching what is
    typed); the server takes only those, in any case."""
    client = signed_in(manager)
    content = client.get(page).content
    (box,) = parsed(content).xpath("//input[@id='id_timezone']")
    (zones,) = parsed(content).xpath(f"//datalist[@id='{box.get('list')}']")
    offered = [option.get("value") for option in zones.xpath("./option")]
    assert offered == sorted(zoneinfo.available_timezones() - {"localtime", "Factory"})
    assert {"Europe/Paris", "America/New_York", "Asia/Kolkata", "UTC"} <= set(offered)

    r = client.post(action, {"timezone": "Mars/Olympus_Mons", **extra})
    assert r.status_code == 400
    assert errors_beside(r.content, "id_timezone") == [
        "Choose a time zone from the list, such as Europe/Paris or America/New_York."]
    assert value_of(r.content, "id_timezone") == "Mars/Olympus_Mons"  # kept, to correct
    r = client.post(action, {"timezone": " america/new_york ", **extra})
    assert r.status_code == 302
    manager.refresh_from_db()
    kit.tenant.refresh_from_db()
    assert "America/New_York" in (manager.timezone, kit.tenant.meeting_timezone)
