"""The erasure of a person's records: every table that keeps them, in one transaction
(docs/privacy.md, "Erasure").

What goes: the leads (through ``lead_delete``: the counts and rollups take them back, and
``lead.deleted`` fires with the id), the conversations and their messages (through
``conversation_delete``), the meetings, the emails sent to them or about them, the stored
answers of idempotent requests that showed them, the receivers' answers logged for webhook
attempts about them, the email files of the embedded default's mailbox, the files sent in the
conversations (rows and stored bytes), the rows of CSV imports not yet finished that hold their
address, the links to their records in connected CRMs, and every personal
value in the events: the snapshots in their facts lose the person's fields, and any text that
still holds one of the person's strings says ``[erased]``. What stays: ids, counts, statuses and
times, so the history and the analytics still add up. Visitor-days keep counting under a
pseudonym of the visitor id.
"""

from __future__ import annotations

import email
import email.policy
import logging
import re
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.admin.models import LogEntry
from django.db.models import Q, QuerySet, TextField
from django.db.models.functions import Cast, Lower
from django.utils import timezone

from analytics.models import VisitorDay
from apikeys.models import IdempotencyKey
from calendars.services import calendar_events_of
from conversations.models import Attachment, Conversation, Meeting, Message, OutboundEmail
from conversations.services import conversation_delete
from core import ids
from core.models import Event, EventType
from integrations.models import CrmSync, SyncKind
from leads.models import LeadImportRow, LeadSearchWord
from leads.services import lead_delete
from webhooks.models import DeliveryAttempt

from .person import Person

logger = logging.getLogger("salesagent.privacy")

ERASED = "[erased]"
# Keys of event facts (at any depth) that hold what a person said or who they are.
PERSONAL_KEYS = frozenset({
    "email", "name", "company", "title", "phone", "tags", "custom_fields", "last_intent",
    "content", "subject", "summary", "visitor_id", "contact", "metadata", "context",
})


def erase_records(person: Person, *, needles: list[str], whole_person: bool,
                  search_history: bool) -> tuple[Counter, list]:
    """Erases what the database keeps of ``person``; runs inside the caller's transaction.
    Returns the counts per kind and the calendar events still to remove (outside it).

    ``whole_person`` is False for a conversation alone (``DELETE /conversations/{id}``): its
    lead stays, so the lead's own address is not looked for elsewhere. ``search_history`` also
    reads every event of the tenant for the person's address or phone (``_events_naming``): a
    scan, which an erasure asked of the privacy API runs in its task, and a ``DELETE`` or the
    retention sweeper, erasing records they hold, do not."""
    counts: Counter = Counter()
    tenant, livemode = person.tenant, person.livemode
    lead_ids, conversation_ids = person.lead_ids, person.conversation_ids
    # A conversation alone keeps its lead's meetings and the lead's own events.
    meeting_ids = list(meetings_of(person).values_list("pk", flat=True)) if whole_person else []
    calendar = calendar_events_of(meeting_ids=meeting_ids)
    # Collected before the deletes: a deleted lead's events lose their link to it.
    linked = Event.objects.filter(tenant=tenant, livemode=livemode).filter(
        Q(lead__in=lead_ids) | Q(conversation_id__in=conversation_ids))
    event_ids = set(linked.values_list("pk", flat=True))
    # The lead's and the meetings' own events, when their lead stays: only the conversation's
    # strings go from them, not the lead's fields.
    leads_own = set() if whole_person else set(linked.filter(
        Q(type__startswith="lead.") | Q(type__startswith="meeting.")).values_list("pk", flat=True))
    started = timezone.now()

    # Before the deletes: a deleted lead's links lose their lead.
    _forget_crm_links(person, whole_person=whole_person)
    emails = emails_of(person, meeting_ids=meeting_ids, whole_person=whole_person)
    email_ids = {str(pk) for pk in emails.values_list("pk", flat=True)}
    counts["files"] = _erase_mail_files(needles, email_ids)
    counts["emails"] = _delete(emails)
    counts["meetings"] = _delete(Meeting.objects.filter(pk__in=meeting_ids))
    counts["messages"] = Message.objects.filter(conversation__in=conversation_ids).count()
    # Their files go with them: rows now, the stored bytes once this commits (conversation_delete).
    counts["attachments"] = Attachment.objects.filter(conversation__in=conversation_ids).count()
    for conversation in Conversation.objects.filter(pk__in=conversation_ids):
        conversation_delete(conversation=conversation)
        counts["conversations"] += 1
    for lead in person.leads:
        lead_delete(lead=lead)
        counts["leads"] += 1
    if person.leads:
        # Search keeps words whose counts fell to zero; the person's must not stay behind.
        LeadSearchWord.objects.filter(tenant=tenant, livemode=livemode, count=0,
                                      base_count=0).delete()
    event_ids |= _new_events(person, since=started)
    if whole_person and search_history:
        event_ids |= _events_naming(person)
    counts["events"] = _scrub_events(event_ids, needles, strings_only=leads_own)
    counts["webhookAttempts"] = DeliveryAttempt.objects.filter(
        delivery__event_id__in=event_ids).exclude(response_excerpt="").update(response_excerpt="")
    counts["idempotencyRecords"] = _erase_idempotency(person, needles)
    counts["visitorDays"] = _pseudonymise_visitors(person)
    counts["adminLogEntries"] = _scrub_admin_log(person, needles)
    counts["importRows"] = _erase_import_rows(person) if whole_person else 0
    return counts, calendar


