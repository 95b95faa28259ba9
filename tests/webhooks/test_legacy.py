"""Legacy webhooks: configured by staff (service and command), the legacy envelope signed over
the body alone, the six-attempt schedule, and the drop to ``failed`` for the dashboard."""

from __future__ import annotations

import io
import json
import logging
from datetime import timedelta

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from core.errors import Conflict, InvalidRequest
from core.models import Event
from leads.services import lead_update
from tests.events import legacy_data
from tests.factories import make_lead
from tests.fakes.webhook_receiver import Answer
from webhooks import selectors, services
from webhooks.models import Delivery, DeliveryAttempt, LegacyWebhook

from .conftest import SECRET, attempt_now, envelope, fresh, legacy_signature_ok

pytestmark = pytest.mark.usefixtures("local_targets")


def _legacy(kit, receiver, events=("lead.created", "lead.qualified", "meeting.booked"), **kw):
    webhook, _ = services.legacy_webhook_create(tenant=kit.tenant, url=receiver.url(),
                                                events=list(events), secret=SECRET, **kw)
    return webhook


def test_lead_created_reaches_a_legacy_webhook_in_the_legacy_shape(
        kit, receiver, enqueued, django_capture_on_commit_callbacks):
    _legacy(kit, receiver)
    with django_capture_on_commit_callbacks(execute=True):
        lead = make_lead(kit, email="ann@example.com", name="Ann", company="Acme")
    delivery = Delivery.objects.get()
    assert delivery.surface == "legacy" and enqueued == [delivery.pk]
    attempt = attempt_now(delivery)
    assert attempt.success

    (request,) = receiver.received
    assert legacy_signature_ok(request)
    assert "x-service-timestamp" not in request.headers  # not part of the legacy scheme
    assert request.headers["content-type"] == "application/json"
    assert request.headers["x-service-event"] == "lead.created"
    body = envelope(request)
    assert list(body) == ["event", "timestamp", "data"]
    assert body["event"] == "lead.created" and body["timestamp"].endswith("Z")
    assert body["data"] == {"id": str(lead.pk), "name": "Ann", "email": "ann@example.com",
                            "company": "Acme", "status": "new", "qualificationScore": 0}


def test_lead_qualified_legacy_data(kit, receiver, enqueued, django_capture_on_commit_callbacks):
    _legacy(kit, receiver, events=["lead.qualified"])
    lead = make_lead(kit, email="q@example.com")
    with django_capture_on_commit_callbacks(execute=True):
        lead_update(lead=lead, changes={"status": "qualified", "score": 72},
                    qualification_reason="Budget and timeline confirmed")
    attempt_now(Delivery.objects.get())
    (request,) = receiver.received
    assert legacy_signature_ok(request)
    assert envelope(request)["data"] == {
        "id": str(lead.pk), "name": None, "email": "q@example.com", "company": None,
        "status": "qualified", "qualificationScore": 72, "previousStatus": "new",
        "qualificationReason": "Budget and timeline confirmed"}


def test_meeting_booked_carries_the_events_legacy_data(api, kit, receiver, enqueued,
                                                       django_capture_on_commit_callbacks):
    from tests.chat_helpers import chat, take

    _legacy(kit, receiver, events=["meeting.booked"])
    with django_capture_on_commit_callbacks(execute=True):
        sid = chat(api, kit, "Hi, I'm Sam, sam@umbrella.io").json()["sessionId"]
        slots = [a for a in chat(api, kit, "Can we book a demo?", session=sid)
                 .json()["suggestedActions"] if a["type"] == "reply"]
        take(api, kit, slots[0], session=sid)
    delivery = Delivery.objects.get()
    attempt_now(delivery)
    body = envelope(receiver.received[0])
    assert body["event"] == "meeting.booked"
    assert body["data"] == legacy_data(Event.objects.get(type="meeting.booked"))
    assert set(body["data"]) == {"lead", "meeting"}
    assert body["data"]["lead"]["status"] == "booked"
    assert set(body["data"]["meeting"]) == {"id", "startsAt", "endsAt", "timezone",
                                            "conversationId"}  # unchanged by issue 16

    # Legacy has no word for a reschedule or a cancel: nothing more is delivered.
    from conversations import scheduling
    from conversations.models import Meeting
    from conversations.services import meeting_cancel, meeting_reschedule

    meeting = Meeting.objects.get()
    target = next(s for s in scheduling.free_slots(kit.tenant, True, now=meeting.created_at)
                  if s.start != meeting.starts_at)
    with django_capture_on_commit_callbacks(execute=True):
        meeting_reschedule(meeting=meeting, starts_at=target.start)
        meeting_cancel(meeting=meeting, by="staff")
    assert Delivery.objects.count() == 1
    with pytest.raises(InvalidRequest):
        services.legacy_webhook_create(tenant=kit.tenant, url=receiver.url(),
                                       events=["meeting.cancelled"], secret=SECRET)


