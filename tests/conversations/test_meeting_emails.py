"""The emails of a meeting against a real SMTP server (aiosmtpd on 127.0.0.1): the visitor's
confirmation with its .ics, the signed cancel and reschedule links and the updates they send,
the host's and the handed-off rep's emails and their opt-outs, retries and the recorded failure
of a server that refuses, and the .eml files of the embedded default."""

from __future__ import annotations

import email
import email.policy
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from icalendar import Calendar

from conversations.models import EmailStatus, Meeting, OutboundEmail
from conversations.services.emails import SCHEDULE, email_attempt, emails_sweep
from tests.chat_helpers import chat
from tests.dashboard.client import Client

from .meeting_helpers import book, links_in, path_of

pytestmark = pytest.mark.live  # an SMTP server


@pytest.fixture
def host(rep):
    return rep


def _event(received) -> tuple[Calendar, object]:
    calendar = Calendar.from_ical(received.ics())
    return calendar, calendar.walk("VEVENT")[0]


def _booked(api, kit, smtp, django_capture_on_commit_callbacks, **kwargs):
    with django_capture_on_commit_callbacks(execute=True):
        meeting, reply = book(api, kit, **kwargs)
    return meeting, reply


def test_the_visitor_gets_a_confirmation_with_an_invitation(
        api, kit, host, smtp, send_emails, django_capture_on_commit_callbacks):
    meeting, reply = _booked(api, kit, smtp, django_capture_on_commit_callbacks)
    assert "You'll receive a confirmation by email." in reply["content"]
    assert meeting.host == host and meeting.sequence == 0

    [received] = smtp.to("sam@umbrella.io")
    message = received.message
    assert message["From"].addresses[0].display_name == "Acme Inc"  # the tenant's name
    assert message["Subject"].startswith("Your meeting with Acme Inc is booked")
    assert "Acme Inc" in received.text() and "Acme Inc" in received.html()
    assert "Ray" in received.text()  # the host
    calendar, vevent = _event(received)
    assert str(calendar["METHOD"]) == "REQUEST"
    assert str(vevent["UID"]) == str(meeting.pk)
    assert int(vevent["SEQUENCE"]) == 0
    assert vevent.decoded("DTSTART") == meeting.starts_at.astimezone(UTC)
    assert vevent.decoded("DTEND") == meeting.ends_at.astimezone(UTC)
    assert str(vevent["ATTENDEE"]).lower() == "mailto:sam@umbrella.io"
    assert str(vevent["ORGANIZER"]).lower() == "mailto:ray@acme.test"
    assert received.part("text/calendar").get_param("method") == "REQUEST"
    links = links_in(received.text())
    assert links["cancel"] in received.html() and links["reschedule"] in received.html()

    row = OutboundEmail.objects.get(kind="meeting_invitation")
    assert (row.status, row.attempts, row.to, row.meeting_id) == (
        EmailStatus.SENT, 1, "sam@umbrella.io", meeting.pk)
    assert row.lead_id == meeting.lead_id and row.sent_at is not None


def test_the_host_gets_the_lead_its_score_and_the_conversation(
        api, kit, host, smtp, send_emails, django_capture_on_commit_callbacks):
    meeting, _ = _booked(api, kit, smtp, django_capture_on_commit_callbacks)
    [received] = smtp.to("ray@acme.test")
    text = received.text()
    lead = meeting.lead
    assert "Sam Lee" in text and "sam@umbrella.io" in text
    assert f"Score: {lead.score}/100" in text
    assert meeting.conversation.score_reasons
    for reason in meeting.conversation.score_reasons:
        assert f"+{reason['points']} {reason['reason']}" in text
    assert f"/dashboard/conversations/{meeting.conversation_id}/" in text
    assert received.message["Subject"].startswith("[Acme Inc] Meeting booked with Sam Lee")
    assert received.part("text/calendar") is None


def test_a_host_who_opted_out_gets_no_email(api, kit, host, smtp, send_emails,
                                            django_capture_on_commit_callbacks):
    host.email_on_meeting = False
    host.save()
    _booked(api, kit, smtp, django_capture_on_commit_callbacks)
    assert [r.to for r in smtp.received] == ["sam@umbrella.io"]
    assert not OutboundEmail.objects.filter(kind="host_meeting").exists()


