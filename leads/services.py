"""Every write to leads. Each runs in a transaction and emits its domain events through
``analytics.events.emit`` (docs/events.md), so a write that rolls back leaves no event.

Services take stored values (the stored status of ``leads.vocabulary``, UUIDs) and check the
invariants that hold whoever calls them: the API surfaces, the admin, the chat agent, imports.
Field names in error details are the v1 names, the only surface that shows details.
"""

from __future__ import annotations

import json
import uuid
from collections import Counter
from collections.abc import Callable
from datetime import UTC, date, datetime
from typing import Any, NamedTuple, TypedDict

from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.validators import validate_email
from django.db import IntegrityError, connection, transaction
from django.db.models import Count, Value
from django.db.models.functions import Lower, TruncDate
from django.utils import timezone

from analytics import rollups
from analytics.events import emit
from analytics.models import EventType
from config.errors import Conflict, FieldError, InvalidRequest, Unprocessable
from tenants.models import Tenant, User

from . import presenters
from .models import Lead, LeadCount, LeadDailyCount, LeadScoreCount, LeadUpdatedDayCount
from .text import custom_fields_text
from .vocabulary import LeadSource, LeadStatus, v1_status

SCORE_CHANGE_THRESHOLD = 10  # a move of this many points is a lead.score_changed activity
MAX_TAGS = 50
MAX_TAG_LENGTH = 50
MAX_CUSTOM_FIELDS_BYTES = 32 * 1024
MAX_CUSTOM_FIELD_KEYS = 100
MAX_CUSTOM_FIELD_KEY_LENGTH = 100

_TEXT_LIMITS = {"name": 200, "company": 200, "title": 200, "phone": 50, "last_intent": 100}

# Model field -> v1 field, for error details and for lead.updated's changedFields.
V1_FIELD = {
    "email": "email", "name": "name", "company": "company", "title": "title", "phone": "phone",
    "status": "status", "score": "score", "source": "source", "tags": "tags",
    "custom_fields": "customFields", "assigned_to_id": "assignedTo", "last_intent": "lastIntent",
}


class LeadEmailTaken(Conflict):
    """The email belongs to another lead of the same tenant and mode."""

    def __init__(self, existing_id: uuid.UUID):
        self.existing_id = existing_id
        super().__init__(
            "A lead with this email already exists.",
            extra={"existingLeadId": presenters.v1_id(existing_id)},
        )
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


# --- validation -----------------------------------------------------------------------------

def _clean_email(value: Any) -> str:
    email = value.strip() if isinstance(value, str) else ""
    if not email:
        raise InvalidRequest("A lead needs an email address.",
                             details=[FieldError("email", "required", "This field is required.")])
    if len(email) > 254:
        raise InvalidRequest("The email is too long.",
                             details=[FieldError("email", "too_long", "At most 254 characters.")])
    try:
        validate_email(email)
    except DjangoValidationError:
        raise InvalidRequest(
            "The email is not valid.",
            details=[FieldError("email", "invalid_format", "Enter a valid email address.")],
        ) from None
    return email


def _clean_text(field: str, value: Any) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise InvalidRequest(details=[FieldError(V1_FIELD[field], "invalid_format",
                                                 "Expected a string.")])
    text = value.strip()
    limit = _TEXT_LIMITS[field]
    if len(text) > limit:
        raise InvalidRequest(details=[FieldError(V1_FIELD[field], "too_long",
                                                 f"At most {limit} characters.")])
    return text


def _clean_choice(field: str, value: Any, choices: list[str]) -> str:
    if value not in choices:
        raise InvalidRequest(details=[FieldError(V1_FIELD[field], "invalid_enum",
                                                 "One of " + ", ".join(choices) + ".")])
    return value


def _clean_score(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidRequest(details=[FieldError("score", "invalid_format",
                                                 "Expected an integer.")])
    if not 0 <= value <= 100:
        raise InvalidRequest(details=[FieldError("score", "out_of_range", "From 0 to 100.")])
    return value


def _clean_tags(value: Any) -> list[str]:
    """Tags are a set kept in the order first given: blanks and repeats are dropped."""
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(tag, str) for tag in value):
        raise InvalidRequest(details=[FieldError("tags", "invalid_format",
                                                 "Expected an array of strings.")])
    tags: list[str] = []
    for raw in value:
        tag = raw.strip()
        if len(tag) > MAX_TAG_LENGTH:
            raise InvalidRequest(details=[FieldError(
                "tags", "too_long", f"A tag has at most {MAX_TAG_LENGTH} characters.")])
        if tag and tag not in tags:
            tags.append(tag)
    if len(tags) > MAX_TAGS:
        raise InvalidRequest(details=[FieldError("tags", "too_long",
                                                 f"At most {MAX_TAGS} tags.")])
    return tags