def meetings_of(person: Person) -> QuerySet[Meeting]:
    """The person's meetings: their leads' and their conversations'."""
    return Meeting.objects.filter(tenant=person.tenant, livemode=person.livemode).filter(
        Q(lead__in=person.lead_ids) | Q(conversation__in=person.conversation_ids))


def emails_of(person: Person, *, meeting_ids: list, whole_person: bool = True
              ) -> QuerySet[OutboundEmail]:
    """The emails to the person or about them: their leads', meetings' and conversations', and
    any sent to one of their addresses (not for a conversation alone, whose lead stays)."""
    return OutboundEmail.objects.filter(tenant=person.tenant, livemode=person.livemode).filter(
        Q(lead__in=person.lead_ids) | Q(meeting__in=meeting_ids)
        | Q(conversation_id__in=person.conversation_ids)
        | Q(to__in=person.emails if whole_person else []))


def _forget_crm_links(person: Person, *, whole_person: bool) -> None:
    """The links to the person's records in connected CRMs (ids, statuses and the CRM's last
    error, which may echo what was sent): a conversation alone takes its notes' links; the whole
    person all of them. The records in the CRM stay, for the CRM's own erasure."""
    links = CrmSync.objects.filter(tenant=person.tenant, livemode=person.livemode,
                                   lead__in=person.lead_ids)
    if not whole_person:
        links = links.filter(kind=SyncKind.NOTE, object_id__in=person.conversation_ids)
    links.delete()


def _delete(queryset) -> int:
    return queryset.delete()[1].get(queryset.model._meta.label, 0)


def _new_events(person: Person, *, since) -> set[uuid.UUID]:
    """The ``conversation.deleted`` and ``lead.deleted`` events the deletes just emitted."""
    scope = Event.objects.filter(tenant=person.tenant, livemode=person.livemode,
                                 occurred_at__gte=since)
    return set(scope.filter(
        Q(conversation_id__in=person.conversation_ids)
        | Q(type=EventType.LEAD_DELETED, facts__lead__id__in=[str(pk) for pk in person.lead_ids])
    ).values_list("pk", flat=True))


def _events_naming(person: Person) -> set[uuid.UUID]:
    """Events that name the person's address or phone without being linked to them: those of an
    earlier lead of theirs, deleted before the erasure was asked for."""
    strings = [*person.emails, *person.phones]
    if not strings:
        return set()
    scope = Event.objects.filter(tenant=person.tenant, livemode=person.livemode).alias(
        facts_text=Lower(Cast("facts", TextField())), description_lower=Lower("description"))
    wanted = Q()
    for value in strings:
        wanted |= Q(facts_text__contains=value.lower()) | Q(description_lower__contains=value.lower())
    return set(scope.filter(wanted).values_list("pk", flat=True))


def _scrub_events(event_ids: set[uuid.UUID], needles: list[str], *,
                  strings_only: set[uuid.UUID]) -> int:
    events = list(Event.objects.filter(pk__in=event_ids).only("pk", "description", "facts"))
    for event in events:
        event.facts = scrub(event.facts, needles, keys=event.pk not in strings_only)
        event.description = scrub_text(event.description, needles)
    Event.objects.bulk_update(events, ["facts", "description"], batch_size=500)
    return len(events)


def scrub(value: Any, needles: list[str], *, keys: bool = True) -> Any:
    """``value`` (an event's facts) without the person: with ``keys``, each personal key's
    value emptied (a string to null, a list to [], an object to {}); and any other string that
    holds one of ``needles`` replaced by ``[erased]``."""
    if isinstance(value, dict):
        return {key: (_empty(item) if keys and key in PERSONAL_KEYS
                      else scrub(item, needles, keys=keys))
                for key, item in value.items()}
    if isinstance(value, list):
        return [scrub(item, needles, keys=keys) for item in value]
    if isinstance(value, str):
        return ERASED if _holds(value, needles) else value
    return value


def scrub_text(text: str, needles: list[str]) -> str:
    """``text`` with each of ``needles`` (any case) replaced by ``[erased]``."""
    if not needles or not _holds(text, needles):
        return text
    longest_first = sorted(needles, key=len, reverse=True)
    return re.sub("|".join(map(re.escape, longest_first)), ERASED, text, flags=re.IGNORECASE)