def test_meetings_go_round_robin_to_people_who_take_them(
        api, kit, host, manager, smtp, send_emails, django_capture_on_commit_callbacks):
    first, _ = _booked(api, kit, smtp, django_capture_on_commit_callbacks, visitor="a",
                       email="a@example.com")
    second, _ = _booked(api, kit, smtp, django_capture_on_commit_callbacks, visitor="b",
                        email="b@example.com", choice=1)
    assert {first.host, second.host} == {host, manager}
    manager.takes_meetings = False
    manager.save()
    third, _ = _booked(api, kit, smtp, django_capture_on_commit_callbacks, visitor="c",
                       email="c@example.com", choice=2)
    assert third.host == host


def test_the_cancel_link_asks_then_cancels_and_sends_the_cancellation(
        api, kit, host, smtp, send_emails, django_capture_on_commit_callbacks):
    meeting, _ = _booked(api, kit, smtp, django_capture_on_commit_callbacks)
    links = links_in(smtp.to("sam@umbrella.io")[0].text())
    visitor = Client(enforce_csrf_checks=True)

    page = visitor.get(path_of(links["cancel"]))
    assert page.status_code == 200 and b"Cancel your meeting?" in page.content
    assert page["Referrer-Policy"] == "same-origin"
    meeting.refresh_from_db()
    assert meeting.status == "scheduled"  # a GET changes nothing

    with django_capture_on_commit_callbacks(execute=True):
        done = visitor.post(path_of(links["cancel"]),
                            {"csrfmiddlewaretoken": page.context["csrf_token"]})
    assert done.status_code == 200 and b"Your meeting is cancelled" in done.content
    meeting.refresh_from_db()
    assert (meeting.status, meeting.sequence, meeting.cancelled_by) == ("cancelled", 1, "visitor")

    cancellation = smtp.to("sam@umbrella.io")[-1]
    assert "cancelled" in cancellation.message["Subject"]
    calendar, vevent = _event(cancellation)
    assert str(calendar["METHOD"]) == "CANCEL"
    assert str(vevent["UID"]) == str(meeting.pk) and int(vevent["SEQUENCE"]) == 1
    assert str(vevent["STATUS"]) == "CANCELLED"
    assert "/meetings/" not in cancellation.text()  # no links to a cancelled meeting

    # The link again: nothing more happens.
    count = len(smtp.received)
    again = visitor.post(path_of(links["cancel"]), {"csrfmiddlewaretoken": page.context["csrf_token"]})
    assert again.status_code == 200 and b"can no longer be changed" in again.content
    assert len(smtp.received) == count and OutboundEmail.objects.count() == 3


def test_the_reschedule_link_moves_the_meeting_and_sends_an_update(
        api, kit, host, smtp, send_emails, django_capture_on_commit_callbacks):
    meeting, _ = _booked(api, kit, smtp, django_capture_on_commit_callbacks)
    before = meeting.starts_at
    url = path_of(links_in(smtp.to("sam@umbrella.io")[0].text())["reschedule"])
    visitor = Client()
    page = visitor.get(url)
    assert page.status_code == 200
    slots = page.context["slots"]
    assert slots and all(s.start != before for s in slots)

    bad = visitor.post(url, {"slot": "tomorrow-ish"})
    assert bad.status_code == 400
    meeting.refresh_from_db()
    assert meeting.starts_at == before and meeting.sequence == 0

    off_hours = (before + timedelta(minutes=7)).strftime("%Y-%m-%dT%H:%MZ")
    assert visitor.post(url, {"slot": off_hours}).status_code == 422

    with django_capture_on_commit_callbacks(execute=True):
        done = visitor.post(url, {"slot": slots[0].token})
    assert done.status_code == 200 and b"Your meeting has moved" in done.content
    meeting.refresh_from_db()
    assert meeting.starts_at == slots[0].start and meeting.sequence == 1
    update = smtp.to("sam@umbrella.io")[-1]
    assert "has moved" in update.message["Subject"]
    calendar, vevent = _event(update)
    assert str(calendar["METHOD"]) == "REQUEST"
    assert str(vevent["UID"]) == str(meeting.pk) and int(vevent["SEQUENCE"]) == 1
    assert vevent.decoded("DTSTART") == slots[0].start


