"""The sales staff's dashboard over HTTP (Django's test client): sign-in, tenant scoping (a
stranger's ids are 404), roles, CSRF, and each page's actions through the services."""

from __future__ import annotations

import re

import pytest

from apikeys.models import ApiKey
from conversations.models import Conversation, Message
from core.errors import Unprocessable
from core.models import Event
from tenants.services import tenant_set_agent, tenant_set_meetings, user_create
from tests.chat_helpers import chat
from tests.dashboard.client import Client, signed_in
from tests.events import v1_data
from tests.factories import PASSWORD, make_available, make_lead
from widget.services import widget_settings_update


@pytest.fixture
def manager(kit):
    return user_create(tenant=kit.tenant, email="Mia@Acme.test", first_name="Mia", last_name="Manager",
                       role="manager", password=PASSWORD)


@pytest.fixture
def rep(kit, manager):
    return user_create(tenant=kit.tenant, email="ray@acme.test", first_name="Ray", last_name="Rep",
                       password=PASSWORD)


def test_pages_need_a_sign_in(db):
    r = Client().get("/dashboard/leads/")
    assert r.status_code == 302 and r["Location"].startswith("/dashboard/login/?next=")


def test_staff_sign_in_with_their_email(manager):
    client = Client()
    r = client.post("/dashboard/login/", {"username": "MIA@acme.test", "password": PASSWORD})
    assert r.status_code == 302 and r["Location"] == "/dashboard/"
    assert client.get("/dashboard/").status_code == 200
    r = Client().post("/dashboard/login/", {"username": "mia@acme.test", "password": "wrong"})
    page = r.content.decode()
    assert r.status_code == 200 and "No account has this email and password" in page
    assert "username" not in re.sub(r"<[^>]*>", "", page).lower()  # the field says Email


def test_an_operator_without_tenant_is_sent_to_the_admin(db):
    from tenants.models import User

    operator = User.objects.create_user(username="op", password=PASSWORD, is_staff=True)
    r = signed_in(operator).get("/dashboard/", follow=True)
    assert b"operators of the service use the admin site" in r.content


def test_admin_token_sign_in_and_token_reset_ends_it(kit):
    from tenants.services import tenant_reset_admin_token

    client = Client()
    refused = client.post("/dashboard/login/token/", {"token": "at_wrong"})
    assert refused.status_code == 400
    # The cursor goes back to the token, not to the staff form's Email.
    page = refused.content.decode()
    assert page.count("autofocus") == 1
    assert re.search(r'<input[^>]*name="token"[^>]*autofocus', page)
    r = client.post("/dashboard/login/token/", {"token": kit.admin_token})
    assert r.status_code == 302
    page = client.get("/dashboard/keys/")
    assert page.status_code == 200 and b"Administrator (admin token)" in page.content
    tenant_reset_admin_token(tenant=kit.tenant)
    assert client.get("/dashboard/keys/").status_code == 302


def test_forms_are_csrf_protected(manager):
    client = Client(enforce_csrf_checks=True)
    client.force_login(manager)
    r = client.post("/dashboard/keys/new/", {"name": "x", "scope": "read", "mode": "live"})
    assert r.status_code == 403
    assert not ApiKey.objects.filter(name="x").exists()


def test_leads_search_filter_and_detail_with_score_reasons(api, kit, manager,
                                                           django_assert_max_num_queries):
    make_lead(kit, email="zoe@globex.com", name="Zoe", company="Globex")
    make_lead(kit, email="max@initech.com", name="Max", status="lost")
    make_lead(kit, mode="test", email="tess@test.example")
    client = signed_in(manager)
    client.get("/dashboard/")
    with django_assert_max_num_queries(9):  # the list, the team and the saved views among them
        page = client.get("/dashboard/leads/").content.decode()
    assert "zoe@globex.com" in page and "max@initech.com" in page and "tess@" not in page
    page = client.get("/dashboard/leads/?q=globex").content.decode()
    assert "zoe@globex.com" in page and "max@initech.com" not in page
    page = client.get("/dashboard/leads/?status=lost").content.decode()
    assert "max@initech.com" in page and "zoe@globex.com" not in page

    sid = chat(api, kit, "Hi, I'm Ann, CTO at Hooli. ann@hooli.com").json()["sessionId"]
    chat(api, kit, "We need it this quarter, budget is $20k", session=sid)
    conversation = Conversation.objects.get()
    page = client.get(f"/dashboard/leads/{conversation.lead_id}/").content.decode()
    assert "ann@hooli.com" in page and conversation.score_reasons[0]["reason"] in page
    assert "Qualified: Qualifying → Qualified" in page  # the lead's history


