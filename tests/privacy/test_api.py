"""The privacy API's rules: the admin scope, one way to name a person, field-level errors, tenant
and mode isolation, the export document, and retries of a calendar that cannot be reached."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from conversations.models import Conversation
from core.models import Event
from leads.models import Lead
from privacy import services
from privacy.inventory import INVENTORY
from privacy.models import Erasure, ErasureStatus
from tests.chat_helpers import chat
from tests.factories import make_lead

from .scan import models_with_text


def test_every_table_with_text_says_how_it_is_erased():
    labels = {model._meta.label for model in models_with_text()}
    missing = sorted(labels - set(INVENTORY))
    assert missing == [], f"add these to privacy/inventory.py: {missing}"
    assert sorted(set(INVENTORY) - labels) == [], "privacy/inventory.py names a table that is gone"


@pytest.mark.parametrize("scope", ["read", "write"])
def test_erasures_and_exports_need_the_admin_scope(api, kit, scope):
    lead = make_lead(kit, email="sam@example.com")
    r = api.post("/api/v1/privacy/erasures", json={"email": "sam@example.com"},
                 headers=kit.auth(scope))
    assert r.status_code == 403 and r.json()["error"]["code"] == "forbidden"
    r = api.get("/api/v1/privacy/exports?email=sam@example.com", headers=kit.auth(scope))
    assert r.status_code == 403
    assert Lead.objects.filter(pk=lead.pk).exists() and not Erasure.objects.exists()


@pytest.mark.parametrize("payload, fields", [
    ({}, {"leadId", "email", "phone", "visitorId"}),
    ({"email": "a@example.com", "phone": "+15551234567"}, {"email", "phone"}),
    ({"email": "not an address"}, {"email"}),
    ({"leadId": "conv_" + "0" * 32}, {"leadId"}),
    ({"email": 42}, {"email"}),
    ({"visitorId": ""}, {"visitorId"}),
])
def test_a_person_is_named_by_exactly_one_valid_field(api, kit, payload, fields):
    r = api.post("/api/v1/privacy/erasures", json=payload, headers=kit.auth())
    assert r.status_code == 400, r.content
    assert {d["field"] for d in r.json()["error"]["details"]} == fields
    assert not Erasure.objects.exists()


def test_a_lead_of_another_tenant_or_mode_is_not_found(api, kit, stranger):
    theirs = make_lead(stranger, email="sam@example.com")
    test_mode = make_lead(kit, mode="test", email="sam@example.com")
    for lead in (theirs, test_mode):
        r = api.post("/api/v1/privacy/erasures", json={"leadId": f"lead_{lead.pk.hex}"},
                     headers=kit.auth())
        assert r.status_code == 404 and r.json()["error"]["code"] == "not_found"
        r = api.get(f"/api/v1/privacy/exports?leadId=lead_{lead.pk.hex}", headers=kit.auth())
        assert r.status_code == 404
    assert Lead.objects.count() == 2


def test_an_erasure_of_another_tenant_is_not_found(api, kit, stranger, eager_celery):
    r = api.post("/api/v1/privacy/erasures", json={"email": "x@example.com"},
                 headers=stranger.auth())
    assert r.status_code == 202
    assert api.get(f"/api/v1/privacy/erasures/{r.json()['id']}",
                   headers=kit.auth()).status_code == 404
    assert api.get("/api/v1/privacy/erasures", headers=kit.auth()).json()["data"] == []


def test_the_export_holds_everything_stored_about_the_person(api, kit):
    sid = chat(api, kit, "Hi, I'm Dana Scully, dana@fbi.example, +1 202 555 0143",
               visitor="visitor-dana").json()["sessionId"]
    chat(api, kit, "What does it cost for a team of 40?", session=sid, visitor="visitor-dana")
    make_lead(kit, email="fox@fbi.example", name="Fox Mulder")

    r = api.get("/api/v1/privacy/exports?email=DANA@fbi.example", headers=kit.auth())
    assert r.status_code == 200, r.content
    doc = r.json()
    assert doc["object"] == "person_export" and doc["livemode"] is True
    (lead,) = doc["leads"]
    assert lead["email"] == "dana@fbi.example" and lead["name"] == "Dana Scully"
    (conversation,) = doc["conversations"]
    assert conversation["id"] == "conv_" + sid[5:] and conversation["visitorId"] == "visitor-dana"
    typed = [m["content"] for m in conversation["messages"] if m["role"] == "user"]
    assert typed == ["Hi, I'm Dana Scully, dana@fbi.example, +1 202 555 0143",
                     "What does it cost for a team of 40?"]
    assert {e["type"] for e in doc["events"]} >= {"lead.created", "message.received"}
    assert "Fox" not in r.text and "fox@fbi.example" not in r.text
    # The same person by visitor id; nobody by an unknown address.
    by_visitor = api.get("/api/v1/privacy/exports?visitorId=visitor-dana", headers=kit.auth())
    assert by_visitor.json()["leads"][0]["id"] == lead["id"]
    unknown = api.get("/api/v1/privacy/exports?email=nobody@example.com", headers=kit.auth())
    assert unknown.status_code == 404


def test_the_export_query_names_exactly_one_field(api, kit):
    r = api.get("/api/v1/privacy/exports", headers=kit.auth())
    assert r.status_code == 400 and r.json()["error"]["details"]
    r = api.get("/api/v1/privacy/exports?email=a@example.com&visitorId=v", headers=kit.auth())
    assert r.status_code == 400


@pytest.mark.django_db(transaction=True)
def test_a_calendar_that_cannot_be_reached_is_retried_then_the_erasure_completes(
        api, kit, rep, radicale, local_calendars, settings, monkeypatch, eager_celery):
    from calendars import services as calendars
    from tests.fakes.radicale import USERS

    monkeypatch.setattr(calendars, "enqueue", lambda ids, only_pending=False: None)
    radicale.make_calendar()
    calendars.calendar_connect(tenant=kit.tenant, user=rep, url=radicale.url, username="ray",
                               password=USERS["ray"])
    sid = chat(api, kit, "I'm Sam, sam@umbrella.io", visitor="v-1").json()["sessionId"]
    offered = chat(api, kit, "Can we book a demo?", session=sid, visitor="v-1").json()
    slot = next(a for a in offered["suggestedActions"] if a["type"] == "reply")
    chat(api, kit, slot["message"], session=sid, visitor="v-1", metadata=slot["metadata"])
    meeting_id = Conversation.objects.get().meetings.get().pk
    assert calendars.calendar_write_attempt(meeting_id=meeting_id).href

    radicale.stop()
    r = api.post("/api/v1/privacy/erasures", json={"email": "sam@umbrella.io"},
                 headers=kit.auth())
    erasure = Erasure.objects.get()
    assert erasure.status == ErasureStatus.PENDING and erasure.records_erased
    assert erasure.attempts == 1 and erasure.next_attempt_at and erasure.failure_reason
    assert not Lead.objects.exists()  # the records went at once

    radicale.start()
    later = erasure.next_attempt_at + timedelta(seconds=1)
    assert services.erasures_sweep(now=later) == 1
    done = api.get(f"/api/v1/privacy/erasures/{r.json()['id']}", headers=kit.auth()).json()
    assert done["status"] == "completed" and done["counts"]["calendarEvents"] == 1
    with pytest.raises(Exception, match="404|Not Found|NotFound"):
        radicale.calendar().get_event_by_uid(str(meeting_id))


@pytest.mark.django_db(transaction=True)
def test_an_erasure_whose_task_was_lost_is_run_by_the_sweeper(api, kit, broken_broker):
    broken_broker.outage("refused")
    lead = make_lead(kit, email="sam@example.com")
    r = api.post("/api/v1/privacy/erasures", json={"email": "sam@example.com"},
                 headers=kit.auth())
    assert r.status_code == 202 and r.json()["status"] == "pending"
    assert services.erasures_sweep(now=timezone.now()) == 0  # not stale yet
    assert services.erasures_sweep(now=timezone.now() + timedelta(minutes=3)) == 1
    assert not Lead.objects.filter(pk=lead.pk).exists()
    assert Erasure.objects.get().status == ErasureStatus.COMPLETED


def test_retention_erases_what_is_older_than_the_tenants_settings(api, kit):
    old, recent = timezone.now() - timedelta(days=40), timezone.now() - timedelta(days=5)
    stale = make_lead(kit, email="stale@example.com", name="Stale Person")
    converted = make_lead(kit, email="won@example.com", status="converted")
    fresh = make_lead(kit, email="fresh@example.com")
    Lead.objects.filter(pk__in=[stale.pk, converted.pk]).update(last_active_at=old)
    Lead.objects.filter(pk=fresh.pk).update(last_active_at=recent)
    sid = chat(api, kit, "An old question about orbital mechanics", visitor="v-old").json()["sessionId"]
    Conversation.objects.filter(pk=sid[5:]).update(last_message_at=old, status="expired")
    chat(api, kit, "A new question", visitor="v-new")
    Event.objects.filter(tenant=kit.tenant, lead=converted).update(occurred_at=old - timedelta(days=400))

    # Default off: nothing goes.
    assert services.retention_sweep() == 0
    kit.tenant.retention_conversation_days = 30
    kit.tenant.retention_lead_days = 30
    kit.tenant.retention_event_days = 365
    kit.tenant.save()
    services.retention_sweep()

    assert set(Lead.objects.filter(tenant=kit.tenant, livemode=True).values_list("email", flat=True)) == {
        "won@example.com", "fresh@example.com"}
    assert not Conversation.objects.filter(visitor_id="v-old").exists()
    assert Conversation.objects.filter(visitor_id="v-new").exists()
    assert not Event.objects.filter(lead=converted, occurred_at__lt=old - timedelta(days=300)).exists()
    feed = api.get("/api/v1/analytics/activity?type=data.expired", headers=kit.auth()).json()["data"]
    assert len(feed) == 1 and feed[0]["metadata"]["counts"]["leads"] == 1
    assert "stale@example.com" not in str(feed) and "Stale Person" not in str(feed)
    assert services.retention_sweep() == 0  # nothing left to expire


def test_the_export_holds_the_consent_the_visitor_gave(api, kit):
    from tests.widget.test_consent import require, widget_chat

    version = require(kit)
    accepted = {"version": version, "acceptedAt": "2026-11-20T10:00:00.000Z"}
    r = widget_chat(api, kit, "I'm Dana, dana@fbi.example", consent=accepted)
    assert r.status_code == 200, r.content
    doc = api.get("/api/v1/privacy/exports?email=dana@fbi.example", headers=kit.auth()).json()
    (consent,) = doc["consents"]
    assert consent["version"] == version and consent["acceptedAt"].startswith("2026-11-20T10:00")
    assert doc["conversations"][0]["consent"]["text"] == kit.tenant.consent_text


def test_retention_is_set_through_the_api_with_field_errors(api, kit):
    r = api.get("/api/v1/settings/retention", headers=kit.auth("read"))
    assert r.json() == {"conversationDays": None, "leadDays": None, "eventDays": None}
    assert api.patch("/api/v1/settings/retention", json={"leadDays": 90},
                     headers=kit.auth("write")).status_code == 403
    r = api.patch("/api/v1/settings/retention", json={"leadDays": 0, "eventDays": 4000},
                  headers=kit.auth())
    assert r.status_code == 422
    assert {d["field"] for d in r.json()["error"]["details"]} == {"leadDays", "eventDays"}
    r = api.patch("/api/v1/settings/retention", json={"leadDays": "ninety"}, headers=kit.auth())
    assert r.status_code == 400
    kit.tenant.refresh_from_db()
    assert kit.tenant.retention_lead_days is None
    r = api.patch("/api/v1/settings/retention", json={"conversationDays": 30, "leadDays": 365},
                  headers=kit.auth())
    assert r.json() == {"conversationDays": 30, "leadDays": 365, "eventDays": None}
    # The same for keys of the other mode: a setting of the tenant.
    assert api.get("/api/v1/settings/retention", headers=kit.auth("read", "test")).json() == r.json()


def test_retention_is_set_in_the_dashboard(kit, manager, rep):
    from tests.dashboard.client import signed_in

    page = signed_in(manager).get("/dashboard/settings/").content.decode()
    assert 'id="privacy"' in page and "Save retention" in page
    refused = signed_in(manager).post("/dashboard/settings/retention/",
                                      {"retention_lead_days": "0"})
    assert refused.status_code == 400
    saved = signed_in(manager).post("/dashboard/settings/retention/",
                                    {"retention_lead_days": "180",
                                     "retention_conversation_days": ""})
    assert saved.status_code == 302
    kit.tenant.refresh_from_db()
    assert kit.tenant.retention_lead_days == 180 and kit.tenant.retention_conversation_days is None
    signed_in(rep).post("/dashboard/settings/retention/", {"retention_lead_days": "1"})
    kit.tenant.refresh_from_db()
    assert kit.tenant.retention_lead_days == 180


@pytest.mark.django_db(transaction=True)
def test_an_erasure_finds_the_person_in_the_history_of_an_earlier_lead(api, kit, eager_celery):
    """A lead deleted before deletes erased (issue 28) left its events with the address; an
    erasure asked of the API looks for it through the tenant's whole history."""
    from leads.services import lead_delete

    lead_delete(lead=make_lead(kit, email="sam@umbrella.io", name="Sam Quill"))
    make_lead(kit, email="sam@umbrella.io")
    assert Event.objects.filter(tenant=kit.tenant, description__contains="sam@umbrella.io").count() >= 2

    api.post("/api/v1/privacy/erasures", json={"email": "sam@umbrella.io"}, headers=kit.auth())

    from .scan import traces

    assert traces(["sam@umbrella.io", "Sam Quill"]) == []



