"""Internal notes (docs/dashboard.md, "Inbox"): on a conversation and on a lead, shown to the
team and never to the visitor (widget stream, chat and conversation APIs of both surfaces,
webhooks, the activity feed); an @mention tells the teammate with a toast on their open pages
and, when they are not online and want it, an email; erased with the person."""

from __future__ import annotations

import json

import pytest

from conversations.live import user_group
from conversations.models import Conversation, Note, OutboundEmail
from core import events as core_events
from core.models import Event
from privacy.services import lead_erase
from tenants.services import user_create
from tests.dashboard.client import Client, signed_in
from tests.dashboard.html import page
from tests.factories import PASSWORD, make_lead
from tests.inbox_helpers import conversation_with, listening
from webhooks import services as webhook_services
from webhooks.envelopes import LEGACY_EVENT_TYPES, V1_EVENT_TYPES
from webhooks.models import Delivery

SECRET = "Internal: offer 30% off, she is price-sensitive <b>VIP</b>"


@pytest.fixture
def manager(kit):
    return user_create(tenant=kit.tenant, email="mia@acme.test", first_name="Mia",
                       last_name="Manager", role="manager", password=PASSWORD)


@pytest.fixture
def rep(kit, manager):
    return user_create(tenant=kit.tenant, email="ray.rep@acme.test", first_name="Ray",
                       last_name="Rep", password=PASSWORD)


def _visitor_conversation(api, kit) -> tuple[str, Conversation]:
    sid = api.post(f"/api/chat?tenant={kit.tenant.public_id}",
                   json={"message": "Hi, I'm Ann, ann@hooli.test", "visitorId": "w-ann"}
                   ).json()["sessionId"]
    return sid, Conversation.objects.get(pk=sid)


def _notes_on(response) -> list[str]:
    return [" ".join(n.text_content().split())
            for n in page(response.content).xpath("//ol[@class='note-list']//div[@class='note-text']")]


def test_a_note_is_the_teams_and_never_the_visitors(api, kit, manager, settings,
                                                    django_capture_on_commit_callbacks):
    settings.WEBHOOKS_ALLOW_HTTP = True
    settings.WEBHOOKS_ALLOW_PRIVATE_TARGETS = True
    webhook_services.subscription_create(tenant=kit.tenant, livemode=True,
                                         url="http://127.0.0.1:9/all", events=list(V1_EVENT_TYPES))
    webhook_services.legacy_webhook_create(tenant=kit.tenant, url="http://127.0.0.1:9/legacy",
                                           events=list(LEGACY_EVENT_TYPES))
    sid, conversation = _visitor_conversation(api, kit)
    deliveries = Delivery.objects.count()
    client = signed_in(manager)
    with django_capture_on_commit_callbacks(execute=True):
        r = client.post(f"/dashboard/conversations/{conversation.pk}/notes/", {"content": SECRET})
    note = Note.objects.get()
    assert r.status_code == 302 and r["Location"].endswith(f"#note-{note.pk}")
    assert (note.conversation, note.author, note.lead) == (conversation, manager, None)

    # The team sees it, escaped.
    shown = client.get(f"/dashboard/conversations/{conversation.pk}/")
    assert _notes_on(shown) == [SECRET]
    assert "<b>VIP</b>" not in shown.content.decode()

    # The visitor's side never does: the widget's stream, the chat and conversation APIs.
    api.post(f"/api/v1/conversations/conv_{conversation.pk.hex}/close", headers=kit.auth())
    answers = [
        api.get(f"/api/chat/stream?tenant={kit.tenant.public_id}&sessionId={sid}&visitorId=w-ann"),
        api.get(f"/api/v1/conversations/conv_{conversation.pk.hex}", headers=kit.auth()),
        api.get(f"/api/v1/chat/sessions/sess_{conversation.pk.hex}", headers=kit.auth()),
        api.get(f"/api/conversations/{conversation.pk}", headers=kit.auth()),
        api.get("/api/v1/analytics/activity", headers=kit.auth()),
    ]
    for answer in answers:
        assert answer.status_code == 200, answer.text
        assert "30%" not in answer.text and "price-sensitive" not in answer.text
    # Nor webhooks: the event is the service's own, no surface renders it, no receiver gets it.
    event = Event.objects.get(type="note.created")
    assert core_events.payload(event, "v1") is None and core_events.payload(event, "legacy") is None
    assert Delivery.objects.count() == deliveries == 0
    assert "30%" not in json.dumps(event.facts) + event.description


def test_a_mention_tells_the_teammate_live_and_by_email_when_away(
        kit, manager, rep, django_capture_on_commit_callbacks):
    lead = make_lead(kit, email="ann@hooli.test", name="Ann Lee")
    conversation = conversation_with(kit, lead=lead)
    client = signed_in(manager)
    with listening(user_group(rep.pk)) as rep_hears, listening(user_group(manager.pk)) as own:
        with django_capture_on_commit_callbacks(execute=True):
            r = client.post(f"/dashboard/conversations/{conversation.pk}/notes/",
                            {"content": "@ray.rep can you call her? cc @mia @nobody"}, follow=True)
        assert "1 teammate told" in r.content.decode()  # not the author, not an unknown handle
        (toast,) = rep_hears()
        assert own(0.2) == []
    note = Note.objects.get()
    assert note.mentions == [str(rep.pk)]
    assert toast == ("mention", {
        "note": str(note.pk), "livemode": True, "author": "Mia Manager", "about": "Ann Lee",
        "excerpt": "@ray.rep can you call her? cc @mia @nobody",
        "url": f"/dashboard/conversations/{conversation.pk}/#note-{note.pk}"})
    (email,) = OutboundEmail.objects.filter(kind="mention")
    assert email.to == "ray.rep@acme.test" and email.conversation_id == conversation.pk
    assert email.lead_id == lead.pk  # erased with the person
    assert "Mia Manager mentioned you in a note about Ann Lee" in email.subject
    assert "@ray.rep can you call her?" in email.text_body
    assert f"#note-{note.pk}" in email.text_body
    # The teammates' handles are marked on the page; an unknown one is text.
    shown = client.get(f"/dashboard/conversations/{conversation.pk}/")
    assert [m.text for m in page(shown.content).xpath("//span[@class='mention']")] == [
        "@ray.rep", "@mia"]


