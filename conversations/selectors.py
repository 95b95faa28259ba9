"""Reads of conversations: the filtered, ordered lists, a page of messages, the search, and the
staff's inbox (tags, notes, canned replies, the visitor's other conversations)."""

from __future__ import annotations

import uuid
from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import Count, OuterRef, Q, QuerySet, Subquery

from tenants.models import Tenant, User

from . import search
from .models import (
    Attachment,
    CannedReply,
    Conversation,
    ConversationRead,
    ConversationStatus,
    ConversationTag,
    Meeting,
    MeetingStatus,
    Message,
    Note,
    OutboundEmail,
    ProactiveMessage,
    Tag,
)

SORT_FIELDS = {"startedAt": "started_at", "lastMessageAt": "last_message_at",
               "messageCount": "message_count"}


def conversation_list(
    queryset: QuerySet[Conversation],
    *,
    leadId: uuid.UUID | None = None,  # noqa: N803 - named after the query parameter
    status: str | None = None,
    channel: str | None = None,
    startDate: datetime | None = None,  # noqa: N803
    endDate: datetime | None = None,  # noqa: N803
    sort_by: str = "lastMessageAt",
    sort_order: str = "desc",
) -> QuerySet[Conversation]:
    """Conversations filtered as the v1 list allows, in a stable order (id breaks ties)."""
    if leadId is not None:
        queryset = queryset.filter(lead_id=leadId)
    if status:
        queryset = queryset.filter(status=status)
    if channel:
        queryset = queryset.filter(channel=channel)
    if startDate is not None:
        queryset = queryset.filter(started_at__gte=startDate)
    if endDate is not None:
        queryset = queryset.filter(started_at__lte=endDate)
    column = SORT_FIELDS[sort_by]
    prefix = "-" if sort_order == "desc" else ""
    return queryset.order_by(f"{prefix}{column}", f"{prefix}id")


def conversation_messages(conversation: Conversation, *, offset: int, limit: int) -> list[Message]:
    """A window of the messages, oldest first: ``offset`` skipped from the beginning."""
    return list(conversation.messages.order_by("sequence")[offset:offset + limit])


def lead_conversations(queryset: QuerySet[Conversation], *, lead_id: uuid.UUID) -> QuerySet[Conversation]:
    """A lead's conversations, most recent first."""
    return queryset.filter(lead_id=lead_id).order_by("-last_message_at", "-id")


# --- the staff dashboard ---------------------------------------------------------------------

def conversation_get(*, tenant: Tenant, livemode: bool, conversation_id: uuid.UUID,
                     ) -> Conversation | None:
    """One conversation of the tenant in this mode (with its lead and assignee), or None."""
    return (Conversation.objects.filter(tenant=tenant, livemode=livemode, pk=conversation_id)
            .select_related("lead", "assigned_to").first())


def _queue_filter(queryset: QuerySet, prefix: str, *, statuses: Collection[str] | None,
                  assignee: User | None, unassigned: bool, channel: str | None,
                  tag: Tag | None) -> QuerySet:
    """The list's filters, on conversations (``prefix`` "") or on their messages
    ("conversation__")."""
    if statuses is not None:
        queryset = queryset.filter(**{f"{prefix}status__in": list(statuses)})
    if assignee is not None:
        queryset = queryset.filter(**{f"{prefix}assigned_to": assignee})
    elif unassigned:
        queryset = queryset.filter(**{f"{prefix}assigned_to__isnull": True})
    if channel:
        queryset = queryset.filter(**{f"{prefix}channel": channel})
    if tag is not None:
        queryset = queryset.filter(**{f"{prefix}tags": tag})
    return queryset


def conversation_queue(
    *,
    tenant: Tenant,
    livemode: bool,
    statuses: Collection[str] | None = None,
    assignee: User | None = None,
    channel: str | None = None,
    unassigned: bool = False,
    tag: Tag | None = None,
    reader: User | None = None,
) -> QuerySet[Conversation]:
    """The tenant's conversations in this mode, optionally only in ``statuses``, assigned to
    ``assignee`` (or, ``unassigned``, to nobody), on ``channel`` or with ``tag``; latest message
    first (id breaks ties), with lead, assignee and tags (one query for a page's). With a
    ``reader``, each has ``seen_count``: how many of its messages they had when they last had
    it open (None: never), read with the page's rows."""
    queryset = _queue_filter(Conversation.objects.filter(tenant=tenant, livemode=livemode), "",
                             statuses=statuses, assignee=assignee, unassigned=unassigned,
                             channel=channel, tag=tag)
    if reader is not None:
        queryset = queryset.annotate(seen_count=Subquery(
            ConversationRead.objects.filter(conversation=OuterRef("pk"), user=reader)
            .values("seen_count")[:1]))
    return (queryset.select_related("lead", "assigned_to").prefetch_related("tags")
            .order_by("-last_message_at", "-id"))