def test_test_mode_shows_test_data(kit, manager):
    make_lead(kit, mode="test", email="tess@test.example")
    client = signed_in(manager)
    client.post("/dashboard/mode/", {"mode": "test"})
    page = client.get("/dashboard/leads/").content.decode()
    assert "tess@test.example" in page and "test data" in page


def test_a_strangers_records_are_404(kit, stranger, manager, api):
    theirs = make_lead(stranger, email="secret@stranger.example")
    chat(api, stranger, "Hello")
    their_conversation = Conversation.objects.get(tenant=stranger.tenant)
    their_key = stranger.key_rows["live"]["admin"]
    client = signed_in(manager)
    assert client.get(f"/dashboard/leads/{theirs.pk}/").status_code == 404
    assert client.post(f"/dashboard/leads/{theirs.pk}/status/", {"status": "lost"}).status_code == 404
    assert client.get(f"/dashboard/conversations/{their_conversation.pk}/").status_code == 404
    assert client.get(f"/dashboard/conversations/{their_conversation.pk}/events/").status_code == 404
    for action in ("reply", "take-over", "hand-back", "close"):
        url = f"/dashboard/conversations/{their_conversation.pk}/{action}/"
        assert client.post(url, {"content": "hi"}).status_code == 404
    for action in ("rotate", "revoke-old", "revoke"):
        assert client.post(f"/dashboard/keys/{their_key.pk}/{action}/").status_code == 404
    their_key.refresh_from_db()
    assert their_key.revoked_at is None and their_key.replaced_by is None
    assert "secret@stranger.example" not in client.get("/dashboard/leads/").content.decode()


def test_reps_work_leads_and_chats_but_not_keys_or_settings(rep):
    client = signed_in(rep)
    assert client.get("/dashboard/leads/").status_code == 200
    for url in ("/dashboard/keys/", "/dashboard/settings/"):
        r = client.get(url, follow=True)
        assert r.redirect_chain[-1][0] == "/dashboard/" and b"Only sales managers" in r.content
    r = client.post("/dashboard/keys/new/", {"name": "n", "scope": "admin", "mode": "live"})
    assert r.status_code == 302
    assert not ApiKey.objects.filter(name="n").exists()


def test_key_generation_shows_the_value_once_and_it_works(api, kit, manager):
    client = signed_in(manager)
    r = client.post("/dashboard/keys/new/", {"name": "CRM sync", "scope": "write", "mode": "test"},
                    follow=True)
    assert r.status_code == 200 and r["Cache-Control"] == "no-store"
    raw = r.context["secret"]
    assert raw.startswith("sk_test_") and raw in r.content.decode()
    assert raw not in client.get("/dashboard/keys/").content.decode()
    assert api.get("/api/v1/leads", headers={"Authorization": f"Bearer {raw}"}).status_code == 200
    key = ApiKey.objects.get(name="CRM sync")
    assert key.scope == "write" and not key.livemode and key.created_by == "dashboard:mia@acme.test"


def test_rotation_keeps_both_keys_then_revoke_old_and_revoke(api, kit, manager):
    client = signed_in(manager)
    old_row, old_raw = kit.key_rows["live"]["read"], kit.keys["live"]["read"]
    r = client.post(f"/dashboard/keys/{old_row.pk}/rotate/", follow=True)
    new_raw = r.context["secret"]
    new_row = r.context["key"]
    assert r.context["rotated"] == old_row and "Revoke old key now" in r.content.decode()
    for raw in (old_raw, new_raw):
        assert api.get("/api/v1/leads", headers={"Authorization": f"Bearer {raw}"}).status_code == 200
    listing = client.get("/dashboard/keys/").content.decode()
    assert "Revoke old key" in listing and "Old key in grace period" in listing
    # Rotating the old key again is refused with a message, not an error page.
    r = client.post(f"/dashboard/keys/{old_row.pk}/rotate/", follow=True)
    assert b"Only an active key can be rotated" in r.content
    client.post(f"/dashboard/keys/{new_row.pk}/revoke-old/")
    assert api.get("/api/v1/leads", headers={"Authorization": f"Bearer {old_raw}"}).status_code == 401
    assert api.get("/api/v1/leads", headers={"Authorization": f"Bearer {new_raw}"}).status_code == 200
    client.post(f"/dashboard/keys/{new_row.pk}/revoke/")
    assert api.get("/api/v1/leads", headers={"Authorization": f"Bearer {new_raw}"}).status_code == 401