@pytest.mark.parametrize("why", ["online", "opted out"])
def test_no_email_for_a_mention_when_online_or_opted_out(kit, manager, rep, why):
    if why == "online":
        rep.status = "online"
    else:
        rep.email_on_mention = False
    rep.save()
    conversation = conversation_with(kit)
    signed_in(manager).post(f"/dashboard/conversations/{conversation.pk}/notes/",
                            {"content": "@ray.rep look"})
    assert Note.objects.get().mentions == [str(rep.pk)]
    assert not OutboundEmail.objects.filter(kind="mention").exists()


def test_the_email_preference_is_in_my_profile(rep):
    client = signed_in(rep)
    client.post("/dashboard/profile/notifications/", {"takes_meetings": "on"})
    rep.refresh_from_db()
    assert rep.email_on_mention is False
    client.post("/dashboard/profile/notifications/", {"email_on_mention": "on"})
    rep.refresh_from_db()
    assert rep.email_on_mention is True
    assert "mentions me in a note" in client.get("/dashboard/profile/").content.decode()


def test_notes_on_a_lead_and_its_conversations(kit, stranger, manager, rep):
    lead = make_lead(kit, email="ann@hooli.test", name="Ann Lee")
    conversation = conversation_with(kit, lead=lead)
    client = signed_in(rep)
    client.post(f"/dashboard/conversations/{conversation.pk}/notes/", {"content": "From the chat"})
    r = client.post(f"/dashboard/leads/{lead.pk}/notes/", {"content": "Budget holder: her CFO"},
                    follow=True)
    assert r.status_code == 200
    lead_note = Note.objects.get(lead=lead)
    assert lead_note.conversation is None and lead_note.livemode
    assert _notes_on(r) == ["From the chat", "Budget holder: her CFO"]
    # Only the conversation's own note on the conversation's page.
    assert _notes_on(client.get(f"/dashboard/conversations/{conversation.pk}/")) == ["From the chat"]
    # A stranger's lead is not found; nothing is written.
    theirs = make_lead(stranger, email="x@stranger.test")
    assert client.post(f"/dashboard/leads/{theirs.pk}/notes/", {"content": "x"}).status_code == 404
    # Another mode's lead neither.
    test_lead = make_lead(kit, mode="test", email="t@test.test")
    assert client.post(f"/dashboard/leads/{test_lead.pk}/notes/", {"content": "x"}).status_code == 404
    assert Note.objects.count() == 2


def test_a_note_needs_a_person_and_words(kit, manager):
    conversation = conversation_with(kit)
    token = Client()
    token.post("/dashboard/login/token/", {"token": kit.admin_token})
    r = token.post(f"/dashboard/conversations/{conversation.pk}/notes/", {"content": "x"}, follow=True)
    assert b"Notes are signed by a person" in r.content
    r = signed_in(manager).post(f"/dashboard/conversations/{conversation.pk}/notes/",
                                {"content": "   "}, follow=True)
    assert b"Write a note of 1 to 4,000 characters" in r.content
    assert not Note.objects.exists()


def test_its_author_or_a_manager_deletes_a_note(kit, manager, rep):
    other = user_create(tenant=kit.tenant, email="otto@acme.test", password=PASSWORD)
    conversation = conversation_with(kit)
    signed_in(rep).post(f"/dashboard/conversations/{conversation.pk}/notes/", {"content": "one"})
    signed_in(rep).post(f"/dashboard/conversations/{conversation.pk}/notes/", {"content": "two"})
    first, second = Note.objects.order_by("created_at")
    r = signed_in(other).post(f"/dashboard/notes/{first.pk}/delete/", follow=True)
    assert b"Only its author or a manager" in r.content and Note.objects.count() == 2
    signed_in(rep).post(f"/dashboard/notes/{first.pk}/delete/")
    signed_in(manager).post(f"/dashboard/notes/{second.pk}/delete/")
    assert not Note.objects.exists()


def test_erasing_the_person_erases_the_notes_and_the_mention_emails(kit, manager, rep):
    lead = make_lead(kit, email="ann@hooli.test", name="Ann Lee")
    conversation = conversation_with(kit, lead=lead)
    client = signed_in(manager)
    client.post(f"/dashboard/conversations/{conversation.pk}/notes/",
                {"content": "@ray.rep Ann Lee, ann@hooli.test, wants a call"})
    client.post(f"/dashboard/leads/{lead.pk}/notes/", {"content": "ann@hooli.test is the buyer"})
    assert Note.objects.count() == 2 and OutboundEmail.objects.filter(kind="mention").exists()
    lead_erase(lead=lead, requested_by="test")
    assert not Note.objects.exists()
    assert not OutboundEmail.objects.filter(kind="mention").exists()