@dataclass(frozen=True)
class Found:
    """A message a search found, with what the lists show of its conversation: plain values
    read in one statement (no model instances: a page of results costs its rows, not four
    objects each)."""

    id: uuid.UUID
    conversation_id: uuid.UUID
    role: str
    content: str
    created_at: datetime
    author_id: uuid.UUID | None
    author_name: str  # the person's name, "" for the visitor and the agent
    status: str
    channel: str
    lead_id: uuid.UUID | None
    lead_label: str  # the lead's name, else its address; "" without a lead
    tags: list[tuple[str, str]]  # (name, colour) of the conversation's tags, by name


@dataclass(frozen=True)
class SearchPage:
    """One page of a message search: no total (counting every match of a common word at a
    million messages costs more than the page), whether there is a next page."""

    results: list[Found]
    number: int
    has_next: bool
    terms: list[str]

    @property
    def has_previous(self) -> bool:
        return self.number > 1


_FOUND = ("id", "conversation_id", "role", "content", "created_at", "author_id",
          "author__first_name", "author__last_name", "author__username", "conversation__status",
          "conversation__channel", "conversation__lead_id", "conversation__lead__name",
          "conversation__lead__email")


def message_search(
    *,
    tenant: Tenant,
    livemode: bool,
    query: str,
    page: int = 1,
    per_page: int = 25,
    statuses: Collection[str] | None = None,
    assignee: User | None = None,
    channel: str | None = None,
    unassigned: bool = False,
    tag: Tag | None = None,
) -> SearchPage:
    """The tenant's messages in this mode (the visitors', the agent's and the staff's) that hold
    every term of ``query`` (``conversations.search``), in conversations that pass the list's
    filters; newest first (id breaks ties), each with its author's name, its conversation's
    status, channel, lead and tags: two queries."""
    terms = search.search_terms(query)
    page = max(1, page)
    if not terms:
        return SearchPage([], page, False, [])
    queryset = _queue_filter(Message.objects.filter(tenant=tenant, livemode=livemode),
                             "conversation__", statuses=statuses, assignee=assignee,
                             unassigned=unassigned, channel=channel, tag=tag)
    start = (page - 1) * per_page
    rows = list(search.matching(queryset, terms).order_by("-created_at", "-id")
                .values_list(*_FOUND)[start:start + per_page + 1])
    shown = rows[:per_page]
    tags: dict[uuid.UUID, list[tuple[str, str]]] = {}
    if shown:
        for conversation_id, name, colour in (
                ConversationTag.objects.filter(conversation_id__in={r[1] for r in shown})
                .order_by("tag__name", "tag_id").values_list("conversation_id", "tag__name",
                                                             "tag__colour")):
            tags.setdefault(conversation_id, []).append((name, colour))
    results = [Found(
        id=r[0], conversation_id=r[1], role=r[2], content=r[3], created_at=r[4], author_id=r[5],
        author_name=(f"{r[6]} {r[7]}".strip() or r[8]) if r[5] else "", status=r[9],
        channel=r[10], lead_id=r[11], lead_label=(r[12] or r[13] or "") if r[11] else "",
        tags=tags.get(r[1], [])) for r in shown]
    return SearchPage(results, page, len(rows) > per_page, terms)


def conversation_any(*, tenant: Tenant) -> bool:
    """Whether the tenant has had a conversation, in either mode."""
    return Conversation.objects.filter(tenant=tenant).exists()


def conversation_count(*, tenant: Tenant, livemode: bool, statuses: Collection[str] | None = None,
                       assignee: User | None = None) -> int:
    """How many conversations ``conversation_queue`` would list with these filters."""
    return conversation_queue(tenant=tenant, livemode=livemode, statuses=statuses,
                              assignee=assignee).count()


def conversation_transcript(*, tenant: Tenant, livemode: bool, conversation_id: uuid.UUID,
                            limit: int) -> list[Message]:
    """The conversation's last ``limit`` messages, oldest first, with their human authors."""
    latest = (Message.objects.filter(tenant=tenant, livemode=livemode, conversation_id=conversation_id)
              .select_related("author").order_by("-sequence")[:limit])
    return list(latest)[::-1]


