"""Every write to leads. Each runs in a transaction, saves its rows and emits its events
(``core.events``); the count tables, analytics, webhooks and live pushes follow from the events.
Each also writes the lead's search row and word counts (``leads.search``) beside the lead.

Services take stored values (the stored status of ``leads.vocabulary``, UUIDs) and enforce the
rules of ``leads.validation``, which hold whoever calls them: the API surfaces, the admin, the
chat agent, imports.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, TypedDict

from django.db import IntegrityError, transaction
from django.db.models import Value
from django.db.models.functions import Lower
from django.utils import timezone

from core import ids
from core.errors import Conflict
from core.events import emit
from core.models import EventType
from tenants.models import Tenant

from . import validation
from .events import V1_FIELD, lead_facts
from .models import Lead
from .search import lead_search_forget, lead_search_touch, lead_search_write
from .text import custom_fields_text
from .vocabulary import LeadSource, LeadStatus, v1_status

SCORE_CHANGE_THRESHOLD = 10  # a move of this many points is a lead.score_changed activity


class LeadEmailTaken(Conflict):
    """The email belongs to another lead of the same tenant and mode."""

    def __init__(self, existing_id: uuid.UUID):
        self.existing_id = existing_id
        super().__init__("A lead with this email already exists.",
                         extra={"existingLeadId": ids.encode("lead", existing_id)})
        # The legacy envelope has no room for extra keys: it names the lead in the message.
        self.legacy_message = f"A lead with this email already exists (id {existing_id})."


class LeadChanges(TypedDict, total=False):
    """The fields ``lead_update`` may change; an absent key leaves the field alone."""

    email: str
    name: str | None
    company: str | None
    title: str | None
    phone: str | None
    status: str  # stored status
    score: int
    source: str
    tags: list[str] | None
    custom_fields: dict[str, Any] | None
    assigned_to_id: uuid.UUID | None
    last_intent: str | None  # set by the chat agent


# --- writes ---------------------------------------------------------------------------------

@transaction.atomic
def lead_create(
    *,
    tenant: Tenant,
    livemode: bool,
    email: str,
    name: str | None = None,
    company: str | None = None,
    title: str | None = None,
    phone: str | None = None,
    status: str = LeadStatus.NEW,
    source: str = LeadSource.API,
    tags: list[str] | None = None,
    custom_fields: dict[str, Any] | None = None,
    assigned_to_id: uuid.UUID | None = None,
    conversation_id: uuid.UUID | None = None,
    qualification_reason: str | None = None,
    created_at: datetime | None = None,
) -> Lead:
    """Creates a lead with score 0 and emits ``lead.created`` (and ``lead.qualified`` or
    ``lead.converted`` when it starts in that status). ``conversation_id`` names the
    conversation that captured it, if any; ``created_at`` backdates an imported lead (its
    first sighting and last activity), which is otherwise created now."""
    values = validation.clean(
        {"email": email, "name": name, "company": company, "title": title, "phone": phone,
         "status": status, "source": source, "tags": tags, "custom_fields": custom_fields,
         "assigned_to_id": assigned_to_id},
        tenant=tenant)
    existing = _email_owner(tenant=tenant, livemode=livemode, email=values["email"])
    if existing is not None:
        raise LeadEmailTaken(existing)

    now = timezone.now()
    seen = created_at or now
    lead = Lead(tenant=tenant, livemode=livemode, score=0,
                custom_fields_text=custom_fields_text(values["custom_fields"]),
                first_seen_at=seen, last_active_at=seen, created_at=seen, updated_at=now,
                **values)
    _save_checking_email(lead, email_changed=True, force_insert=True)
    lead_search_write(lead, created=True)

    facts = lead_facts(lead)
    emit(EventType.LEAD_CREATED, tenant_id=tenant.pk, livemode=livemode, lead_id=lead.pk,
         conversation_id=conversation_id, description=f"Lead {lead.email} created",
         facts={"lead": facts})
    _emit_status_change(lead, facts, previous_status=None, reason=qualification_reason)
    return lead


@transaction.atomic
def lead_update(
    *,
    lead: Lead,
    changes: LeadChanges,
    qualification_reason: str | None = None,
    touch_activity: bool = True,
    score_reasons: list[dict[str, Any]] | None = None,
    origin: str | None = None,
) -> Lead:
    """Changes the fields present in ``changes``; ``updated_at`` (and, unless told otherwise,
    ``last_active_at``) advance even when no value differs. ``score_reasons`` (``{signal,
    points, reason}`` each) say why a new score is what it is; ``lead.updated`` keeps them when
    the score changed, for the lead's history in the dashboard.

    Emits ``lead.updated`` with the fields that changed and their previous values (each
    surface shows what it can see of them), ``lead.qualified`` or ``lead.converted`` (with
    ``conversion.completed``) when the status reaches that, and ``lead.score_changed`` when the
    score moves by 10 points or more. ``origin`` says where a change came from when it is not
    this service (``crm:<provider>``: read back from a CRM); it is kept in the events' facts so
    that the CRM sync does not send the change back where it came from.
    """
    current = (Lead.objects.select_for_update(of=("self",)).select_related("tenant")
               .get(pk=lead.pk))
    cleaned = validation.clean(dict(changes), tenant=current.tenant)
    # In V1_FIELD's order, so that events list fields the same way whoever wrote them.
    changed = [field for field in V1_FIELD
               if field in cleaned and getattr(current, field) != cleaned[field]]
    if "email" in changed:
        _refuse_taken_email(current, cleaned["email"])
    before = lead_facts(current)
    _apply(current, {field: cleaned[field] for field in changed}, touch_activity=touch_activity)
    _emit_update(current, before=before, changed=changed, reason=qualification_reason,
                 score_reasons=score_reasons, origin=origin)
    return current


@transaction.atomic
def lead_email_correct(*, lead: Lead, email: str, conversation_id: uuid.UUID | None = None) -> Lead:
    """The lead's address as the person corrected it (a visitor in the chat: "sorry, a typo,
    it's ..."), which replaces the one they gave before.

    Unlike ``lead_update``, the event keeps no trace of the replaced address: a mistyped address
    is nobody's to keep, and events carry no contact details (ARCHITECTURE.md, "Events").
    ``lead.updated`` records ``corrected: ["email"]`` (and the conversation it happened in)
    instead of a previous value, for the lead's history and the v1 ``changedFields``.

    Raises ``LeadEmailTaken`` when another lead of the tenant and mode has the address; an
    address that differs only in case is the lead's own and changes nothing.
    """
    current = (Lead.objects.select_for_update(of=("self",)).select_related("tenant")
               .get(pk=lead.pk))
    address = validation.clean({"email": email}, tenant=current.tenant)["email"]
    if current.email.lower() == address.lower():
        return current
    _refuse_taken_email(current, address)
    before = lead_facts(current)
    _apply(current, {"email": address}, touch_activity=True)
    emit(EventType.LEAD_UPDATED, tenant_id=current.tenant_id, livemode=current.livemode,
         lead_id=current.pk, conversation_id=conversation_id,
         description=f"Lead {current.pk}: email address corrected",
         facts={"lead": lead_facts(current),
                "previous": {"updated_at": before["updated_at"],
                             "last_active_at": before["last_active_at"]},
                "corrected": ["email"]})
    return current


@transaction.atomic
def lead_delete(*, lead: Lead) -> None:
    """Deletes the lead and emits ``lead.deleted``; its earlier events stay, unlinked."""
    current = Lead.objects.select_for_update(of=("self",)).filter(pk=lead.pk).first()
    if current is None:
        return
    # Emitted first: its subscribers take back what the lead counted while it still exists.
    emit(EventType.LEAD_DELETED, tenant_id=current.tenant_id, livemode=current.livemode,
         description=f"Lead {current.email} deleted", facts={"lead": lead_facts(current)})
    lead_search_forget(current)
    current.delete()


@transaction.atomic
def lead_seen(*, lead_id: uuid.UUID, at: datetime) -> None:
    """The lead was active just now (a chat message): ``lastActiveAt`` moves (in its search row
    too); nothing else changes, so no event."""
    Lead.objects.filter(pk=lead_id).update(last_active_at=at)
    lead_search_touch(lead_id=lead_id, last_active_at=at)


# --- steps ----------------------------------------------------------------------------------

def _refuse_taken_email(lead: Lead, email: str) -> None:
    """409 when the new email is another lead's (a change of case only is the lead's own)."""
    if lead.email.lower() == email.lower():
        return
    owner = _email_owner(tenant=lead.tenant, livemode=lead.livemode, email=email, exclude=lead.pk)
    if owner is not None:
        raise LeadEmailTaken(owner)


def _emit_update(lead: Lead, *, before: dict[str, Any], changed: list[str],
                 reason: str | None, score_reasons: list[dict[str, Any]] | None,
                 origin: str | None = None) -> None:
    """lead.updated, and what the changes amount to: a status reached, a score moved."""
    after = lead_facts(lead)
    previous = {field: before[field] for field in changed}
    previous.update(updated_at=before["updated_at"], last_active_at=before["last_active_at"])
    shown = ", ".join(V1_FIELD[field] for field in changed) or "no field changed"
    facts: dict[str, Any] = {"lead": after, "previous": previous}
    if "score" in changed and score_reasons is not None:
        facts["score_reasons"] = score_reasons
    if "status" in changed and reason:
        facts["reason"] = reason  # why the status moved, for the lead's history
    if origin:
        facts["origin"] = origin
    emit(EventType.LEAD_UPDATED, tenant_id=lead.tenant_id, livemode=lead.livemode,
         lead_id=lead.pk, description=f"Lead {lead.email} updated: {shown}", facts=facts)
    if "status" in changed:
        _emit_status_change(lead, after, previous_status=before["status"], reason=reason,
                            origin=origin)
    if "score" in changed and abs(after["score"] - before["score"]) >= SCORE_CHANGE_THRESHOLD:
        _emit_score_change(lead, previous_score=before["score"])


def _apply(lead: Lead, changes: dict[str, Any], *, touch_activity: bool) -> None:
    """Saves ``changes`` and the timestamps that move with every update."""
    for field, value in changes.items():
        setattr(lead, field, value)
    lead.updated_at = timezone.now()
    update_fields = [*changes, "updated_at"]
    if touch_activity:
        lead.last_active_at = lead.updated_at
        update_fields.append("last_active_at")
    if "custom_fields" in changes:
        lead.custom_fields_text = custom_fields_text(lead.custom_fields)
        update_fields.append("custom_fields_text")
    _save_checking_email(lead, email_changed="email" in changes, update_fields=update_fields)
    lead_search_write(lead)


def _email_owner(*, tenant: Tenant, livemode: bool, email: str,
                 exclude: uuid.UUID | None = None) -> uuid.UUID | None:
    # Lower() on both sides, as in the unique index, so the index answers the lookup.
    matches = (Lead.objects.alias(email_lower=Lower("email"))
               .filter(tenant=tenant, livemode=livemode, email_lower=Lower(Value(email))))
    if exclude is not None:
        matches = matches.exclude(pk=exclude)
    return matches.values_list("pk", flat=True).first()


def _save_checking_email(lead: Lead, *, email_changed: bool, **save_kwargs: Any) -> None:
    """Saves; a concurrent writer that took the email first still yields the 409."""
    if not email_changed:
        lead.save(**save_kwargs)
        return
    try:
        with transaction.atomic():
            lead.save(**save_kwargs)
    except IntegrityError:
        owner = _email_owner(tenant=lead.tenant, livemode=lead.livemode, email=lead.email,
                             exclude=lead.pk)
        if owner is None:
            raise
        raise LeadEmailTaken(owner) from None


def _emit_status_change(lead: Lead, facts: dict[str, Any], *, previous_status: str | None,
                        reason: str | None, origin: str | None = None) -> None:
    """lead.qualified / lead.converted (+ conversion.completed) when the status reaches
    qualified (stored qualified or booked) or converted. A move between two stored statuses
    that count alike (booked to qualified) is no such event."""
    reached = v1_status(lead.status)
    if previous_status is not None and v1_status(previous_status) == reached:
        return
    common = {"tenant_id": lead.tenant_id, "livemode": lead.livemode, "lead_id": lead.pk}
    status_facts: dict[str, Any] = {"lead": facts, "previous_status": previous_status}
    if origin:
        status_facts["origin"] = origin
    if reached == "qualified":
        reason = reason or "Marked qualified by a user of the API"
        emit(EventType.LEAD_QUALIFIED, **common, description=f"Lead {lead.email} qualified: {reason}",
             facts={**status_facts, "reason": reason})
    elif reached == "converted":
        emit(EventType.LEAD_CONVERTED, **common, description=f"Lead {lead.email} converted",
             facts=status_facts)
        emit(EventType.CONVERSION_COMPLETED, **common, description=f"Lead {lead.email} closed-won",
             facts=status_facts)


def _emit_score_change(lead: Lead, *, previous_score: int) -> None:
    rose = lead.score > previous_score
    emit(EventType.LEAD_SCORE_CHANGED, tenant_id=lead.tenant_id, livemode=lead.livemode,
         lead_id=lead.pk,
         description=(f"Score of {lead.email} {'rose' if rose else 'fell'} "
                      f"from {previous_score} to {lead.score}"),
         facts={"lead_id": str(lead.pk), "score": lead.score, "previous_score": previous_score})
