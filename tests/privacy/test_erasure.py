"""A person who chatted, booked and was emailed is erased through the API, then looked for in
every text, JSON and binary column of every table, the mail files and the host's calendar
(docs/privacy.md). Another person, the test mode and another tenant keep theirs."""

from __future__ import annotations

import pytest

from analytics.models import VisitorDay
from calendars import services as calendars
from calendars.models import MeetingCalendarWrite
from conversations.models import Conversation, ConversationTag, Meeting, Note, OutboundEmail
from conversations.services import conversation_tag_add, note_create, tag_create
from core.models import Event
from leads.models import Lead, LeadSearch, LeadSearchWord
from privacy.models import Erasure
from tenants.services import user_create
from tests.chat_helpers import chat, take
from tests.factories import make_lead
from tests.fakes.radicale import USERS
from tests.fakes.webhook_receiver import Answer
from webhooks import services as webhooks
from webhooks.models import Delivery, DeliveryAttempt

from .scan import traces

EMAIL = "sam.quill@umbrella.io"
PHONE = "+442079460958"
VISITOR = "visitor-7f3c9a2b"
# Real commits: the webhook fan-out, the emails and the erasure task run after them.
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def world(api, kit, stranger, rep, radicale, local_calendars, send_emails, receiver, settings,
          tmp_path, monkeypatch):
    """Sam: created by an idempotent POST, chats on the widget channel, books a meeting that is
    written into the rep's Radicale calendar, is emailed (files of the embedded default), and is
    sent to a webhook receiver that echoes what it got. Beside Sam: Alice (same tenant), Sam's
    namesake in test mode, and a stranger tenant's lead with Sam's address."""
    settings.EMAIL_BACKEND = "core.mail.EmlFileBackend"
    settings.EMAIL_FILE_PATH = str(tmp_path / "mail")
    settings.WEBHOOKS_ALLOW_HTTP = settings.WEBHOOKS_ALLOW_PRIVATE_TARGETS = True
    deliveries: list = []
    monkeypatch.setattr(webhooks, "enqueue", lambda ids: deliveries.extend(ids))
    monkeypatch.setattr(calendars, "enqueue", lambda ids, only_pending=False: None)
    radicale.make_calendar()
    calendars.calendar_connect(tenant=kit.tenant, user=rep, url=radicale.url, username="ray",
                               password=USERS["ray"])
    webhooks.subscription_create(tenant=kit.tenant, livemode=True, url=receiver.url(),
                                 events=["lead.created", "lead.updated", "message.received",
                                         "meeting.booked", "lead.deleted"])
    receiver.answer(*[Answer(body=f'{{"echo": "{EMAIL}"}}'.encode())] * 20)

    created = api.post("/api/v1/leads", headers={**kit.auth("write"), "Idempotency-Key": "k-1"},
                       json={"email": EMAIL, "name": "Sam Quill", "phone": PHONE,
                             "company": "Umbrella Research"})
    assert created.status_code == 201, created.content
    sid = chat(api, kit, f"Hi, I'm Sam Quill, {EMAIL}, we want an orbital telescope",
               visitor=VISITOR, channel="web_chat").json()["sessionId"]
    offered = chat(api, kit, "Can we book a demo of the telescope?", session=sid, visitor=VISITOR)
    slot = next(a for a in offered.json()["suggestedActions"] if a["type"] == "reply")
    assert take(api, kit, slot, session=sid, visitor=VISITOR).json()["intent"] == "booking"
    meeting = Meeting.objects.get(lead__email=EMAIL)
    assert calendars.calendar_write_attempt(meeting_id=meeting.pk).href
    for delivery_id in deliveries:
        webhooks.delivery_attempt(delivery_id=delivery_id)
    # The staff's notes on Sam (one mentions a teammate, who is emailed) and a tag.
    user_create(tenant=kit.tenant, email="nora@acme.test", first_name="Nora")
    conversation = Conversation.objects.get(pk=sid[5:])
    note_create(tenant=kit.tenant, livemode=True, author=rep, conversation=conversation,
                content=f"@nora Sam Quill ({EMAIL}) wants the orbital telescope")
    note_create(tenant=kit.tenant, livemode=True, author=rep, lead=meeting.lead,
                content=f"Sam Quill, {PHONE}, decides")
    conversation_tag_add(conversation=conversation, tag=tag_create(tenant=kit.tenant, name="Space"),
                         user=rep)
    assert OutboundEmail.objects.filter(kind="mention", to="nora@acme.test").exists()

    alice = make_lead(kit, email="alice@example.com", name="Alice Example")
    chat(api, kit, "I'm Alice, alice@example.com, pricing please?", visitor="visitor-alice")
    namesake = make_lead(kit, mode="test", email=EMAIL, name="Sam Quill")
    foreign = make_lead(stranger, email=EMAIL, name="Sam Quill")
    return {"session": sid, "meeting": meeting, "alice": alice, "namesake": namesake,
            "foreign": foreign}


