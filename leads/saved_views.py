"""Saved views of the staff's list of leads: a named filter and sort, personal or shared with the
team (docs/dashboard.md, "Saved views"). A view belongs to the tenant, not to a mode."""

from __future__ import annotations

from django.db import transaction

from core.errors import FieldError, Forbidden, InvalidRequest
from core.text import CONTROL_MESSAGE, has_control
from tenants.models import Tenant, User

from .models import LeadSort, SavedView
from .vocabulary import LeadSource, LeadStatus

MAX_VIEWS = 50  # views of one person (shared or not)
MAX_NAME = 80


def _invalid(field: str, code: str, message: str) -> InvalidRequest:
    return InvalidRequest(message, details=[FieldError(field, code, message)])


@transaction.atomic
def saved_view_create(*, tenant: Tenant, owner: User | None, name: str, shared: bool,
                      q: str = "", status: str = "", source: str = "",
                      sort: str = LeadSort.NEWEST) -> SavedView:
    """Saves the list's filter and sort under ``name`` for ``owner`` (None: the admin token), or
    for the team when ``shared``. A name the person already uses for a view they own is
    replaced (saving a view again under its name updates it)."""
    name = (name or "").strip()
    if not name:
        raise _invalid("name", "required", "Name the view.")
    if len(name) > MAX_NAME:
        raise _invalid("name", "too_long", f"At most {MAX_NAME} characters.")
    if has_control(name):
        raise _invalid("name", "invalid_format", CONTROL_MESSAGE)
    q = (q or "").strip()
    if len(q) > 200 or has_control(q):
        raise _invalid("q", "invalid_format", "At most 200 characters, on one line.")
    if status and status not in LeadStatus.values:
        raise _invalid("status", "invalid_enum", "Choose one of the listed statuses.")
    if source and source not in LeadSource.values:
        raise _invalid("source", "invalid_enum", "Choose one of the listed sources.")
    if sort not in LeadSort.values:
        raise _invalid("sort", "invalid_enum", "Choose one of the listed orders.")
    mine = SavedView.objects.select_for_update().filter(
        tenant=tenant, **({"owner": owner} if owner else {"owner__isnull": True}))
    values = {"shared": shared, "q": q, "status": status, "source": source, "sort": sort}
    existing = mine.filter(name=name).first()
    if existing is not None:
        for field, value in values.items():
            setattr(existing, field, value)
        existing.save(update_fields=list(values))
        return existing
    if mine.count() >= MAX_VIEWS:
        raise _invalid("name", "too_long", f"At most {MAX_VIEWS} views: delete one first.")
    return SavedView.objects.create(tenant=tenant, owner=owner, name=name, **values)


@transaction.atomic
def saved_view_delete(*, view: SavedView, by: User | None, can_manage: bool) -> None:
    """Deletes a view: its owner may, and a manager (or the admin token) may delete a shared
    one."""
    own = view.owner_id == (by.pk if by else None)
    if not own and not (view.shared and can_manage):
        raise Forbidden("Only its owner, or a manager for a shared view, can delete this view.")
    view.delete()
