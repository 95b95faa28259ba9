"""Reads of conversations: the filtered, ordered lists and a page of messages."""

from __future__ import annotations

import uuid
from collections.abc import Collection
from datetime import datetime

from django.db.models import Count, Q, QuerySet

from tenants.models import Tenant, User

from .models import Conversation, ConversationStatus, Meeting, Message, OutboundEmail

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


def conversation_queue(
    *,
    tenant: Tenant,
    livemode: bool,
    statuses: Collection[str] | None = None,
    assignee: User | None = None,
    channel: str | None = None,
    unassigned: bool = False,
) -> QuerySet[Conversation]:
    """The tenant's conversations in this mode, optionally only in ``statuses``, assigned to
    ``assignee`` (or, ``unassigned``, to nobody) or on ``channel``; latest message first (id
    breaks ties), with lead and assignee joined."""
    queryset = Conversation.objects.filter(tenant=tenant, livemode=livemode)
    if statuses is not None:
        queryset = queryset.filter(status__in=list(statuses))
    if assignee is not None:
        queryset = queryset.filter(assigned_to=assignee)
    elif unassigned:
        queryset = queryset.filter(assigned_to__isnull=True)
    if channel:
        queryset = queryset.filter(channel=channel)
    return queryset.select_related("lead", "assigned_to").order_by("-last_message_at", "-id")


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