def _clean_custom_fields(value: Any) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InvalidRequest(details=[FieldError("customFields", "invalid_format",
                                                 "Expected a JSON object.")])
    if len(value) > MAX_CUSTOM_FIELD_KEYS:
        raise InvalidRequest(details=[FieldError(
            "customFields", "too_long", f"At most {MAX_CUSTOM_FIELD_KEYS} keys.")])
    for key in value:
        if not key or len(key) > MAX_CUSTOM_FIELD_KEY_LENGTH:
            raise InvalidRequest(details=[FieldError(
                "customFields", "invalid_format",
                f"Keys have 1 to {MAX_CUSTOM_FIELD_KEY_LENGTH} characters.")])
    if len(json.dumps(value, separators=(",", ":")).encode()) > MAX_CUSTOM_FIELDS_BYTES:
        raise InvalidRequest(details=[FieldError(
            "customFields", "too_long", f"At most {MAX_CUSTOM_FIELDS_BYTES} bytes of JSON.")])
    return value


def _assignee_id(tenant: Tenant, user_id: uuid.UUID | None) -> uuid.UUID | None:
    if user_id is None:
        return None
    if not User.objects.filter(pk=user_id, tenant=tenant, is_active=True).exists():
        raise Unprocessable(
            "assignedTo must be a user of this tenant.",
            details=[FieldError("assignedTo", "invalid_enum",
                                "No active user of this tenant has this id.")],
        )
    return user_id


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


# --- counts (LeadDailyCount, LeadUpdatedDayCount, LeadScoreCount) -------------------------------

class CountKey(NamedTuple):
    """Where a lead is counted: each count table keeps a projection of this."""

    created_day: date  # UTC
    updated_day: date  # UTC
    score: int
    status: str  # stored
    source: str


def _count_key(lead: Lead) -> CountKey:
    return CountKey(lead.created_at.astimezone(UTC).date(), lead.updated_at.astimezone(UTC).date(),
                    lead.score, lead.status, lead.source)


# Each count table: its model, a key's bucket, and the expression that computes the bucket
# from a lead's columns (for the rebuild). Rows are locked in this order.
_COUNT_TABLES: tuple[tuple[type[LeadCount], Callable[[CountKey], Any], Any], ...] = (
    (LeadDailyCount, lambda key: key.created_day, TruncDate("created_at", tzinfo=UTC)),
    (LeadUpdatedDayCount, lambda key: key.updated_day, TruncDate("updated_at", tzinfo=UTC)),
    (LeadScoreCount, lambda key: key.score, None),  # the lead's own column
)


def _adjust_counts(lead: Lead, deltas: dict[CountKey, int]) -> None:
    """Adds ``deltas`` to the lead's tenant-and-mode counts: in each table, one upsert of the
    rows whose count changes (a lead updated on the day of its last update moves nothing in the
    updated-day counts).

    Tables in a fixed order and rows in sorted order, so that two transactions moving counts
    between the same rows lock them in the same order and cannot deadlock.
    """
    for model, bucket_of, _ in _COUNT_TABLES:
        bucket = model.bucket
        moved: Counter[tuple[Any, str, str]] = Counter()
        for key, delta in deltas.items():
            moved[(bucket_of(key), key.status, key.source)] += delta
        changes = sorted((row, n) for row, n in moved.items() if n)
        if not changes:
            continue
        table = connection.ops.quote_name(model._meta.db_table)
        tenant_id = model._meta.get_field("tenant").get_db_prep_save(lead.tenant_id, connection)
        bucket_field = model._meta.get_field(bucket)
        values = ", ".join(["(%s, %s, %s, %s, %s, %s)"] * len(changes))
        params = [param for (value, status, source), delta in changes
                  for param in (tenant_id, lead.livemode,
                                bucket_field.get_db_prep_save(value, connection),
                                status, source, delta)]
        with connection.cursor() as cursor:
            # One statement per table; its rows are taken in the VALUES' (sorted) order.
            cursor.execute(
                f"INSERT INTO {table} (tenant_id, livemode, {bucket}, status, source, count) "
                f"VALUES {values} ON CONFLICT (tenant_id, livemode, {bucket}, status, source) "
                f"DO UPDATE SET count = {table}.count + EXCLUDED.count", params)