def test_legacy_webhooks_get_only_their_three_types_and_their_mode(
        kit, stranger, receiver, enqueued, django_capture_on_commit_callbacks):
    _legacy(kit, receiver)
    _legacy(kit, receiver, livemode=False)
    services.legacy_webhook_create(tenant=stranger.tenant, url=receiver.url(),
                                   events=["lead.created"], secret=SECRET)
    off = _legacy(kit, receiver)
    services.legacy_webhook_update(webhook=off, active=False)
    lead = make_lead(kit)
    with django_capture_on_commit_callbacks(execute=True):
        lead_update(lead=lead, changes={"name": "Renamed"})  # lead.updated: not a legacy type
        make_lead(kit, email="live@example.com")
        make_lead(kit, mode="test", email="test@example.com")
    rows = list(Delivery.objects.values_list("legacy_webhook__livemode", "event__type",
                                             "event__livemode"))
    assert sorted(rows) == [(False, "lead.created", False), (True, "lead.created", True)]


def test_every_step_of_the_legacy_schedule_then_dropped_and_logged(
        kit, receiver, enqueued, caplog, django_capture_on_commit_callbacks):
    receiver.default = Answer(status=500)
    _legacy(kit, receiver)
    with django_capture_on_commit_callbacks(execute=True):
        make_lead(kit)
    delivery = Delivery.objects.get()
    clock = timezone.now()
    attempt_now(delivery, now=clock)
    delays = [timedelta(minutes=1), timedelta(minutes=5), timedelta(minutes=30),
              timedelta(hours=2), timedelta(hours=24)]
    for number, delay in enumerate(delays, start=2):
        row = fresh(delivery)
        assert row.status == "waiting_retry" and row.next_attempt_at == clock + delay
        assert attempt_now(delivery, now=clock + delay - timedelta(seconds=1)) is None
        clock += delay
        assert services.deliveries_sweep(now=clock).enqueued == 1
        with caplog.at_level(logging.WARNING, logger="salesagent.webhooks"):
            assert attempt_now(delivery, now=clock).number == number
    row = fresh(delivery)
    assert (row.status, row.attempt_count) == ("failed", 6)  # the attempt table's six
    assert "dropped after 6 attempts" in caplog.text
    assert len(receiver.received) == 6
    assert all(legacy_signature_ok(r) for r in receiver.received)
    assert len({r.body for r in receiver.received}) == 1  # the same envelope every time
    # Logged for the dashboard, and not retriable by hand (the specification: v1 only).
    assert list(selectors.failed_deliveries(tenant=kit.tenant, livemode=True)) == [row]
    with pytest.raises(Conflict):
        services.delivery_retry(delivery=row)
    assert DeliveryAttempt.objects.filter(delivery=row).count() == 6


def test_legacy_deliveries_are_invisible_to_the_v1_retry(api, kit, receiver, enqueued,
                                                         django_capture_on_commit_callbacks):
    _legacy(kit, receiver)
    with django_capture_on_commit_callbacks(execute=True):
        make_lead(kit)
    delivery = Delivery.objects.get()
    r = api.post(f"/api/v1/webhooks/deliveries/whd_{delivery.pk.hex}/retry",
                 headers=kit.auth("admin"))
    assert r.status_code == 404


# --- the command ----------------------------------------------------------------------------

def _run(*args):
    out = io.StringIO()
    call_command("configure_legacy_webhook", *args, stdout=out)
    return out.getvalue()


