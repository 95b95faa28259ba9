"""Who a handed-off conversation goes to (docs/dashboard.md, "Availability and routing").

A handoff goes only to a person who is there: active, online, within their working hours (in
their time zone) and under their capacity (open handoffs assigned to them). The rep known for
the lead comes first; otherwise round-robin, whoever has waited longest since their last
assignment. With nobody available it waits, assigned to nobody, in the Unassigned queue, and
the visitor is told when the next opening is. Whoever comes online (and the sweeper, for hours
that begin and capacity that frees) is offered the oldest waiting handoffs.

Capacity holds under concurrency: a routing decision locks the rows of the people it may
choose (in one order, by id) before it counts their open handoffs, so a second handoff waits for
the first to commit and then counts it.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime

from django.db import transaction
from django.db.models import Count, F
from django.utils import timezone

from core import metrics
from core.models import EventType
from tenants.availability import hours_of, next_opening, within_hours
from tenants.models import Tenant, User, UserStatus

from ..events import emit_conversation_event
from ..models import Conversation, ConversationStatus


@dataclass(frozen=True)
class Waiting:
    """Why a handoff waits: whether someone is in their working hours now (online or not), and
    otherwise the next opening (None: the tenant has nobody with working hours)."""

    someone_in_hours: bool
    next_opening: datetime | None


def open_handoffs(user_ids: list[uuid.UUID]) -> dict[uuid.UUID, int]:
    """How many open (handed-off) conversations each person has, across both modes."""
    rows = (Conversation.objects.filter(assigned_to_id__in=user_ids,
                                        status=ConversationStatus.HANDED_OFF)
            .values("assigned_to_id").annotate(n=Count("id")))
    return {row["assigned_to_id"]: row["n"] for row in rows}


def _available(people: list[User], tenant: Tenant, now: datetime) -> list[User]:
    """Those of ``people`` (online, active) who are within their hours and under capacity."""
    in_hours = [person for person in people if within_hours(hours_of(person, tenant), now)]
    load = open_handoffs([person.pk for person in in_hours])
    return [person for person in in_hours if load.get(person.pk, 0) < person.capacity]


def rep_for_handoff(*, tenant: Tenant, now: datetime, preferred_id: uuid.UUID | None = None
                    ) -> User | None:
    """The person a handoff goes to, marked as assigned ``now``; None when nobody is available.
    Runs inside its caller's transaction, which holds the candidates' rows until it commits."""
    candidates = list(User.objects.select_for_update()
                      .filter(tenant=tenant, is_active=True, status=UserStatus.ONLINE)
                      .order_by("pk"))
    available = _available(candidates, tenant, now)
    if not available:
        metrics.HANDOFFS_UNASSIGNED.inc()
        return None
    chosen = next((person for person in available if person.pk == preferred_id), None)
    if chosen is None:  # never assigned first, then whoever waited longest
        chosen = min(available, key=lambda person: (
            person.last_assigned_at is not None, person.last_assigned_at or now,
            person.date_joined, person.pk))
    chosen.last_assigned_at = now
    chosen.save(update_fields=["last_assigned_at"])
    return chosen


def waiting(*, tenant: Tenant, now: datetime) -> Waiting:
    """What a visitor whose handoff waits is told: someone is in their hours (busy or not
    online yet), or when the next working hours of the tenant's people begin."""
    people = list(User.objects.filter(tenant=tenant, is_active=True))
    if any(within_hours(hours_of(person, tenant), now) for person in people):
        return Waiting(someone_in_hours=True, next_opening=None)
    return Waiting(someone_in_hours=False, next_opening=next_opening(people, tenant, now))


def handoffs_offer(*, user_id: uuid.UUID, now: datetime | None = None) -> int:
    """Offers the person the oldest handoffs waiting in their tenant's Unassigned queue, up to
    their capacity, if they are available; returns how many they got."""
    now = now or timezone.now()
    given = 0
    while _offer_one(user_id, now):
        given += 1
    return given


@transaction.atomic
def _offer_one(user_id: uuid.UUID, now: datetime) -> bool:
    person = (User.objects.select_for_update(of=("self",)).select_related("tenant")
              .filter(pk=user_id, is_active=True, status=UserStatus.ONLINE,
                      tenant__isnull=False).first())
    if person is None or not _available([person], person.tenant, now):
        return False
    conversation = (Conversation.objects.select_for_update(skip_locked=True, of=("self",))
                    .select_related("tenant")
                    .filter(tenant_id=person.tenant_id, status=ConversationStatus.HANDED_OFF,
                            assigned_to__isnull=True)
                    .order_by(F("handed_off_at").asc(nulls_first=True), "id").first())
    if conversation is None:
        return False
    conversation.assigned_to = person
    conversation.joined_at = None
    conversation.save(update_fields=["assigned_to", "joined_at", "updated_at"])
    person.last_assigned_at = now
    person.save(update_fields=["last_assigned_at"])
    emit_conversation_event(conversation, EventType.CONVERSATION_ASSIGNED,
                            f"Waiting conversation offered to {person.display_name}",
                            auto_assigned=True)
    return True


def routing_sweep(*, now: datetime | None = None) -> int:
    """Beat: offers the waiting handoffs of every tenant that has some to its people online
    (whose working hours may have begun, or whose capacity freed since); returns how many."""
    now = now or timezone.now()
    tenant_ids = (Conversation.objects.filter(status=ConversationStatus.HANDED_OFF,
                                              assigned_to__isnull=True)
                  .order_by().values_list("tenant_id", flat=True).distinct())
    people = (User.objects.filter(tenant_id__in=list(tenant_ids), is_active=True,
                                  status=UserStatus.ONLINE)
              .order_by(F("last_assigned_at").asc(nulls_first=True), "pk")
              .values_list("pk", flat=True))
    return sum(handoffs_offer(user_id=pk, now=now) for pk in people)


def offer_on_status(event) -> None:
    """After-commit subscriber of ``user.status_changed``: someone who came online is offered
    the handoffs waiting for a person."""
    if event.facts.get("status") == UserStatus.ONLINE:
        handoffs_offer(user_id=uuid.UUID(event.facts["user_id"]))
