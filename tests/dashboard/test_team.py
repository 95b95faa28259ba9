"""The Team page over HTTP (docs/dashboard.md, "Team"): the list (one query for the open
handoffs, whatever the team's size), invitations (emailed over real SMTP, shown once, resent,
revoked; every dead link says why), roles and the last manager, deactivation (sessions end,
sign-in refused, handoffs reassigned through the availability-aware routing or left in the
Unassigned queue, the lead's history tells who), the
events with their actor, and a stranger's ids (404)."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from conversations.models import Conversation
from conversations.services.routing import routing_sweep
from core.models import Event
from tenants.models import Invitation, User
from tenants.services import user_create
from tests.chat_helpers import chat
from tests.dashboard.client import Client, signed_in
from tests.factories import PASSWORD, make_available

GOOD_PASSWORD = "plum-orchard-47-lantern"


def _invite(client, email="nia@acme.test", role="rep"):
    return client.post("/dashboard/team/invite/", {"email": email, "role": role})


def _link(client, response) -> str:
    """The invitation link the page after the invite shows once."""
    assert response.status_code == 302, response.content.decode()[:500]
    page = client.get(response["Location"]).content.decode()
    found = re.search(r'id="invitation-link">([^<]+)<', page)
    assert found, page
    return found.group(1).replace("http://testserver", "")


def _handoff(api, kit, visitor: str) -> Conversation:
    chat(api, kit, "I want to talk to a human", visitor=visitor)
    return Conversation.objects.get(tenant=kit.tenant, visitor_id=visitor)


# --- the page -----------------------------------------------------------------------------------

def test_the_team_page_lists_people_with_role_and_open_handoffs(api, kit, manager, rep):
    make_available(manager)
    make_available(rep)
    conversation = _handoff(api, kit, "v-1")
    rep.status = "away"
    rep.save(update_fields=["status"])
    page = signed_in(manager).get("/dashboard/team/").content.decode()
    assert "Mia" in page and "Ray" in page and "ray@acme.test" in page
    assert "Sales manager" in page and "Sales rep" in page
    row = re.search(rf'data-member="{conversation.assigned_to_id}".*?</tr>', page, re.S).group(0)
    assert '<td class="handoffs">1</td>' in row
    # Each person's presence beside their role.
    for person, shown in ((manager, "Online"), (rep, "Away")):
        row = re.search(rf'data-member="{person.pk}".*?</tr>', page, re.S).group(0)
        assert f'data-member-status="{person.status}"><span class="status-dot {person.status}"' in row
        assert shown in row


def test_the_list_costs_the_same_queries_whatever_the_team(api, kit, manager,
                                                          django_assert_max_num_queries):
    client = signed_in(manager)
    client.get("/dashboard/team/")
    make_available(manager)
    for n in range(8):
        make_available(user_create(tenant=kit.tenant, email=f"rep{n}@acme.test",
                                   first_name=f"Rep{n}"))
    for n in range(6):
        _handoff(api, kit, f"v-{n}")
    with django_assert_max_num_queries(10):
        r = client.get("/dashboard/team/")
    page = r.content.decode()
    assert r.status_code == 200 and page.count("data-member=") == 9
    counts = re.findall(r'<td class="handoffs">(\d+)</td>', page)
    assert sum(map(int, counts)) == 6


def test_reps_are_sent_away_and_strangers_need_to_sign_in(rep):
    r = signed_in(rep).get("/dashboard/team/")
    assert r.status_code == 302 and r["Location"] == "/dashboard/"
    r = signed_in(rep).post("/dashboard/team/invite/", {"email": "x@acme.test", "role": "rep"})
    assert r.status_code == 302 and not Invitation.objects.exists()
    assert Client().get("/dashboard/team/").status_code == 302


def test_the_admin_token_runs_the_team(kit, rep):
    client = Client()
    client.post("/dashboard/login/token/", {"token": kit.admin_token})
    assert client.get("/dashboard/team/").status_code == 200
    r = client.post(f"/dashboard/team/members/{rep.pk}/role/", {"role": "manager"})
    assert r.status_code == 302
    rep.refresh_from_db()
    assert rep.role == "manager"
    event = Event.objects.get(type="team.role_changed")
    assert event.facts["actor"] == {"id": None, "name": "Administrator (admin token)"}


# --- invitations --------------------------------------------------------------------------------

def test_an_invitation_is_emailed_shown_once_and_accepted(kit, manager, smtp, send_emails,
                                                          django_capture_on_commit_callbacks):
    client = signed_in(manager)
    with django_capture_on_commit_callbacks(execute=True):
        r = _invite(client)
    link = _link(client, r)
    # Shown once: the reload says so and shows no link.
    again = client.get(r["Location"]).content.decode()
    assert "invitation-link-gone" in again and link not in again
    # The email went through the outbound path to the SMTP server, with the same link.
    received = smtp.wait_for(1)
    assert received[0].to == "nia@acme.test" and "Mia invites you" in received[0].message["Subject"]
    assert link in received[0].text()
    invitation = Invitation.objects.get()
    assert invitation.token_hash and link.split("/")[-2] not in invitation.token_hash
    assert invitation.expires_at - invitation.created_at == timedelta(days=7)

    visitor = Client()
    assert "Join Acme Inc" in visitor.get(link).content.decode()
    r = visitor.post(link, {"first_name": "Nia", "last_name": "New", "password1": GOOD_PASSWORD,
                            "password2": GOOD_PASSWORD})
    assert r.status_code == 302 and r["Location"] == "/dashboard/"
    assert visitor.get("/dashboard/").status_code == 200
    nia = User.objects.get(username="nia@acme.test")
    assert (nia.tenant, nia.role, nia.first_name) == (kit.tenant, "rep", "Nia")
    types = list(Event.objects.filter(type__startswith="team.").order_by("occurred_at")
                 .values_list("type", flat=True))
    assert types == ["team.member_invited", "team.member_joined"]
    # Single use.
    r = Client().get(link)
    assert r.status_code == 410 and "was used already" in r.content.decode()


def test_an_invitation_from_the_admin_token_comes_from_the_tenant(kit, smtp, send_emails,
                                                                  django_capture_on_commit_callbacks):
    """Issue 29: the email said "Administrator (admin token) invites you", words that mean
    nothing to the person invited: the tenant invites them then."""
    client = Client()
    client.post("/dashboard/login/token/", {"token": kit.admin_token})
    with django_capture_on_commit_callbacks(execute=True):
        _link(client, _invite(client))
    (received,) = smtp.wait_for(1)
    assert received.message["Subject"] == "Acme Inc invites you to its sales team"
    html = received.message.get_body(("html",)).get_content()
    for body in (received.text(), html):
        assert "Administrator" not in body and "admin token" not in body
    assert "Acme Inc invites you to join its sales team on the dashboard, as sales rep." in received.text()
    assert "<strong>Acme Inc</strong> invites you to join its sales team" in html
    # The team's activity still says who acted.
    assert Event.objects.get(type="team.member_invited").facts["actor"]["name"] == (
        "Administrator (admin token)")


def test_django_password_validators_apply_when_accepting(manager):
    client = signed_in(manager)
    link = _link(client, _invite(client))
    r = Client().post(link, {"first_name": "Nia", "password1": "12345678", "password2": "12345678"})
    assert r.status_code == 400
    page = r.content.decode()
    assert "This password is too common." in page and "entirely numeric" in page
    assert not User.objects.filter(username="nia@acme.test").exists()
    r = Client().post(link, {"first_name": "Nia", "password1": GOOD_PASSWORD, "password2": "other"})
    assert r.status_code == 400 and "The two passwords differ." in r.content.decode()


def test_inviting_someone_who_has_an_account_is_a_field_error(manager, rep):
    r = _invite(signed_in(manager), email="RAY@acme.test")
    assert r.status_code == 400
    assert "already has an account in your team" in r.content.decode()
    assert not Invitation.objects.exists()
    r = _invite(signed_in(manager), email="not-an-email")
    assert r.status_code == 400 and not Invitation.objects.exists()


def test_expired_revoked_resent_and_altered_links_say_so(manager):
    client = signed_in(manager)
    first = _link(client, _invite(client, email="old@acme.test"))
    Invitation.objects.filter(email="old@acme.test").update(
        expires_at=timezone.now() - timedelta(seconds=1))
    r = Client().get(first)
    assert r.status_code == 410 and "has expired" in r.content.decode()
    r = Client().post(first, {"first_name": "O", "password1": GOOD_PASSWORD,
                              "password2": GOOD_PASSWORD})
    assert r.status_code == 410 and not User.objects.filter(username="old@acme.test").exists()

    # Resend: a new link that works, and the old one says a newer email was sent.
    invitation = Invitation.objects.get(email="old@acme.test")
    second = _link(client, client.post(f"/dashboard/team/invitations/{invitation.pk}/resend/"))
    assert second != first and Client().get(second).status_code == 200
    r = Client().get(first)
    assert r.status_code == 410 and "sent again" in r.content.decode()

    r = client.post(f"/dashboard/team/invitations/{invitation.pk}/revoke/")
    assert r.status_code == 302
    r = Client().get(second)
    assert r.status_code == 410 and "was revoked" in r.content.decode()
    r = client.post(f"/dashboard/team/invitations/{invitation.pk}/resend/")
    assert r.status_code == 409 and "revoked" in r.content.decode()

    altered = second[:-3] + ("aaa" if not second.endswith("aaa/") else "bbb") + "/"
    r = Client().get(altered)
    assert r.status_code == 404 and "not valid" in r.content.decode()
    assert list(Event.objects.filter(type__startswith="team.").order_by("occurred_at")
                .values_list("type", flat=True)) == [
        "team.member_invited", "team.invitation_resent", "team.invitation_revoked"]


# --- roles ---------------------------------------------------------------------------------------

def test_the_last_manager_cannot_be_made_a_rep(manager, rep):
    client = signed_in(manager)
    r = client.post(f"/dashboard/team/members/{manager.pk}/role/", {"role": "rep"})
    assert r.status_code == 400 and "needs an active manager" in r.content.decode()
    manager.refresh_from_db()
    assert manager.role == "manager" and not Event.objects.filter(type__startswith="team.").exists()
    assert client.post(f"/dashboard/team/members/{rep.pk}/role/", {"role": "manager"}).status_code == 302
    assert client.post(f"/dashboard/team/members/{manager.pk}/role/", {"role": "rep"}).status_code == 302
    manager.refresh_from_db()
    assert manager.role == "rep"
    event = Event.objects.filter(type="team.role_changed").latest("occurred_at")
    assert event.facts["actor"]["name"] == "Mia" and event.facts["previous_role"] == "manager"
    r = client.post(f"/dashboard/team/members/{rep.pk}/role/", {"role": "boss"})
    assert r.status_code == 302  # Mia is a rep now: the page is not hers any more


def test_the_last_active_manager_cannot_be_deactivated(kit, manager):
    client = Client()
    client.post("/dashboard/login/token/", {"token": kit.admin_token})
    r = client.post(f"/dashboard/team/members/{manager.pk}/deactivate/")
    assert r.status_code == 400 and "needs an active manager" in r.content.decode()
    manager.refresh_from_db()
    assert manager.is_active
    r = signed_in(manager).post(f"/dashboard/team/members/{manager.pk}/deactivate/")
    assert r.status_code == 400 and "cannot deactivate yourself" in r.content.decode()


# --- deactivation ---------------------------------------------------------------------------------

def test_deactivating_ends_sessions_refuses_sign_in_and_reassigns_handoffs(api, kit, manager, rep):
    make_available(manager)
    make_available(rep)
    conversations = [_handoff(api, kit, f"v-{n}") for n in range(3)]
    theirs = [c for c in conversations if c.assigned_to_id == rep.pk]
    assert theirs  # the rotation gave some to Ray
    rep_client = signed_in(rep)
    assert rep_client.get("/dashboard/").status_code == 200

    r = signed_in(manager).post(f"/dashboard/team/members/{rep.pk}/deactivate/")
    assert r.status_code == 302
    rep.refresh_from_db()
    assert not rep.is_active
    # Signed out at the next request; the password no longer opens the dashboard.
    r = rep_client.get("/dashboard/")
    assert r.status_code == 302 and r["Location"].startswith("/dashboard/login/")
    r = Client().post("/dashboard/login/", {"username": "ray@acme.test", "password": PASSWORD})
    assert r.status_code == 200 and "No account has this email and password" in r.content.decode()

    for conversation in theirs:
        conversation.refresh_from_db()
        assert conversation.assigned_to_id == manager.pk and conversation.status == "handed_off"
        event = Event.objects.filter(conversation_id=conversation.pk,
                                     type="conversation.assigned").get()
        assert event.facts["actor"]["name"] == "Mia"
        assert event.facts["previous_assigned_to_id"] == str(rep.pk)
    # His history stays: the conversations he had still name him.
    assert Conversation.objects.filter(tenant=kit.tenant).count() == 3
    assert Event.objects.get(type="team.member_deactivated").facts["member"]["id"] == str(rep.pk)
    # The users API still lists him (leads and conversations name him), as inactive.
    listed = {u["id"]: u for u in api.get("/api/v1/users", headers=kit.auth("read")).json()["data"]}
    assert listed[f"user_{rep.pk.hex}"]["active"] is False
    assert listed[f"user_{manager.pk.hex}"]["active"] is True

    # Reactivated, he signs in again.
    assert signed_in(manager).post(f"/dashboard/team/members/{rep.pk}/reactivate/").status_code == 302
    r = Client().post("/dashboard/login/", {"username": "ray@acme.test", "password": PASSWORD})
    assert r.status_code == 302


def test_the_lead_history_tells_who_deactivated_whom(api, kit, manager, rep):
    make_available(manager)
    make_available(rep)
    sid = chat(api, kit, "Hi, I'm Sam, sam@umbrella.io", visitor="v-sam").json()["sessionId"]
    chat(api, kit, "I want to talk to a human", visitor="v-sam", session=sid)
    conversation = Conversation.objects.get(visitor_id="v-sam")
    if conversation.assigned_to_id != rep.pk:
        signed_in(manager).post(f"/dashboard/conversations/{conversation.pk}/assign/",
                                {"user": str(rep.pk)})
        conversation.refresh_from_db()
    assert conversation.assigned_to_id == rep.pk and conversation.lead_id
    signed_in(manager).post(f"/dashboard/team/members/{rep.pk}/deactivate/")
    page = signed_in(manager).get(f"/dashboard/leads/{conversation.lead_id}/").content.decode()
    assert "Conversation reassigned to Mia" in page
    assert "Ray was deactivated by Mia" in page


def test_with_nobody_available_the_handoffs_wait_in_the_unassigned_queue(api, kit, manager, rep):
    # Ray is online and has the handoffs; Mia is not available (offline): nobody can take them.
    make_available(rep)
    conversations = [_handoff(api, kit, f"v-{n}") for n in range(2)]
    assert all(c.assigned_to_id == rep.pk for c in conversations)
    lead_sid = chat(api, kit, "Hi, I'm Sam, sam@umbrella.io", visitor="v-sam").json()["sessionId"]
    chat(api, kit, "I want to talk to a human", visitor="v-sam", session=lead_sid)
    with_lead = Conversation.objects.get(visitor_id="v-sam")
    assert with_lead.assigned_to_id == rep.pk and with_lead.lead_id

    assert signed_in(manager).post(f"/dashboard/team/members/{rep.pk}/deactivate/").status_code == 302
    rep.refresh_from_db()
    assert not rep.is_active and rep.status == "online"  # still online, never chosen again
    for conversation in [*conversations, with_lead]:
        conversation.refresh_from_db()
        assert conversation.assigned_to_id is None and conversation.status == "handed_off"
        event = Event.objects.get(conversation_id=conversation.pk, type="conversation.assigned")
        assert event.facts["reason"] == "member_deactivated"
        assert event.facts["conversation"]["assigned_to_id"] is None
        assert "Unassigned queue" in event.description
    page = signed_in(manager).get(f"/dashboard/leads/{with_lead.lead_id}/").content.decode()
    assert "Conversation back in the Unassigned queue: nobody available" in page
    assert "Ray was deactivated by Mia" in page
    # Once Mia is available, the routing's sweep offers her the waiting ones.
    make_available(manager)
    assert routing_sweep() == 3
    assert set(Conversation.objects.filter(tenant=kit.tenant).values_list(
        "assigned_to_id", flat=True)) == {manager.pk}


def test_a_strangers_people_and_invitations_are_not_found(manager, stranger):
    outsider = user_create(tenant=stranger.tenant, email="eve@evil.test", first_name="Eve",
                           role="manager", password=PASSWORD)
    outside_client = signed_in(outsider)
    link = _link(outside_client, _invite(outside_client, email="spy@evil.test"))
    invitation = Invitation.objects.get()
    client = signed_in(manager)
    for path in (f"/dashboard/team/members/{outsider.pk}/deactivate/",
                 f"/dashboard/team/members/{outsider.pk}/role/",
                 f"/dashboard/team/invitations/{invitation.pk}/revoke/",
                 f"/dashboard/team/invitations/{invitation.pk}/resend/"):
        assert client.post(path, {"role": "rep"}).status_code == 404, path
    assert client.get(f"/dashboard/team/invitations/{invitation.pk}/sent/").status_code == 404
    outsider.refresh_from_db()
    assert outsider.is_active and outsider.role == "manager"
    page = client.get("/dashboard/team/").content.decode()
    assert "eve@evil.test" not in page and "spy@evil.test" not in page
    assert Client().get(link).status_code == 200  # still valid: nothing happened to it


@pytest.mark.parametrize("action", ["deactivate", "role"])
def test_every_team_action_is_an_event_with_its_actor(manager, rep, action):
    client = signed_in(manager)
    if action == "deactivate":
        client.post(f"/dashboard/team/members/{rep.pk}/deactivate/")
    else:
        client.post(f"/dashboard/team/members/{rep.pk}/role/", {"role": "manager"})
    event = Event.objects.get(type__startswith="team.")
    assert event.facts["actor"] == {"id": str(manager.pk), "name": "Mia"}
    assert event.livemode is True
    assert event.description in signed_in(manager).get("/dashboard/team/").content.decode()