NEEDLES = [EMAIL, "Sam Quill", PHONE, VISITOR, "orbital telescope", "demo of the telescope",
           "Umbrella Research"]


def _everything_was_there(kit, radicale, world) -> None:
    assert traces(NEEDLES), "the scan must see Sam before the erasure"
    assert any(EMAIL in t for t in traces([EMAIL]) if t.startswith("file"))
    assert OutboundEmail.objects.filter(to=EMAIL).exists()
    assert DeliveryAttempt.objects.filter(response_excerpt__contains=EMAIL).exists()
    assert radicale.calendar().get_event_by_uid(str(world["meeting"].pk))


def _only_others_remain(found: list[str], world) -> list[str]:
    """The other tenant's and the test mode's Sam are theirs to keep."""
    theirs = [world["namesake"].pk, world["foreign"].pk]
    kept = {str(pk) for pk in theirs}
    kept |= {str(pk) for pk in Event.objects.filter(lead__in=theirs).values_list("pk", flat=True)}
    kept |= {str(pk) for pk in LeadSearch.objects.filter(lead__in=theirs).values_list("pk", flat=True)}
    return [t for t in found if not any(f"({pk})" in t for pk in kept)]


def test_erasure_by_email_leaves_no_trace(api, kit, world, radicale):
    _everything_was_there(kit, radicale, world)
    visitor_days = VisitorDay.objects.filter(tenant=kit.tenant).count()

    r = api.post("/api/v1/privacy/erasures", json={"email": EMAIL.upper()}, headers=kit.auth())
    assert r.status_code == 202, r.content
    accepted = r.json()
    assert accepted["status"] in ("pending", "completed") and accepted["id"].startswith("erasure_")

    done = api.get(f"/api/v1/privacy/erasures/{accepted['id']}", headers=kit.auth()).json()
    assert done["status"] == "completed" and done["completedAt"]
    counts = done["counts"]
    assert counts["leads"] == 1 and counts["conversations"] == 1 and counts["meetings"] == 1
    assert counts["messages"] >= 6 and counts["emails"] >= 1 and counts["files"] >= 1
    assert counts["calendarEvents"] == 1 and counts["idempotencyRecords"] == 1
    assert counts["webhookAttempts"] >= 1 and counts["events"] >= 5

    # Nowhere in the database or the mail files, but in what is not Sam's to erase.
    left = _only_others_remain(traces(NEEDLES), world)
    assert left == [], "\n".join(left)
    with pytest.raises(Exception, match="404|Not Found|NotFound"):
        radicale.calendar().get_event_by_uid(str(world["meeting"].pk))
    assert not MeetingCalendarWrite.objects.exists()
    assert not Note.objects.filter(tenant=kit.tenant).exists()
    assert not ConversationTag.objects.filter(tenant=kit.tenant).exists()
    assert not LeadSearchWord.objects.filter(tenant=kit.tenant, livemode=True,
                                             word__in=["QUILL", "UMBRELLA"]).exists()
    # What stays: the events with ids, the lead.deleted event, the counts, an audit line.
    deleted = Event.objects.get(tenant=kit.tenant, type="lead.deleted")
    assert deleted.facts["lead"]["email"] is None and deleted.facts["lead"]["id"]
    assert Event.objects.filter(tenant=kit.tenant, type="data.erased").count() == 1
    assert VisitorDay.objects.filter(tenant=kit.tenant).count() == visitor_days
    erasure = Erasure.objects.get()
    assert erasure.subject_encrypted == "" and erasure.requested_by.startswith("API key sk_live_")
    # The others keep everything.
    assert Lead.objects.filter(pk__in=[world["alice"].pk, world["namesake"].pk,
                                       world["foreign"].pk]).count() == 3
    assert Conversation.objects.filter(visitor_id="visitor-alice").exists()
    assert api.get("/api/v1/leads", headers=kit.auth()).json()["pagination"]["total"] == 1


