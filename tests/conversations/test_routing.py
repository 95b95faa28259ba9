"""Routing handoffs by availability (docs/dashboard.md, "Availability and routing"): a handoff
goes only to someone online, within their working hours, active and under capacity; the rep
known for the lead first; otherwise it waits Unassigned while the visitor is told truthfully
when someone will reply, and whoever comes online is offered the oldest waiting handoffs.
Handoffs are asked for through ``POST /api/v1/chat``; people come online through the
dashboard."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from django.utils import timezone

from conversations.models import Conversation
from conversations.services import conversation_close
from conversations.services.routing import routing_sweep
from leads.services import lead_update
from tenants.presence import presence_connect
from tests.chat_helpers import chat, events
from tests.dashboard.client import signed_in
from tests.events import v1_data
from tests.factories import ALWAYS, PASSWORD, UserFactory, make_lead

ASK = "I want to talk to a human"


def ask(api, kit, visitor, **extra):
    r = chat(api, kit, ASK, visitor=visitor, **extra)
    assert r.status_code == 200 and r.json()["handoff"], r.text
    return r.json(), Conversation.objects.get(pk=uuid.UUID(hex=r.json()["sessionId"][5:]))


def person(kit, **fields):
    user = UserFactory(tenant=kit.tenant, **fields)
    user.set_password(PASSWORD)
    user.save()
    return user


def handoff_events(kit):
    return [v1_data(event) for event in events(kit, "conversation.handoff")]


def test_nobody_online_waits_unassigned_and_the_visitor_is_told_the_next_opening(api, kit):
    now = timezone.now()
    paris = now.astimezone(ZoneInfo("Europe/Paris"))
    start = (paris.hour + 3) % 24  # not now: three hours from now, every day, for an hour
    person(kit, status="online", timezone="Europe/Paris",
           working_hours={"days": list(range(7)), "start_hour": start, "end_hour": start + 1})
    person(kit, status="offline", working_hours=ALWAYS, is_active=False)  # left: no opening

    data, conversation = ask(api, kit, "v-night", metadata={"timezone": "America/New_York"})

    assert conversation.status == "handed_off" and conversation.assigned_to is None
    opening = paris.replace(hour=start, minute=0, second=0, microsecond=0)
    if opening <= now:
        opening += timedelta(days=1)
    local = opening.astimezone(ZoneInfo("America/New_York"))
    label = f"{local:%a} {local.day} {local:%b}, {local:%H:%M} (New York)"
    assert data["content"] == (
        f"Nobody from our team is available right now. The next opening is {label}: someone "
        "will reply here then. What's your email address, so that the answer reaches you even "
        "if you leave this page?")
    # The v1 event and webhook name nobody: the handoff was assigned to no one.
    [payload] = handoff_events(kit)
    assert "assignedTo" not in payload["conversation"]
    assert payload["conversation"]["status"] == "handed_off"


def test_a_visitor_who_gave_an_address_is_not_asked_again(api, kit):
    sid = chat(api, kit, "Hi, I'm Ann, ann@hooli.com", visitor="v-ann").json()["sessionId"]
    data = chat(api, kit, ASK, visitor="v-ann", session=sid).json()
    # Nobody works here at all: no time can be promised, and the address is known.
    assert data["content"] == ("Nobody from our team is available right now: someone will reply "
                               "here as soon as they can.")


def test_someone_in_hours_but_busy_is_said_so(api, kit):
    person(kit, status="away", working_hours=ALWAYS)
    data, conversation = ask(api, kit, "v-busy")
    assert conversation.assigned_to is None
    assert data["content"].startswith("Everyone on our team is busy right now: someone will "
                                      "reply here as soon as they are free.")


def test_the_unassigned_queue_lists_what_waits(api, kit, manager):
    _, waiting = ask(api, kit, "v-wait")
    page = signed_in(manager).get("/dashboard/conversations/?view=unassigned").content.decode()
    assert f"/dashboard/conversations/{waiting.pk}/" in page and "Unassigned" in page
    rep = person(kit, available=True)
    _, taken = ask(api, kit, "v-taken")
    assert taken.assigned_to == rep
    page = signed_in(manager).get("/dashboard/conversations/?view=unassigned").content.decode()
    assert f"/dashboard/conversations/{taken.pk}/" not in page
    assert f"/dashboard/conversations/{waiting.pk}/" in page


def test_a_rep_who_comes_online_is_offered_the_oldest_waiting_handoffs(
        api, kit, django_capture_on_commit_callbacks):
    rep = person(kit, working_hours=ALWAYS, capacity=2)  # offline
    waiting = [ask(api, kit, f"v-{i}")[1] for i in range(3)]
    assert all(c.assigned_to is None for c in waiting)

    with django_capture_on_commit_callbacks(execute=True):
        presence_connect(user_id=rep.pk)  # their first dashboard tab opens

    assigned = {c.pk: c.assigned_to_id for c in Conversation.objects.all()}
    # The two oldest, up to their capacity; the newest still waits.
    assert [assigned[c.pk] for c in waiting] == [rep.pk, rep.pk, None]
    offered = events(kit, "conversation.assigned")
    assert [e.conversation_id for e in offered] == [waiting[0].pk, waiting[1].pk]


def test_choosing_online_in_the_header_takes_a_waiting_handoff(
        api, kit, django_capture_on_commit_callbacks):
    rep = person(kit, working_hours=ALWAYS, status="away", status_chosen=True)
    _, conversation = ask(api, kit, "v-away")
    assert conversation.assigned_to is None
    client = signed_in(rep)
    with django_capture_on_commit_callbacks(execute=True):
        r = client.post("/dashboard/presence/", {"status": "online", "next": "/dashboard/"})
    assert r.status_code == 302
    conversation.refresh_from_db()
    assert conversation.assigned_to == rep
    rep.refresh_from_db()
    assert rep.status == "online" and not rep.status_chosen
    # And going away again takes nothing away, but new handoffs wait.
    client.post("/dashboard/presence/", {"status": "away"})
    _, later = ask(api, kit, "v-later")
    assert later.assigned_to is None


def test_a_bad_status_changes_nothing(kit):
    rep = person(kit, working_hours=ALWAYS, status="online")
    r = signed_in(rep).post("/dashboard/presence/", {"status": "offline"}, follow=True)
    assert b"Choose online or away." in r.content
    rep.refresh_from_db()
    assert rep.status == "online"


def test_capacity_holds_with_three_reps_and_ten_handoffs(api, kit):
    reps = [person(kit, available=True, capacity=capacity) for capacity in (2, 3, 4)]
    conversations = [ask(api, kit, f"v-{i}")[1] for i in range(10)]

    load = {rep.pk: Conversation.objects.filter(assigned_to=rep, status="handed_off").count()
            for rep in reps}
    assert load == {reps[0].pk: 2, reps[1].pk: 3, reps[2].pk: 4}
    [waiting] = [c for c in conversations if c.assigned_to is None]
    assert waiting == conversations[-1]  # the tenth: everyone was full
    # The events name whom each went to, and the last one nobody.
    payloads = handoff_events(kit)
    assert sum("assignedTo" in p["conversation"] for p in payloads) == 9
    assert "assignedTo" not in payloads[-1]["conversation"]

    # A rep closes one: the sweeper offers them the waiting handoff.
    closed = next(c for c in conversations if c.assigned_to == reps[0])
    conversation_close(conversation=closed, reason="closed_by_staff")
    assert routing_sweep() == 1
    waiting.refresh_from_db()
    assert waiting.assigned_to == reps[0]
    assert routing_sweep() == 0  # full again


def test_offline_away_out_of_hours_and_inactive_reps_are_never_assigned(api, kit):
    now = timezone.now()
    hour = now.astimezone(ZoneInfo("UTC")).hour
    elsewhere = {"days": list(range(7)), "start_hour": (hour + 2) % 23,
                 "end_hour": (hour + 2) % 23 + 1}
    person(kit, status="offline", working_hours=ALWAYS)
    person(kit, status="away", working_hours=ALWAYS)
    person(kit, status="online", working_hours=elsewhere)
    person(kit, status="online", working_hours=ALWAYS, is_active=False)
    for i in range(4):
        assert ask(api, kit, f"v-{i}")[1].assigned_to is None
    there = person(kit, available=True)
    assert ask(api, kit, "v-there")[1].assigned_to == there
    assert routing_sweep() == 4  # the ones that waited go to the one who is there
    assert set(Conversation.objects.values_list("assigned_to", flat=True)) == {there.pk}


def test_the_tenants_hours_apply_to_who_set_none(api, kit):
    from tenants.services import tenant_set_meetings

    zone = ZoneInfo("Asia/Tokyo")
    hour = datetime.now(zone).hour
    # The tenant works an hour that is not now: a rep without hours of their own is out of hours.
    tenant_set_meetings(tenant=kit.tenant, timezone_name="Asia/Tokyo", days=list(range(7)),
                        start_hour=(hour + 2) % 23, end_hour=(hour + 2) % 23 + 1, minutes=30,
                        booking_url="")
    person(kit, status="online")
    assert ask(api, kit, "v-1")[1].assigned_to is None
    tenant_set_meetings(tenant=kit.tenant, timezone_name="Asia/Tokyo", days=list(range(7)),
                        start_hour=0, end_hour=24, minutes=30, booking_url="")
    assert ask(api, kit, "v-2")[1].assigned_to is not None


def test_the_rep_known_for_the_lead_comes_first(api, kit):
    first = person(kit, available=True)
    known = person(kit, available=True)
    lead = make_lead(kit, email="kim@corp.io")
    lead_update(lead=lead, changes={"assigned_to_id": known.pk})
    sid = chat(api, kit, "Hi, I'm Kim, kim@corp.io", visitor="v-kim").json()["sessionId"]
    chat(api, kit, ASK, visitor="v-kim", session=sid)
    conversation = Conversation.objects.get(pk=uuid.UUID(hex=sid[5:]))
    assert conversation.lead == lead and conversation.assigned_to == known
    # Another visitor goes round-robin: to the one who waited longest.
    assert ask(api, kit, "v-other")[1].assigned_to == first


@pytest.mark.parametrize("mode", ["live", "test"])
def test_a_handoff_in_either_mode_counts_against_capacity(api, kit, mode):
    rep = person(kit, available=True, capacity=1)
    assert ask(api, kit, "v-1", mode=mode)[1].assigned_to == rep
    other = "test" if mode == "live" else "live"
    r = chat(api, kit, ASK, visitor="v-2", mode=other)
    conversation = Conversation.objects.get(pk=uuid.UUID(hex=r.json()["sessionId"][5:]))
    assert conversation.assigned_to is None  # a person's capacity is theirs, in both modes