def _empty(value: Any) -> Any:
    if isinstance(value, list):
        return []
    if isinstance(value, dict):
        return {}
    return None


def _holds(text: str, needles: list[str]) -> bool:
    lowered = text.lower()
    return any(needle.lower() in lowered for needle in needles)


def _erase_idempotency(person: Person, needles: list[str]) -> int:
    """Stored answers of idempotent requests that showed the person: their ids on either
    surface, or any of their strings (the records live 24 hours; this reads the tenant's)."""
    markers = [*needles, *(str(pk) for pk in person.lead_ids + person.conversation_ids),
               *(ids.encode("lead", pk) for pk in person.lead_ids),
               *(ids.encode("conv", pk) for pk in person.conversation_ids),
               *(ids.encode("sess", pk) for pk in person.conversation_ids)]
    encoded = [marker.lower().encode() for marker in markers]
    records = IdempotencyKey.objects.filter(tenant=person.tenant, livemode=person.livemode)
    doomed = [pk for pk, body in records.values_list("pk", "response_body")
              if any(marker in bytes(body).lower() for marker in encoded)]
    return IdempotencyKey.objects.filter(pk__in=doomed).delete()[0]


def _pseudonymise_visitors(person: Person) -> int:
    """The visitor's days keep counting for the funnel, under a name nobody can trace back. A
    visitor with conversations left (another person's at the same computer, or a conversation
    erased alone) keeps their name: those days are theirs."""
    changed = 0
    scope = Conversation.objects.filter(tenant=person.tenant, livemode=person.livemode)
    for visitor_id in {c.visitor_id for c in person.conversations}:
        if scope.filter(visitor_id=visitor_id).exists():
            continue
        changed += VisitorDay.objects.filter(
            tenant=person.tenant, livemode=person.livemode, visitor_id=visitor_id
        ).update(visitor_id=f"erased-{uuid.uuid4().hex}")
    return changed


def _scrub_admin_log(person: Person, needles: list[str]) -> int:
    """The Django admin's own history names a record by its text (a lead's address)."""
    object_ids = [str(pk) for pk in person.lead_ids + person.conversation_ids]
    entries = list(LogEntry.objects.filter(Q(object_id__in=object_ids)))
    for entry in entries:
        entry.object_repr = ERASED
        entry.change_message = scrub_text(entry.change_message, needles)
    LogEntry.objects.bulk_update(entries, ["object_repr", "change_message"])
    return len(entries)


def _erase_import_rows(person: Person) -> int:
    """Rows of CSV imports not yet finished that hold one of the person's addresses (an import
    keeps its file's rows only until it ends: leads.imports): deleted, so that the import does
    not bring the person back."""
    if not person.emails:
        return 0
    rows = LeadImportRow.objects.filter(
        lead_import__tenant=person.tenant, lead_import__livemode=person.livemode,
    ).alias(text=Lower(Cast("cells", TextField())))
    wanted = Q()
    for address in person.emails:
        wanted |= Q(text__contains=address.lower())
    return rows.filter(wanted).delete()[0]


def _erase_mail_files(needles: list[str], email_ids: set[str]) -> int:
    """Emails the embedded default wrote as files (``var/mail``) that hold the person, read as
    their decoded text since bodies are encoded, and the files of the email rows erased
    (their ``X-Service-Email`` header): a staff note quoted in a mention email names the person
    in words no needle holds."""
    folder = Path(getattr(settings, "EMAIL_FILE_PATH", "") or "")
    if not (needles or email_ids) or not folder.is_dir():
        return 0
    removed = 0
    for path in folder.iterdir():
        if not path.is_file():
            continue
        text = _mail_text(path)
        if _holds(text, needles) or _service_email_id(text) in email_ids:
            path.unlink(missing_ok=True)
            removed += 1
    return removed


_SERVICE_EMAIL = re.compile(r"^X-Service-Email: *([0-9a-f-]{36})\s*$", re.MULTILINE | re.IGNORECASE)


def _service_email_id(text: str) -> str | None:
    """The id of the email row a mail file was sent from (``conversations.mail.message``)."""
    found = _SERVICE_EMAIL.search(text)
    return found.group(1).lower() if found else None


def _mail_text(path: Path) -> str:
    raw = path.read_bytes()
    parts = [raw.decode("utf-8", "replace")]
    try:
        message = email.message_from_bytes(raw, policy=email.policy.default)
        parts += [str(value) for value in message.values()]
        for part in message.walk():
            if not part.is_multipart():
                payload = part.get_payload(decode=True) or b""
                parts.append(payload.decode(part.get_content_charset() or "utf-8", "replace"))
    except Exception:  # a file that is no email is read as its raw text above
        logger.warning("Could not parse %s as an email; read as raw text", path.name)
    return "\n".join(parts)
