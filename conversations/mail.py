"""The service's emails: what each says (``templates/emails/``), its ``.ics`` invitation, and
the message a row becomes when it is sent (docs/meetings.md, "Email").

Rendering happens when the row is written, in the event's transaction: the email says what was
true at that moment, and sending it later (or again) sends the same bytes.

No header is built from unchecked text: names, companies and the tenant's name enter the
subject and the sender, where a line break would forge a header or make Django refuse the
message for good. Input refuses control characters (``leads.validation``), but rows written
before that rule, a visitor's words and old email rows still hold them: the headers are made one
line (``core.text.one_line``) when the row is rendered and again when it is sent.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from email.mime.text import MIMEText
from email.utils import formataddr, parseaddr
from typing import Any

from django.conf import settings
from django.core.mail import EmailMultiAlternatives
from django.template.loader import render_to_string
from django.urls import reverse

from core import ics
from core.text import one_line
from tenants.models import Tenant, User

from . import links, scheduling
from .models import EmailKind, Meeting, OutboundEmail

ICS_FILENAME = "invite.ics"


@dataclass(frozen=True)
class Rendered:
    kind: str
    to: str
    from_email: str
    subject: str
    text_body: str
    html_body: str
    ics: str = ""
    ics_method: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def sender(tenant: Tenant) -> str:
    """``DEFAULT_FROM_EMAIL``'s address under the tenant's name: "Acme Inc <noreply@…>"."""
    _, address = parseaddr(settings.DEFAULT_FROM_EMAIL)
    return formataddr((one_line(tenant.name), address or "noreply@localhost"))


def dashboard_url(name: str, **kwargs: Any) -> str:
    return settings.PUBLIC_BASE_URL + reverse(f"dashboard:{name}", kwargs=kwargs)


def _render(kind: str, to: str, tenant: Tenant, subject: str, context: dict[str, Any], *,
            template: str | None = None, ics: str = "", ics_method: str = "") -> Rendered:
    subject = one_line(subject)
    context = {"tenant": tenant, "kind": kind, "subject": subject, **context}
    name = template or kind
    return Rendered(kind=kind, to=one_line(to), from_email=sender(tenant), subject=subject,
                    text_body=render_to_string(f"emails/{name}.txt", context),
                    html_body=render_to_string(f"emails/{name}.html", context),
                    ics=ics, ics_method=ics_method)


# --- the visitor ----------------------------------------------------------------------------

_VISITOR_SUBJECTS = {
    EmailKind.MEETING_INVITATION: "Your meeting with {tenant} is booked: {when}",
    EmailKind.MEETING_UPDATE: "Your meeting with {tenant} has moved: {when}",
    EmailKind.MEETING_CANCELLATION: "Your meeting with {tenant} is cancelled: {when}",
}


def visitor_email(meeting: Meeting, kind: str, *, previous_label: str | None = None) -> Rendered:
    """The confirmation, the update or the cancellation, with its ``.ics`` (REQUEST, or CANCEL
    for a cancellation) and, while the meeting stands, the reschedule and cancel links."""
    tenant, lead = meeting.tenant, meeting.lead
    # In the visitor's time zone, as the chat offered it (the .ics carries UTC).
    label = scheduling.make_slot(tenant, meeting.starts_at, scheduling.meeting_view(meeting)).label
    method = "CANCEL" if kind == EmailKind.MEETING_CANCELLATION else "REQUEST"
    context = {
        "meeting": meeting, "lead": lead, "when": label, "previous_when": previous_label,
        "host": meeting.host, "minutes": int((meeting.ends_at - meeting.starts_at).total_seconds() // 60),
        "links": None if method == "CANCEL" else {
            action: links.link_url(meeting.pk, action) for action in links.ACTIONS},
    }
    subject = _VISITOR_SUBJECTS[kind].format(tenant=tenant.name, when=label)
    return _render(kind, lead.email, tenant, subject, context, template="meeting_visitor",
                   ics=meeting_ics(meeting, method=method), ics_method=method)


def meeting_ics(meeting: Meeting, *, method: str, stamp: datetime | None = None) -> str:
    """The invitation's VEVENT (core.ics), whose UID is the meeting id: REQUEST (a booking or,
    with a higher SEQUENCE, its update) or CANCEL. ORGANIZER is the host, or the tenant when
    there is none; the visitor, who chose the slot, is the ATTENDEE who has accepted."""
    tenant, lead, host = meeting.tenant, meeting.lead, meeting.host
    if host is not None and host.email:
        organizer = ics.Party(host.email, f"{host.display_name} ({tenant.name})")
    else:
        organizer = ics.Party(parseaddr(settings.DEFAULT_FROM_EMAIL)[1], tenant.name)
    event = ics.MeetingEvent(
        uid=str(meeting.pk), sequence=meeting.sequence, stamp=stamp or meeting.updated_at,
        starts_at=meeting.starts_at, ends_at=meeting.ends_at,
        summary=f"Discovery call with {tenant.name}", cancelled=method == "CANCEL",
        organizer=organizer,
        attendee=ics.Party(lead.email, lead.name, {"ROLE": "REQ-PARTICIPANT", "PARTSTAT": "ACCEPTED"}))
    return ics.calendar(event, method=method).decode()


# --- the tenant's people ----------------------------------------------------------------------

def host_email(meeting: Meeting, score_reasons: list[dict[str, Any]]) -> Rendered:
    """To the host: who booked, their score and why, and the conversation in the dashboard."""
    tenant, lead, conversation = meeting.tenant, meeting.lead, meeting.conversation
    label = scheduling.make_slot(tenant, meeting.starts_at).label
    context = {
        "meeting": meeting, "lead": lead, "when": label, "host": meeting.host,
        "reasons": score_reasons,
        "conversation_url": dashboard_url("conversation", conversation_id=conversation.pk)
        if conversation else None,
        "lead_url": dashboard_url("lead", lead_id=lead.pk),
    }
    subject = f"[{tenant.name}] Meeting booked with {lead.name or lead.email}: {label}"
    return _render(EmailKind.HOST_MEETING, meeting.host.email, tenant, subject, context)


def handoff_email(user: User, conversation_facts: dict[str, Any], handoff: dict[str, Any],
                  tenant: Tenant) -> Rendered:
    """To the rep a conversation was handed to: why, how urgent, and its last messages."""
    context_facts = handoff.get("context") or {}
    visitor = context_facts.get("visitor") or {}
    who = visitor.get("name") or visitor.get("email") or "a visitor"
    context = {
        "user": user, "handoff": handoff, "visitor": visitor, "who": who,
        "messages": context_facts.get("lastMessages") or [],
        "conversation_url": dashboard_url("conversation",
                                          conversation_id=conversation_facts["id"]),
    }
    priority = handoff.get("priority") or "normal"
    subject = f"[{tenant.name}] Conversation handed off to you ({priority}): {who}"
    return _render(EmailKind.HANDOFF, user.email, tenant, subject, context)


def note_subject(note: Any) -> str:
    """Whom a note is about, in a few words: the lead's name or address, else the visitor's."""
    lead = note.lead or (note.conversation.lead if note.conversation is not None else None)
    if lead is not None:
        return lead.name or lead.email
    contact = note.conversation.contact or {}
    return contact.get("name") or contact.get("email") or "a visitor"


def note_path(note: Any) -> str:
    """The dashboard page of what the note is on, at the note."""
    if note.conversation_id:
        page = reverse("dashboard:conversation", kwargs={"conversation_id": note.conversation_id})
    else:
        page = reverse("dashboard:lead", kwargs={"lead_id": note.lead_id})
    return f"{page}#note-{note.pk}"


def note_url(note: Any) -> str:
    return settings.PUBLIC_BASE_URL + note_path(note)


def mention_email(user: User, note: Any) -> Rendered:
    """To a teammate a note mentions: who wrote it, about whom, the note, and where it is."""
    author = note.author.display_name if note.author else "A teammate"
    about = note_subject(note)
    context = {"user": user, "author": author, "about": about, "note": note,
               "where": "conversation" if note.conversation_id else "lead",
               "url": note_url(note)}
    subject = f"[{note.tenant.name}] {author} mentioned you in a note about {about}"
    return _render(EmailKind.MENTION, user.email, note.tenant, subject, context)


def staff_invitation_email(invitation: Any, token: str, inviter: str | None) -> Rendered:
    """To the person invited to the team: who invites them (the person, or the tenant itself
    when the admin token invited: "Administrator (admin token)" means nothing to a newcomer),
    as what, and the link (which works once, for a week)."""
    tenant = invitation.tenant
    context = {"inviter": inviter, "role": invitation.get_role_display().lower(),
               "accept_url": dashboard_url("invitation", token=token),
               "expires_at": invitation.expires_at}
    subject = (f"{inviter} invites you to {tenant.name}'s sales team" if inviter
               else f"{tenant.name} invites you to its sales team")
    return _render(EmailKind.STAFF_INVITATION, invitation.email, tenant, subject, context)


# --- sending --------------------------------------------------------------------------------

def message(email: OutboundEmail) -> EmailMultiAlternatives:
    """The row as Django's email framework sends it: plain text, HTML, and the ``.ics``. The
    headers are one line whatever the row holds (a row rendered before they were made so)."""
    built = EmailMultiAlternatives(subject=one_line(email.subject), body=email.text_body,
                                   from_email=one_line(email.from_email), to=[one_line(email.to)],
                                   headers={"X-Service-Email": str(email.pk)})
    if email.html_body:
        built.attach_alternative(email.html_body, "text/html")
    if email.ics:
        part = MIMEText(email.ics, "calendar", "utf-8")
        part.set_param("method", email.ics_method)
        part.add_header("Content-Disposition", "attachment", filename=ICS_FILENAME)
        built.attach(part)
    return built