def handed_off(api, kit) -> Conversation:
    chat(api, kit, "I want to talk to a human", visitor="v-human")
    conversation = Conversation.objects.get(visitor_id="v-human")
    assert conversation.status == "handed_off"
    return conversation


def test_the_assigned_rep_replies_and_the_agent_stays_silent(api, kit, manager, rep,
                                                             django_assert_max_num_queries):
    make_available(rep)
    make_available(manager)
    conversation = handed_off(api, kit)
    assignee = conversation.assigned_to
    other = rep if assignee == manager else manager
    client = signed_in(assignee)
    page = client.get("/dashboard/conversations/").content.decode()
    assert str(conversation.pk) in page  # "Assigned to me" is the default view
    with django_assert_max_num_queries(9):  # and the handoffs unread beside Conversations
        client.get("/dashboard/conversations/?view=all")

    r = signed_in(other).post(f"/dashboard/conversations/{conversation.pk}/reply/",
                              {"content": "Me instead"}, follow=True)
    assert b"assigned to someone else" in r.content
    r = signed_in(assignee).post(f"/dashboard/conversations/{conversation.pk}/reply/",
                                 {"content": "Hi, I'm here to help."}, follow=True)
    assert b"Reply sent." in r.content
    reply = Message.objects.filter(conversation=conversation).order_by("sequence").last()
    assert reply.role == "assistant" and reply.author == assignee
    sent = Event.objects.filter(type="message.sent", conversation_id=conversation.pk).first()
    assert v1_data(sent)["author"] == "user_" + assignee.pk.hex
    # The visitor writes again: the rep has joined, the agent says nothing at all.
    again = chat(api, kit, "Great, thanks", visitor="v-human", session="sess_" + conversation.pk.hex)
    assert again.status_code == 200, again.text
    assert again.json()["content"] == ""
    assert Message.objects.filter(conversation=conversation).order_by("sequence").last().role == "user"


def test_take_over_hand_back_assign_and_close(api, kit, manager, rep):
    chat(api, kit, "Hello", visitor="v-active")
    conversation = Conversation.objects.get(visitor_id="v-active")
    client = signed_in(rep)
    client.post(f"/dashboard/conversations/{conversation.pk}/take-over/")
    conversation.refresh_from_db()
    assert conversation.status == "handed_off" and conversation.assigned_to == rep
    assert Event.objects.filter(type="conversation.handoff", conversation_id=conversation.pk).exists()
    # Reps cannot reassign; managers can.
    assert client.post(f"/dashboard/conversations/{conversation.pk}/assign/",
                       {"user": manager.pk}).status_code == 302
    conversation.refresh_from_db()
    assert conversation.assigned_to == rep
    signed_in(manager).post(f"/dashboard/conversations/{conversation.pk}/assign/", {"user": manager.pk})
    conversation.refresh_from_db()
    assert conversation.assigned_to == manager
    client.post(f"/dashboard/conversations/{conversation.pk}/hand-back/")
    conversation.refresh_from_db()
    assert conversation.status == "active" and conversation.assigned_to is None
    reply = chat(api, kit, "What does it cost?", visitor="v-active",
                 session="sess_" + conversation.pk.hex).json()
    assert not reply["content"].startswith("A member of our team")
    r = client.post(f"/dashboard/conversations/{conversation.pk}/hand-back/", follow=True)
    assert b"Only a handed-off conversation" in r.content
    client.post(f"/dashboard/conversations/{conversation.pk}/close/")
    conversation.refresh_from_db()
    assert conversation.status == "closed"
    completed = Event.objects.get(type="conversation.completed", conversation_id=conversation.pk)
    assert v1_data(completed)["reason"] == "closed_by_staff"


def test_the_admin_token_cannot_reply_without_a_person(api, kit, manager):
    conversation = handed_off(api, kit)
    client = Client()
    client.post("/dashboard/login/token/", {"token": kit.admin_token})
    r = client.post(f"/dashboard/conversations/{conversation.pk}/reply/", {"content": "x"}, follow=True)
    assert b"Replies are signed by a person" in r.content