def test_links_cannot_be_forged_reused_for_another_meeting_or_kept_forever(
        api, kit, host, smtp, send_emails, settings, django_capture_on_commit_callbacks):
    meeting, _ = _booked(api, kit, smtp, django_capture_on_commit_callbacks)
    other, _ = _booked(api, kit, smtp, django_capture_on_commit_callbacks, visitor="v2",
                       email="ann@hooli.com", choice=1)
    cancel = path_of(links_in(smtp.to("sam@umbrella.io")[0].text())["cancel"])
    visitor = Client()
    token = cancel.split("/")[2]
    # Another meeting's id under the same signature, or any change to the token: not ours.
    forged = token.replace(meeting.pk.hex[:6], other.pk.hex[:6]) if meeting.pk.hex[:6] in token \
        else token[:-2] + ("AA" if not token.endswith("AA") else "BB")
    for path in (f"/meetings/{forged}/", "/meetings/not-a-token/", cancel[:-3] + "x/"):
        r = visitor.post(path)
        assert r.status_code == 404 and b"not valid" in r.content
    settings.MEETING_LINK_MAX_AGE_DAYS = 0
    assert visitor.get(cancel).status_code == 410
    for m in (meeting, other):
        m.refresh_from_db()
        assert m.status == "scheduled"


def test_a_refusing_server_is_retried_with_backoff_then_the_failure_recorded(
        api, kit, host, smtp, send_emails, django_capture_on_commit_callbacks):
    smtp.refuse = True
    meeting, _ = _booked(api, kit, smtp, django_capture_on_commit_callbacks)
    row = OutboundEmail.objects.get(kind="meeting_invitation")
    assert row.status == EmailStatus.QUEUED and row.attempts == 1
    assert "554" in row.last_error and row.next_attempt_at > row.created_at
    # Not due yet: the sweeper leaves it; the task, were it run, does nothing.
    assert email_attempt(email_id=row.pk, now=row.next_attempt_at - timedelta(seconds=1)) is None
    clock = max(OutboundEmail.objects.values_list("next_attempt_at", flat=True))
    send_emails.clear()
    assert emails_sweep(now=clock) == 2  # both emails of the booking were refused
    assert set(send_emails) == set(OutboundEmail.objects.values_list("pk", flat=True))
    for _ in range(SCHEDULE.max_attempts - 1):
        clock = OutboundEmail.objects.get(pk=row.pk).next_attempt_at
        assert email_attempt(email_id=row.pk, now=clock) is not None
    row.refresh_from_db()
    last = SCHEDULE.max_attempts
    assert (row.status, row.attempts, row.next_attempt_at) == (EmailStatus.FAILED, last, None)
    assert "554" in row.last_error and smtp.refused >= SCHEDULE.max_attempts
    assert email_attempt(email_id=row.pk, now=clock + timedelta(days=1)) is None  # settled

    # The server works again: the other email, still queued, goes at its next attempt.
    smtp.refuse = False
    other = OutboundEmail.objects.get(kind="host_meeting")
    assert email_attempt(email_id=other.pk, now=other.next_attempt_at).status == EmailStatus.SENT
    assert [r.to for r in smtp.received] == ["ray@acme.test"]


def _assigned_by_a_manager(api, kit, rep, message="I want to talk to a human", session=None):
    """The visitor asks for a person while nobody is online (the handoff waits), and a manager
    gives it to ``rep``, who is not online either."""
    from conversations.models import Conversation
    from conversations.services import conversation_assign

    sid = chat(api, kit, message, session=session).json()["sessionId"]
    conversation = Conversation.objects.get(pk=uuid.UUID(hex=sid[5:]))
    assert conversation.assigned_to is None
    conversation_assign(conversation=conversation, user=rep)
    return sid