@transaction.atomic
def lead_counts_rebuild(*, tenant: Tenant, livemode: bool) -> int:
    """Recomputes the counts of a tenant and mode from its leads; returns the total.

    For leads written around the services (bulk loads, repairs); the services keep the counts
    exact on their own.
    """
    leads = Lead.objects.filter(tenant=tenant, livemode=livemode)
    totals = []
    for model, _, expression in _COUNT_TABLES:
        bucket = model.bucket
        model.objects.filter(tenant=tenant, livemode=livemode).delete()
        grouped = leads.annotate(**{bucket: expression}) if expression is not None else leads
        groups = grouped.values(bucket, "status", "source").annotate(n=Count("id")).order_by()
        rows = [model(tenant=tenant, livemode=livemode, **{bucket: g[bucket]}, status=g["status"],
                      source=g["source"], count=g["n"]) for g in groups]
        model.objects.bulk_create(rows, batch_size=2000)
        totals.append(sum(row.count for row in rows))
    return totals[0]


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
    email = _clean_email(email)
    values = {
        "name": _clean_text("name", name),
        "company": _clean_text("company", company),
        "title": _clean_text("title", title),
        "phone": _clean_text("phone", phone),
        "status": _clean_choice("status", status, LeadStatus.values),
        "source": _clean_choice("source", source, LeadSource.values),
        "tags": _clean_tags(tags),
        "custom_fields": _clean_custom_fields(custom_fields),
    }
    values["assigned_to_id"] = _assignee_id(tenant, assigned_to_id)
    existing = _email_owner(tenant=tenant, livemode=livemode, email=email)
    if existing is not None:
        raise LeadEmailTaken(existing)

    now = timezone.now()
    seen = created_at or now
    lead = Lead(
        tenant=tenant, livemode=livemode, email=email, score=0,
        custom_fields_text=custom_fields_text(values["custom_fields"]),
        first_seen_at=seen, last_active_at=seen, created_at=seen, updated_at=now,
        **values,
    )
    _save_checking_email(lead, email_changed=True, force_insert=True)
    _adjust_counts(lead, {_count_key(lead): 1})
    rollups.lead_created(lead=lead, conversation_id=conversation_id)

    row = presenters.lead_row(lead)
    emit(
        tenant=tenant, livemode=livemode, type=EventType.LEAD_CREATED, lead=lead,
        conversation_id=conversation_id,
        description=f"Lead {email} created",
        data={"lead": presenters.event_lead_created(row),
              "conversationId": None if conversation_id is None else "conv_" + conversation_id.hex},
    )
    _emit_status_events(lead, row, previous_stored=None, reason=qualification_reason)
    return lead