def test_settings_change_through_the_services(api, kit, manager, fake_server):
    client = signed_in(manager)
    assert client.get("/dashboard/settings/").status_code == 200
    client.post("/dashboard/settings/plan/", {"plan": "enterprise"})
    # Saved once the provider answered (tests/dashboard/test_provider_settings.py).
    fake_server.reset()
    client.post("/dashboard/settings/agent/", {"provider": "openai", "model": "gpt-4o",
                                               "base_url": fake_server.base_url,
                                               "api_key": "sk-provider-secret"})
    client.post("/dashboard/settings/meetings/", {
        "timezone": "Europe/Paris", "days": ["0", "2"], "start_hour": "10", "end_hour": "16",
        "minutes": "45", "booking_url": ""})
    client.post("/dashboard/settings/widget/", {
        "title": "Talk to Acme", "greeting": "Hello!", "position": "bottom-left",
        "primary_color": "#112233", "text_color": "#FFFFFF", "launcher_icon": "chat"})
    r = client.post("/dashboard/settings/origins/", {"origins": "https://Shop.Acme.com/\n\nhttp://localhost:3000"})
    kit.tenant.refresh_from_db()
    tenant = kit.tenant
    assert tenant.plan == "enterprise" and tenant.agent_provider == "openai"
    assert tenant.agent_api_key == "sk-provider-secret"
    assert tenant.meeting_timezone == "Europe/Paris" and tenant.meeting_days == [0, 2]
    assert (tenant.meeting_start_hour, tenant.meeting_end_hour, tenant.meeting_minutes) == (10, 16, 45)
    assert tenant.allowed_origins == ["https://shop.acme.com", "http://localhost:3000"]
    page = client.get("/dashboard/settings/").content.decode()
    assert "sk-provider-secret" not in page and "A key is stored" in page
    # The key field is write-only: saving without it keeps the key.
    client.post("/dashboard/settings/agent/", {"provider": "openai", "model": "gpt-4o",
                                               "base_url": fake_server.base_url})
    kit.tenant.refresh_from_db()
    assert kit.tenant.agent_api_key == "sk-provider-secret"
    assert fake_server.headers[-1]["authorization"] == "Bearer sk-provider-secret"
    config = api.get(f"/api/widget?tenant={tenant.public_id}").json()
    assert config["title"] == "Talk to Acme" and config["position"] == "bottom-left"
    assert config["theme"] == {"primaryColor": "#112233", "textColor": "#ffffff"}

    r = client.post("/dashboard/settings/origins/", {"origins": "https://shop.acme.com/path"}, follow=True)
    assert b"Not an origin" in r.content
    r = client.post("/dashboard/settings/meetings/", {
        "timezone": "Mars/Olympus", "start_hour": "10", "end_hour": "16", "minutes": "45"}, follow=True)
    assert b"Choose a time zone from the list" in r.content
    kit.tenant.refresh_from_db()
    assert kit.tenant.allowed_origins == ["https://shop.acme.com", "http://localhost:3000"]


def test_settings_the_services_refuse_say_why(kit, manager):
    client = signed_in(manager)
    r = client.post("/dashboard/settings/meetings/", {
        "timezone": "Europe/Paris", "days": ["0"], "start_hour": "16", "end_hour": "10",
        "minutes": "45", "booking_url": "ftp://cal.example.com/acme"}, follow=True)
    page = r.content.decode()
    assert ("The meeting settings were not saved. (meeting end hour: Hours 0-24, the end after "
            "the start.; booking url: An http(s) URL.)") in page
    r = client.post("/dashboard/settings/origins/",
                    {"origins": "http://[::1]:8080/\nhttps://shop.acme.com:99999"}, follow=True)
    assert b"Not an origin (scheme://host[:port], no path): https://shop.acme.com:99999" in r.content
    client.post("/dashboard/settings/origins/", {"origins": "http://[::1]:8080/\nhttps://Shop.acme.com:8443"})
    kit.tenant.refresh_from_db()
    assert kit.tenant.allowed_origins == ["http://[::1]:8080", "https://shop.acme.com:8443"]
    assert kit.tenant.meeting_start_hour < kit.tenant.meeting_end_hour