def test_the_command_creates_lists_changes_and_deletes(kit, receiver, settings):
    created = json.loads(_run(kit.tenant.public_id, "--url", receiver.url(), "--json"))
    assert created["events"] == ["lead.created", "lead.qualified", "meeting.booked"]
    assert created["secret"].startswith("whsec_") and created["active"] is True
    webhook = LegacyWebhook.objects.get()
    assert webhook.secret == created["secret"] and webhook.livemode is True

    listed = json.loads(_run(str(kit.tenant.pk), "--list", "--json"))
    assert [w["id"] for w in listed] == [created["id"]] and "secret" not in listed[0]

    changed = json.loads(_run(kit.tenant.public_id, "--id", created["id"], "--events",
                              "lead.qualified", "--disable", "--json"))
    assert changed["events"] == ["lead.qualified"] and changed["active"] is False
    assert "secret" not in changed
    _run(kit.tenant.public_id, "--id", created["id"], "--secret", "a-brand-new-secret-123")
    assert LegacyWebhook.objects.get().secret == "a-brand-new-secret-123"

    text = _run(kit.tenant.public_id, "--id", created["id"], "--delete")
    assert "Deleted" in text and not LegacyWebhook.objects.exists()


def test_the_command_refuses_bad_input(kit, stranger, receiver, settings):
    with pytest.raises(CommandError, match="events"):
        _run(kit.tenant.public_id, "--url", receiver.url(), "--events", "lead.updated")
    with pytest.raises(CommandError, match="No tenant"):
        _run("tn_nobody", "--url", receiver.url())
    settings.WEBHOOKS_ALLOW_PRIVATE_TARGETS = False
    with pytest.raises(CommandError, match="resolves to an address that is not public"):
        _run(kit.tenant.public_id, "--url", receiver.url())
    theirs, _ = services.legacy_webhook_create(tenant=stranger.tenant, url="https://1.1.1.1/x",
                                               events=["lead.created"])
    with pytest.raises(CommandError, match="No legacy webhook"):
        _run(kit.tenant.public_id, "--id", str(theirs.pk), "--delete")


def test_the_command_speaks_text_and_creates_disabled_test_mode_webhooks(kit, receiver):
    text = _run(kit.tenant.public_id, "--url", receiver.url(), "--events", "lead.created, ",
                "--secret", "a-given-secret-12345", "--mode", "test", "--disable")
    webhook = LegacyWebhook.objects.get()
    assert (webhook.livemode, webhook.active, webhook.events) == (False, False, ["lead.created"])
    assert text == (f"Legacy webhook {webhook.pk} -> {receiver.url()} (lead.created; inactive)\n"
                    "Signing secret (shown only now): a-given-secret-12345\n")
    assert _run(kit.tenant.public_id, "--list") == "No legacy webhooks.\n"
    assert _run(kit.tenant.public_id, "--list", "--mode", "test") == (
        f"{webhook.pk}  inactive  {receiver.url()}  lead.created\n")

    text = _run(kit.tenant.public_id, "--id", str(webhook.pk), "--enable", "--mode", "test")
    assert text == f"Legacy webhook {webhook.pk} -> {receiver.url()} (lead.created; active)\n"
    assert LegacyWebhook.objects.get().active is True

    deleted = json.loads(_run(kit.tenant.public_id, "--id", str(webhook.pk), "--delete", "--json"))
    assert deleted == {"id": str(webhook.pk), "deleted": True}
    assert not LegacyWebhook.objects.exists()


def test_the_command_needs_a_url_to_create_and_a_well_formed_id_to_change(kit, receiver):
    for args in ((), ("--delete",), ("--url", receiver.url(), "--delete")):
        with pytest.raises(CommandError, match=r"needs --url \(and no --delete\)"):
            _run(kit.tenant.public_id, *args)
    with pytest.raises(CommandError, match="No legacy webhook 'not-a-uuid'"):
        _run(kit.tenant.public_id, "--id", "not-a-uuid", "--enable")
    with pytest.raises(CommandError, match="url: At most 2048 characters."):
        _run(kit.tenant.public_id, "--url", "https://hooks.example.com/" + "x" * 2048)
    assert not LegacyWebhook.objects.exists()