def test_the_rep_a_conversation_is_handed_to_gets_an_email(
        api, kit, host, smtp, send_emails, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        sid = chat(api, kit, "Hi, I'm Ann from Hooli, ann@hooli.com").json()["sessionId"]
        _assigned_by_a_manager(api, kit, host, session=sid)
    [received] = smtp.to("ray@acme.test")
    text = received.text()
    assert "handed off to you" in received.message["Subject"]
    assert "Priority:" in text and "Reason:" in text
    assert "Visitor: I want to talk to a human" in text and "ann@hooli.com" in text
    assert f"/dashboard/conversations/{uuid.UUID(hex=sid[5:])}/" in text
    assert OutboundEmail.objects.get(kind="handoff").status == EmailStatus.SENT


def test_a_rep_who_opted_out_gets_no_handoff_email(api, kit, host, smtp, send_emails,
                                                   django_capture_on_commit_callbacks):
    host.email_on_handoff = False
    host.save()
    with django_capture_on_commit_callbacks(execute=True):
        _assigned_by_a_manager(api, kit, host)
    assert smtp.received == [] and not OutboundEmail.objects.exists()


def test_a_rep_online_sees_the_handoff_live_and_gets_no_email(
        api, kit, host, smtp, send_emails, django_capture_on_commit_callbacks):
    from conversations.models import Conversation
    from tests.factories import make_available

    make_available(host)
    with django_capture_on_commit_callbacks(execute=True):
        chat(api, kit, "I want to talk to a human")
    assert Conversation.objects.get().assigned_to == host
    assert smtp.received == [] and not OutboundEmail.objects.exists()


def test_no_email_is_written_for_a_write_that_rolled_back(kit, host, smtp, send_emails):
    from django.db import transaction

    from conversations.services import meeting_cancel
    from tests.factories import make_lead

    lead = make_lead(kit)
    start = datetime.now(UTC).replace(minute=0, second=0, microsecond=0) + timedelta(days=2)
    meeting = Meeting.objects.create(tenant=kit.tenant, livemode=True, lead=lead,
                                     starts_at=start, ends_at=start + timedelta(minutes=30))
    with pytest.raises(RuntimeError), transaction.atomic():
        meeting_cancel(meeting=meeting, by="staff")
        raise RuntimeError("rolled back")
    assert not OutboundEmail.objects.exists() and send_emails == []


def test_the_embedded_default_writes_eml_files(api, kit, host, settings, tmp_path, send_emails,
                                               django_capture_on_commit_callbacks):
    settings.EMAIL_BACKEND = "core.mail.EmlFileBackend"
    settings.EMAIL_FILE_PATH = str(tmp_path / "mail")
    with django_capture_on_commit_callbacks(execute=True):
        meeting, _ = book(api, kit)
    files = sorted((tmp_path / "mail").glob("*.eml"))
    assert len(files) == 2 and not list((tmp_path / "mail").glob("*.part"))
    messages = [email.message_from_bytes(f.read_bytes(), policy=email.policy.default)
                for f in files]
    invitation = next(m for m in messages if m["To"] == "sam@umbrella.io")
    ics = next(p for p in invitation.walk() if p.get_content_type() == "text/calendar")
    assert str(Calendar.from_ical(ics.get_payload(decode=True)).walk("VEVENT")[0]["UID"]) == \
        str(meeting.pk)


def test_an_email_the_broker_could_not_take_is_the_next_sweeps(
        api, kit, host, smtp, email_queue, broken_broker, django_capture_on_commit_callbacks):
    """The broker refuses connections: the handoff email is queued, carried by no task, and the
    sweeper's next pass (every 15 s) enqueues it, not a minute later (docs/security.md)."""
    from django.utils import timezone

    from tests.fakes.tcp_proxy import REFUSED

    broken_broker.outage(REFUSED)
    email_queue.sending = True  # the real enqueue, to the broker that refuses
    with django_capture_on_commit_callbacks(execute=True):
        _assigned_by_a_manager(api, kit, host)
    row = OutboundEmail.objects.get(kind="handoff")
    assert row.status == EmailStatus.QUEUED and row.enqueued_at is None
    email_queue.sending = False
    email_queue.clear()
    assert emails_sweep(now=timezone.now() + timedelta(seconds=15)) == 1
    assert email_queue == [row.pk]