def test_the_settings_services_refuse_what_the_forms_keep_out(kit):
    """The forms already refuse these; the services do not count on any one caller's form."""
    with pytest.raises(Unprocessable) as refused:
        tenant_set_meetings(tenant=kit.tenant, timezone_name="Nowhere/Atlantis", days=[0, 7],
                            start_hour=9, end_hour=25, minutes=5, booking_url=" https://cal.example ")
    assert [(d.field, d.code) for d in refused.value.details] == [
        ("meeting_timezone", "invalid_enum"), ("meeting_days", "out_of_range"),
        ("meeting_end_hour", "out_of_range"), ("meeting_minutes", "out_of_range")]
    saved = tenant_set_meetings(tenant=kit.tenant, timezone_name="UTC", days=[4, 0, 4],
                                start_hour=0, end_hour=24, minutes=240, booking_url=" https://cal.example ")
    assert (saved.meeting_days, saved.booking_url) == ([0, 4], "https://cal.example")

    with pytest.raises(Unprocessable) as refused:
        widget_settings_update(tenant=kit.tenant, title="  ", greeting="x" * 501, position="top",
                               primary_color="blue", text_color="#fff")
    assert refused.value.message == "The widget settings were not saved."
    assert [(d.field, d.code, d.message) for d in refused.value.details] == [
        ("title", "required", "The widget needs a title."),
        ("greeting", "too_long", "At most 500 characters."),
        ("position", "invalid_enum", "bottom-right, bottom-left"),
        ("primary_color", "invalid_format", "A colour as #rrggbb."),
        ("text_color", "invalid_format", "A colour as #rrggbb."),
    ]
    with pytest.raises(Unprocessable) as refused:
        widget_settings_update(tenant=kit.tenant, title="x" * 61, greeting="", position="bottom-left",
                               primary_color="#AABBCC", text_color="#ffffff")
    assert [(d.field, d.code) for d in refused.value.details] == [("title", "too_long")]


def test_widget_preview_embeds_the_tenants_widget(kit, manager):
    page = signed_in(manager).get("/dashboard/settings/widget/preview/").content.decode()
    assert f'data-tenant="{kit.tenant.public_id}"' in page and 'src="/widget.js"' in page


def test_reply_limits_and_facts_are_set_on_the_settings_page(api, kit, manager):
    client = signed_in(manager)
    page = client.get("/dashboard/settings/").content.decode()
    assert 'name="max_reply_chars" value="1200"' in page and "Facts the agent may state" in page
    client.post("/dashboard/settings/limits/", {"max_reply_tokens": "150",
                                                "max_reply_chars": "500", "turn_seconds": "10"})
    client.post("/dashboard/settings/facts/", {
        "product_summary": "A CRM for small sales teams", "pricing_url": "acme.example/pricing",
        "business_hours": "Mon-Fri 9-17 CET"})
    kit.tenant.refresh_from_db()
    tenant = kit.tenant
    assert (tenant.agent_max_reply_tokens, tenant.agent_max_reply_chars,
            tenant.agent_turn_seconds) == (150, 500, 10)
    assert tenant.pricing_url == "https://acme.example/pricing"
    assert tenant.business_hours == "Mon-Fri 9-17 CET"
    r = client.post("/dashboard/settings/limits/", {"max_reply_tokens": "150",
                                                    "max_reply_chars": "50", "turn_seconds": "10"},
                    follow=True)
    assert b"Nothing was saved" in r.content
    kit.tenant.refresh_from_db()
    assert kit.tenant.agent_max_reply_chars == 500


def test_the_transcript_shows_the_path_each_reply_took(api, kit, manager, fake):
    fake.analysis_as = "malformed"
    fake.reply = "Happy to help. " * 5
    chat(api, kit, "Hello")
    conversation = Conversation.objects.get()
    page = signed_in(manager).get(f"/dashboard/conversations/{conversation.pk}/").content.decode()
    assert "fallback" in page and "stopped: repetition" in page


def test_an_ordinary_reply_carries_no_path_note(api, kit, manager, fake):
    """Issue 29: "· model analysis" under every reply, the builtin agent's too (no model read
    anything there). Only what is out of the ordinary is noted: a fallback, an early stop."""
    fake.reply = "Hello! How can I help?"
    chat(api, kit, "Hi there", visitor="model")  # the fake model's reply
    tenant_set_agent(tenant=kit.tenant, provider="builtin")
    chat(api, kit, "Hello", visitor="builtin")
    client = signed_in(manager)
    for conversation in Conversation.objects.filter(tenant=kit.tenant):
        page = client.get(f"/dashboard/conversations/{conversation.pk}/").content.decode()
        assert "model analysis" not in page and "fallback" not in page
        assert page.count('class="bubble assistant"') == 1, conversation.visitor_id
    assert {c.messages.get(role="assistant").turn["analysis"]
            for c in Conversation.objects.filter(tenant=kit.tenant)} == {"model"}
