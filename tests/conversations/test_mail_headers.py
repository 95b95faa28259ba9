"""No email header is built from unchecked text (conversations/mail.py; docs/security.md): a
lead's name with a CR/LF in it, from a row written before names were checked, used to go into
the host's meeting email subject, which Django then refused for good ("Header values can't
contain newlines"). Now the headers are made one line, when the row is rendered and again when
it is sent, against a real SMTP server. Issue 28, "Control characters in names"."""

from __future__ import annotations

import pytest

from conversations.models import EmailStatus, OutboundEmail
from conversations.services.emails import email_attempt
from leads.models import Lead
from tenants.models import Tenant
from tests.factories import make_lead

from .meeting_helpers import book

pytestmark = pytest.mark.live  # an SMTP server

FORGED = "Sam\r\nBcc: victim@evil.example\r\nX-Injected: yes"


@pytest.fixture
def host(rep):
    return rep


def _old_row(kit, **values):
    """A lead as a database from before the check may hold it: written around the services."""
    lead = make_lead(kit, email="sam@umbrella.io", name="Sam Lee")
    Lead.objects.filter(pk=lead.pk).update(**values)
    return lead


def test_a_name_with_a_line_break_from_an_old_row_still_sends_the_hosts_email(
        api, kit, host, smtp, send_emails, django_capture_on_commit_callbacks):
    _old_row(kit, name=FORGED)
    with django_capture_on_commit_callbacks(execute=True):
        meeting, _ = book(api, kit)
    assert meeting.lead.name == FORGED  # the visitor's lead, as the old row has it

    rows = OutboundEmail.objects.order_by("kind")
    assert [(row.kind, row.status) for row in rows] == [
        ("host_meeting", EmailStatus.SENT), ("meeting_invitation", EmailStatus.SENT)]
    [received] = smtp.to("ray@acme.test")
    subject = received.message["Subject"]
    assert subject.startswith("[Acme Inc] Meeting booked with Sam Bcc: victim@evil.example "
                              "X-Injected: yes: ")
    assert "\n" not in subject and "\r" not in subject
    assert received.message["X-Injected"] is None and received.message["Bcc"] is None
    everyone = [address for r in smtp.received for address in r.rcpt_tos]
    assert sorted(everyone) == ["ray@acme.test", "sam@umbrella.io"]


def test_an_email_row_rendered_with_a_line_break_is_sent_on_one_line(
        api, kit, host, smtp, email_queue, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        book(api, kit)
    row = OutboundEmail.objects.get(kind="host_meeting")
    # As an email row rendered before the headers were made one line holds them.
    OutboundEmail.objects.filter(pk=row.pk).update(
        subject="Meeting booked with Sam\r\nBcc: victim@evil.example",
        from_email='"Acme\r\nInc" <noreply@localhost>')
    sent = email_attempt(email_id=row.pk)
    assert sent.status == EmailStatus.SENT, sent.last_error
    [received] = smtp.to("ray@acme.test")
    assert received.message["Subject"] == "Meeting booked with Sam Bcc: victim@evil.example"
    assert received.message["From"].addresses[0].display_name == "Acme Inc"
    assert received.rcpt_tos == ["ray@acme.test"]


def test_a_tenant_name_with_a_line_break_names_the_sender_on_one_line(
        api, kit, host, smtp, send_emails, django_capture_on_commit_callbacks):
    # The tenant's name can be edited in the Django admin, around the services.
    Tenant.objects.filter(pk=kit.tenant.pk).update(name="Acme\nInc")
    with django_capture_on_commit_callbacks(execute=True):
        book(api, kit)
    assert set(OutboundEmail.objects.values_list("status", flat=True)) == {EmailStatus.SENT}
    for received in smtp.received:
        assert received.message["From"].addresses[0].display_name == "Acme Inc"
        assert "\n" not in received.message["Subject"]