def test_the_lead_deleted_webhook_carries_the_id_and_nothing_personal(api, kit, world, receiver):
    receiver.reset()
    lead = Lead.objects.get(tenant=kit.tenant, livemode=True, email=EMAIL)
    r = api.post("/api/v1/privacy/erasures", json={"leadId": f"lead_{lead.pk.hex}"},
                 headers=kit.auth())
    assert r.status_code == 202
    delivery = Delivery.objects.get(event__type="lead.deleted")
    webhooks.delivery_attempt(delivery_id=delivery.pk)
    (got,) = receiver.wait_for(1)
    assert f"lead_{lead.pk.hex}".encode() in got.body
    assert b"Sam" not in got.body and EMAIL.encode() not in got.body


def test_activity_feed_shows_the_erasure_without_the_person(api, kit, world):
    api.post("/api/v1/privacy/erasures", json={"phone": "+44 20 7946 0958"}, headers=kit.auth())
    feed = api.get("/api/v1/analytics/activity", headers=kit.auth()).json()["data"]
    assert feed[0]["type"] == "data.erased" and feed[0]["metadata"]["counts"]["leads"] == 1
    assert EMAIL not in str(feed) and "Sam Quill" not in str(feed)


def test_erasure_by_visitor_id_finds_the_lead_behind_the_visitor(api, kit, world):
    r = api.post("/api/v1/privacy/erasures", json={"visitorId": VISITOR}, headers=kit.auth())
    erasure = api.get(f"/api/v1/privacy/erasures/{r.json()['id']}", headers=kit.auth()).json()
    assert erasure["counts"]["leads"] == 1 and erasure["counts"]["conversations"] == 1
    assert _only_others_remain(traces(NEEDLES), world) == []


def test_delete_lead_goes_through_the_erasure(api, kit, world):
    lead = Lead.objects.get(tenant=kit.tenant, livemode=True, email=EMAIL)
    r = api.delete(f"/api/v1/leads/lead_{lead.pk.hex}", headers=kit.auth())
    assert r.status_code == 204
    assert _only_others_remain(traces(NEEDLES), world) == []
    assert Erasure.objects.get().subject_kind == "lead"


def test_delete_conversation_erases_what_was_typed_and_keeps_the_lead(api, kit, world):
    r = api.delete(f"/api/v1/conversations/conv_{world['session'][5:]}", headers=kit.auth())
    assert r.status_code == 204
    assert traces(["orbital telescope", "demo of the telescope", VISITOR]) == []
    assert Lead.objects.filter(tenant=kit.tenant, livemode=True, email=EMAIL).exists()
    assert Meeting.objects.filter(pk=world["meeting"].pk).exists()


def test_an_unknown_person_completes_with_nothing_removed(api, kit, eager_celery):
    r = api.post("/api/v1/privacy/erasures", json={"email": "nobody@example.com"},
                 headers=kit.auth())
    erasure = api.get(f"/api/v1/privacy/erasures/{r.json()['id']}", headers=kit.auth()).json()
    assert erasure["status"] == "completed" and not any(erasure["counts"].values())
