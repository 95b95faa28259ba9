"""Presence (docs/dashboard.md, "Availability and routing"): each open dashboard tab is a
connection; the first makes a person online, the last to close offline; idleness turns them
away and activity back; connections of a process that died expire and the sweeper sets their
person offline. Every change is a ``user.status_changed`` event. The browser side (the stream,
the header, idle and closing a tab in Chromium) is tests/dashboard/test_browser_presence.py."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from tenants.models import PresenceConnection
from tenants.presence import (
    CONNECTION_TTL,
    presence_activity,
    presence_connect,
    presence_disconnect,
    presence_refresh,
    presence_sweep,
)
from tests.chat_helpers import events
from tests.dashboard.client import Client, signed_in
from tests.factories import PASSWORD, UserFactory


def person(kit, **fields):
    user = UserFactory(tenant=kit.tenant, **fields)
    user.set_password(PASSWORD)
    user.save()
    return user


def status(user):
    user.refresh_from_db()
    return user.status


def changes(kit):
    return [(e.facts["previous"], e.facts["status"]) for e in events(kit, "user.status_changed")]


def test_tabs_count_the_first_makes_online_the_last_closed_offline(kit):
    rep = person(kit)
    first, _ = presence_connect(user_id=rep.pk)
    second, shown = presence_connect(user_id=rep.pk)
    assert shown == "online" and status(rep) == "online"
    presence_disconnect(connection_id=first)
    assert status(rep) == "online"  # another tab is still open
    presence_disconnect(connection_id=second)
    assert status(rep) == "offline"
    assert changes(kit) == [("offline", "online"), ("online", "offline")]
    assert not PresenceConnection.objects.exists()


def test_idle_turns_away_and_activity_brings_back(kit):
    kit.tenant.presence_idle_seconds = 60
    kit.tenant.save()
    rep = person(kit)
    start = timezone.now()
    connection, _ = presence_connect(user_id=rep.pk, now=start)
    assert presence_refresh(connection_id=connection, user_id=rep.pk,
                            now=start + timedelta(seconds=59)) == "online"
    assert presence_refresh(connection_id=connection, user_id=rep.pk,
                            now=start + timedelta(seconds=61)) == "away"
    presence_activity(user=rep, now=start + timedelta(seconds=62))
    assert status(rep) == "online"
    assert changes(kit) == [("offline", "online"), ("online", "away"), ("away", "online")]


def test_an_away_chosen_stays_whatever_the_activity(kit):
    rep = person(kit)
    connection, _ = presence_connect(user_id=rep.pk)
    client = signed_in(rep)
    client.post("/dashboard/presence/", {"status": "away"})
    assert status(rep) == "away"
    r = client.post("/dashboard/presence/activity/")
    assert r.status_code == 204 and status(rep) == "away"
    # A new tab does not undo it either; closing the last one does make them offline.
    other, shown = presence_connect(user_id=rep.pk)
    assert shown == "away"
    presence_disconnect(connection_id=connection)
    presence_disconnect(connection_id=other)
    assert status(rep) == "offline"


def test_the_connections_of_a_dead_process_expire_and_the_sweeper_sets_offline(kit):
    rep, other = person(kit), person(kit)
    start = timezone.now()
    presence_connect(user_id=rep.pk, now=start)  # its process dies: nobody disconnects it
    live, _ = presence_connect(user_id=other.pk, now=start)
    later = start + CONNECTION_TTL + timedelta(seconds=1)
    presence_refresh(connection_id=live, user_id=other.pk, now=later - timedelta(seconds=30))
    assert presence_sweep(now=later) == 1
    assert status(rep) == "offline" and status(other) == "online"
    assert list(PresenceConnection.objects.values_list("user_id", flat=True)) == [other.pk]
    assert presence_sweep(now=later) == 0  # twice is harmless


def test_a_stream_that_outlived_its_swept_row_counts_again(kit):
    rep = person(kit)
    start = timezone.now()
    connection, _ = presence_connect(user_id=rep.pk, now=start)
    presence_sweep(now=start + CONNECTION_TTL * 2)  # a stalled process: its row went
    assert status(rep) == "offline"
    assert presence_refresh(connection_id=connection, user_id=rep.pk,
                            now=start + CONNECTION_TTL * 2) == "online"
    assert PresenceConnection.objects.filter(pk=connection).exists()


def test_the_admin_token_has_no_status_and_no_stream(kit):
    client = Client()
    r = client.post("/dashboard/login/token/", {"token": kit.admin_token})
    assert r.status_code == 302
    r = client.post("/dashboard/presence/", {"status": "online"}, follow=True)
    assert b"has no status" in r.content
    assert client.get("/dashboard/live/").status_code == 204
    assert client.post("/dashboard/presence/activity/").status_code == 204


def test_strangers_are_sent_to_sign_in():
    client = Client()
    assert client.post("/dashboard/presence/", {"status": "online"}).status_code == 302
    assert client.post("/dashboard/presence/activity/").status_code == 302
    assert client.get("/dashboard/live/").status_code == 204