@transaction.atomic
def lead_update(
    *,
    lead: Lead,
    changes: LeadChanges,
    qualification_reason: str | None = None,
    touch_activity: bool = True,
) -> Lead:
    """Changes the fields present in ``changes``; ``updated_at`` (and, unless told otherwise,
    ``last_active_at``) advance even when no value differs.

    Emits ``lead.updated`` when a field the v1 surface shows changed, ``lead.qualified`` or
    ``lead.converted`` (with ``conversion.completed``) when the v1 status becomes that, and
    ``lead.score_changed`` when the score moves by 10 points or more.
    """
    current = (Lead.objects.select_for_update(of=("self",)).select_related("tenant")
               .get(pk=lead.pk))
    before = presenters.lead_row(current)
    key_before = _count_key(current)

    cleaned: dict[str, Any] = {}
    for field, value in changes.items():
        if field == "email":
            cleaned[field] = _clean_email(value)
        elif field in _TEXT_LIMITS:
            cleaned[field] = _clean_text(field, value)
        elif field == "status":
            cleaned[field] = _clean_choice(field, value, LeadStatus.values)
        elif field == "source":
            cleaned[field] = _clean_choice(field, value, LeadSource.values)
        elif field == "score":
            cleaned[field] = _clean_score(value)
        elif field == "tags":
            cleaned[field] = _clean_tags(value)
        elif field == "custom_fields":
            cleaned[field] = _clean_custom_fields(value)
        elif field == "assigned_to_id":
            cleaned[field] = _assignee_id(current.tenant, value)
        else:
            raise ValueError(f"lead_update cannot change {field!r}")

    # In V1_FIELD's order, so that lead.updated lists fields the same way whoever wrote them.
    changed = [field for field in V1_FIELD if field in cleaned and before[field] != cleaned[field]]
    if "email" in changed and before["email"].lower() != cleaned["email"].lower():
        owner = _email_owner(tenant=current.tenant, livemode=current.livemode,
                             email=cleaned["email"], exclude=current.pk)
        if owner is not None:
            raise LeadEmailTaken(owner)

    now = timezone.now()
    for field in changed:
        setattr(current, field, cleaned[field])
    if "custom_fields" in changed:
        current.custom_fields_text = custom_fields_text(current.custom_fields)
    current.updated_at = now
    update_fields = [*changed, "updated_at"]
    if touch_activity:
        current.last_active_at = now
        update_fields.append("last_active_at")
    if "custom_fields" in changed:
        update_fields.append("custom_fields_text")
    _save_checking_email(current, email_changed="email" in changed, update_fields=update_fields)
    key_after = _count_key(current)
    if key_after != key_before:
        _adjust_counts(current, {key_before: -1, key_after: 1})
    rollups.lead_changed(lead=current, before=before, at=now)

    after = presenters.lead_row(current)
    visible = [field for field in changed if _v1_value(field, before) != _v1_value(field, after)]
    if visible:
        email = current.email
        emit(
            tenant=current.tenant, livemode=current.livemode, type=EventType.LEAD_UPDATED,
            lead=current,
            description=f"Lead {email} updated: " + ", ".join(V1_FIELD[f] for f in visible),
            data={
                "lead": presenters.v1_lead(after),
                "changedFields": [V1_FIELD[f] for f in visible],
                "previousValues": {V1_FIELD[f]: _v1_value(f, before) for f in visible},
            },
        )
    if "status" in changed:
        _emit_status_events(current, after, previous_stored=before["status"],
                            reason=qualification_reason)
    if "score" in changed and abs(after["score"] - before["score"]) >= SCORE_CHANGE_THRESHOLD:
        rose = after["score"] > before["score"]
        emit(
            tenant=current.tenant, livemode=current.livemode,
            type=EventType.LEAD_SCORE_CHANGED, lead=current,
            description=(f"Score of {current.email} {'rose' if rose else 'fell'} "
                         f"from {before['score']} to {after['score']}"),
            data={"leadId": presenters.v1_id(current.pk), "previousScore": before["score"],
                  "score": after["score"], "change": after["score"] - before["score"]},
        )
    return current


@transaction.atomic
def lead_delete(*, lead: Lead) -> None:
    """Deletes the lead and emits ``lead.deleted``; its earlier events stay, unlinked."""
    current = (Lead.objects.select_for_update(of=("self",)).select_related("tenant")
               .filter(pk=lead.pk).first())
    if current is None:
        return
    row = presenters.lead_row(current)
    emit(
        tenant=current.tenant, livemode=current.livemode, type=EventType.LEAD_DELETED,
        lead=None,
        description=f"Lead {current.email} deleted",
        data={"lead": presenters.v1_lead(row)},
    )
    rollups.lead_deleted(lead=current)
    current.delete()
    _adjust_counts(current, {_count_key(current): -1})


# --- helpers --------------------------------------------------------------------------------

def _v1_value(field: str, row: dict[str, Any]) -> Any:
    """A field's value as the v1 surface shows it (status word, user id, null for blank)."""
    value = row[field]
    if field == "status":
        return v1_status(value)
    if field == "assigned_to_id":
        return presenters.v1_user_id(value)
    if field in _TEXT_LIMITS:
        return value or None
    return value


def _emit_status_events(lead: Lead, row: dict[str, Any], *, previous_stored: str | None,
                        reason: str | None) -> None:
    """lead.qualified / lead.converted (+ conversion.completed) when the v1 status becomes
    qualified or converted. A move between two stored statuses that v1 shows alike (booked to
    qualified) is no such event."""
    shown = v1_status(row["status"])
    previous = None if previous_stored is None else v1_status(previous_stored)
    if shown == previous:
        return
    common = {"tenant": lead.tenant, "livemode": lead.livemode, "lead": lead}
    if shown == "qualified":
        reason = reason or "Marked qualified by a user of the API"
        emit(
            **common, type=EventType.LEAD_QUALIFIED,
            description=f"Lead {lead.email} qualified: {reason}",
            data={"lead": presenters.event_lead_summary(row, previous_status=previous),
                  "qualificationReason": reason},
        )
    elif shown == "converted":
        summary = presenters.event_lead_summary(row, previous_status=previous)
        emit(**common, type=EventType.LEAD_CONVERTED,
             description=f"Lead {lead.email} converted", data={"lead": summary})
        emit(**common, type=EventType.CONVERSION_COMPLETED,
             description=f"Lead {lead.email} closed-won",
             data={"leadId": summary["id"], "previousStatus": previous, "score": row["score"]})