def lead_conversation_list(*, tenant: Tenant, livemode: bool, lead_id: uuid.UUID,
                           limit: int) -> list[Conversation]:
    """The lead's latest conversations (with their assignees), most recent first."""
    return list(Conversation.objects.filter(tenant=tenant, livemode=livemode, lead_id=lead_id)
                .select_related("assigned_to").order_by("-last_message_at", "-id")[:limit])


def lead_meetings(*, tenant: Tenant, livemode: bool, lead_id: uuid.UUID, limit: int) -> list[Meeting]:
    """The lead's meetings (with their hosts), the latest start first."""
    return list(Meeting.objects.filter(tenant=tenant, livemode=livemode, lead_id=lead_id)
                .select_related("host").order_by("-starts_at", "-id")[:limit])


def meeting_get(*, tenant: Tenant, livemode: bool, meeting_id: uuid.UUID) -> Meeting | None:
    return (Meeting.objects.filter(tenant=tenant, livemode=livemode, pk=meeting_id)
            .select_related("tenant", "lead").first())


def lead_emails(*, tenant: Tenant, livemode: bool, lead_id: uuid.UUID,
                limit: int) -> list[OutboundEmail]:
    """The emails sent (or being sent) about the lead, newest first; without their bodies."""
    return list(OutboundEmail.objects.filter(tenant=tenant, livemode=livemode, lead_id=lead_id)
                .only("id", "kind", "to", "subject", "status", "attempts", "last_error",
                      "created_at", "sent_at", "next_attempt_at")
                .order_by("-created_at", "-id")[:limit])


def handoffs_unread(*, tenant: Tenant, livemode: bool, user: User) -> int:
    """Handoffs given to ``user`` that they have not joined yet (taken over or replied to): the
    count beside Conversations in the dashboard's navigation."""
    return Conversation.objects.filter(tenant=tenant, livemode=livemode, assigned_to=user,
                                       status=ConversationStatus.HANDED_OFF,
                                       joined_at__isnull=True).count()


def staff_with_open_handoffs(*, tenant: Tenant, livemode: bool) -> QuerySet[User]:
    """The tenant's staff, active or not, oldest first, each with ``open_handoffs``: the
    handed-off conversations of this mode assigned to them. One query, whatever the team's
    size."""
    return (User.objects.filter(tenant=tenant)
            .annotate(open_handoffs=Count("conversations", filter=Q(
                conversations__status=ConversationStatus.HANDED_OFF,
                conversations__livemode=livemode)))
            .order_by("-is_active", "date_joined", "id"))


def open_handoffs_of(*, tenant: Tenant, user: User) -> list[Conversation]:
    """The handed-off conversations assigned to ``user``, both modes, oldest first."""
    return list(Conversation.objects.filter(tenant=tenant, assigned_to=user,
                                            status=ConversationStatus.HANDED_OFF)
                .order_by("created_at", "id"))


# --- the inbox: tags, notes, canned replies, the visitor --------------------------------------

def tags(*, tenant: Tenant) -> list[Tag]:
    """The tenant's tags, by name."""
    return list(Tag.objects.filter(tenant=tenant).order_by("name", "id"))


def tag_get(*, tenant: Tenant, tag_id: uuid.UUID | str) -> Tag | None:
    return Tag.objects.filter(tenant=tenant, pk=tag_id).first()


def canned_replies(*, tenant: Tenant) -> list[CannedReply]:
    """The tenant's canned replies, by shortcut."""
    return list(CannedReply.objects.filter(tenant=tenant).order_by("shortcut", "id"))


def proactive_messages(*, tenant: Tenant) -> list[ProactiveMessage]:
    """The tenant's proactive messages, in the order the widget tries them (at most
    ``services.proactive.MAX_PROACTIVE``)."""
    return list(ProactiveMessage.objects.filter(tenant=tenant).order_by("priority", "created_at",
                                                                          "id"))


def proactive_message_get(*, tenant: Tenant, proactive_id: uuid.UUID) -> ProactiveMessage | None:
    return ProactiveMessage.objects.filter(tenant=tenant, pk=proactive_id).first()


def widget_proactive_messages(*, tenant: Tenant) -> list[dict[str, Any]]:
    """What the widget's configuration says of the tenant's active proactive messages, in the
    order it tries them (docs/widget.md, "Proactive messages")."""
    rows = (ProactiveMessage.objects.filter(tenant=tenant, active=True)
            .order_by("priority", "created_at", "id")
            .values_list("pk", "message", "url_pattern", "seconds_on_page", "returning"))
    return [{"id": pk.hex, "message": message, "url": pattern or None, "seconds": seconds,
             "returning": {"yes": True, "no": False}.get(returning)}
            for pk, message, pattern, seconds, returning in rows]