def test_the_export_holds_the_staffs_notes_on_the_persons_records_and_erasure_takes_them(
        api, kit, rep):
    from conversations.models import Note
    from conversations.services import note_create

    sid = chat(api, kit, "Hi, I'm Dana Scully, dana@fbi.example",
               visitor="visitor-dana").json()["sessionId"]
    dana = Lead.objects.get(email="dana@fbi.example")
    fox = make_lead(kit, email="fox@fbi.example", name="Fox Mulder")
    conversation = Conversation.objects.get(pk=sid[5:])
    note_create(tenant=kit.tenant, livemode=True, author=rep, conversation=conversation,
                content="Asked twice about the annual plan")
    note_create(tenant=kit.tenant, livemode=True, author=rep, lead=dana,
                content="Decides for her team of 40")
    # A note on someone else's lead that names Dana is Fox's record, not hers (docs/privacy.md).
    note_create(tenant=kit.tenant, livemode=True, author=rep, lead=fox,
                content="Works with Dana Scully on the budget")

    doc = api.get("/api/v1/privacy/exports?email=dana@fbi.example", headers=kit.auth()).json()
    notes = doc["notes"]
    assert [n["content"] for n in notes] == ["Asked twice about the annual plan",
                                             "Decides for her team of 40"]
    assert notes[0]["conversationId"] == "conv_" + sid[5:] and notes[0]["leadId"] is None
    assert notes[1]["leadId"] == f"lead_{dana.pk.hex}" and notes[1]["conversationId"] is None
    assert all(n["author"] == {"id": f"user_{rep.pk.hex}", "name": rep.display_name}
               for n in notes)
    assert all(n["createdAt"].endswith("Z") for n in notes)
    assert "budget" not in str(notes)

    # DELETE /leads/{id} erases the person behind the lead before its 204 (docs/privacy.md).
    r = api.delete(f"/api/v1/leads/lead_{dana.pk.hex}", headers=kit.auth())
    assert r.status_code == 204, r.content
    # Her notes went with her records; the note on Fox's lead stays.
    assert list(Note.objects.filter(tenant=kit.tenant).values_list("content", flat=True)) == [
        "Works with Dana Scully on the budget"]