def canned_reply_get(*, tenant: Tenant, reply_id: uuid.UUID) -> CannedReply | None:
    return CannedReply.objects.filter(tenant=tenant, pk=reply_id).first()


def conversation_notes(*, tenant: Tenant, livemode: bool, conversation_id: uuid.UUID,
                       limit: int = 200) -> list[Note]:
    """The notes on the conversation, oldest first (the latest ``limit``), with their authors."""
    latest = (Note.objects.filter(tenant=tenant, livemode=livemode, conversation_id=conversation_id)
              .select_related("author").order_by("-created_at", "-id")[:limit])
    return list(latest)[::-1]


def lead_notes(*, tenant: Tenant, livemode: bool, lead_id: uuid.UUID, limit: int = 200
               ) -> list[Note]:
    """The notes on the lead and on its conversations, oldest first (the latest ``limit``),
    with their authors and conversations."""
    latest = (Note.objects.filter(tenant=tenant, livemode=livemode)
              .filter(Q(lead_id=lead_id) | Q(conversation__lead_id=lead_id))
              .select_related("author", "conversation").order_by("-created_at", "-id")[:limit])
    return list(latest)[::-1]


def note_get(*, tenant: Tenant, livemode: bool, note_id: uuid.UUID) -> Note | None:
    return Note.objects.filter(tenant=tenant, livemode=livemode, pk=note_id).first()


def visitor_conversations(*, tenant: Tenant, livemode: bool, conversation: Conversation,
                          limit: int = 10) -> list[Conversation]:
    """The other conversations of the same visitor, or of the same lead, latest first."""
    same = Q(visitor_id=conversation.visitor_id)
    if conversation.lead_id:
        same |= Q(lead_id=conversation.lead_id)
    return list(Conversation.objects.filter(tenant=tenant, livemode=livemode).filter(same)
                .exclude(pk=conversation.pk).order_by("-last_message_at", "-id")[:limit])


def lead_next_meeting(*, tenant: Tenant, livemode: bool, lead_id: uuid.UUID, after: datetime
                      ) -> Meeting | None:
    """The lead's first scheduled meeting that starts after ``after``."""
    return (Meeting.objects.filter(tenant=tenant, livemode=livemode, lead_id=lead_id,
                                   status=MeetingStatus.SCHEDULED, starts_at__gt=after)
            .order_by("starts_at", "id").first())


# --- attachments (docs/conversations.md, "Attachments") ---------------------------------------


def attachment_get(*, tenant: Tenant, livemode: bool, conversation_id: uuid.UUID,
                   attachment_id: uuid.UUID) -> Attachment | None:
    """A file of the conversation, in the caller's tenant and mode."""
    return Attachment.objects.filter(pk=attachment_id, tenant=tenant, livemode=livemode,
                                     conversation_id=conversation_id).first()


def visitor_sessions(*, tenant: Tenant | None, session_id: uuid.UUID, visitor_id: str):
    """The widget's chat session ``session_id`` of this visitor, on the tenant's live data: the
    one thing the widget's session endpoints (stream, typing, rating) trust. Empty when the
    tenant is unknown."""
    if tenant is None:
        return Conversation.objects.none()
    return Conversation.objects.filter(pk=session_id, tenant=tenant, livemode=True,
                                       visitor_id=visitor_id)


def visitor_attachment(*, tenant: Tenant, session_id: uuid.UUID, visitor_id: str,
                       attachment_id: uuid.UUID) -> Attachment | None:
    """A file of a widget's chat session, for the visitor of that session only (live data)."""
    return Attachment.objects.filter(
        pk=attachment_id, tenant=tenant, livemode=True, conversation_id=session_id,
        conversation__visitor_id=visitor_id).first()


def conversation_attachments(*, tenant: Tenant, livemode: bool, conversation_id: uuid.UUID,
                             limit: int) -> list[Attachment]:
    """The conversation's files, oldest first."""
    return list(Attachment.objects.filter(tenant=tenant, livemode=livemode,
                                          conversation_id=conversation_id)
                .order_by("created_at", "id")[:limit])


def message_attachments(message_ids: list[uuid.UUID]) -> dict[uuid.UUID, list[Attachment]]:
    """The files of these messages (of one conversation already checked), by message."""
    found: dict[uuid.UUID, list[Attachment]] = {}
    if message_ids:
        for attachment in Attachment.objects.filter(message_id__in=message_ids).order_by(
                "created_at", "id"):
            found.setdefault(attachment.message_id, []).append(attachment)
    return found
