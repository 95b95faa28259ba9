"""What every dashboard page shares: service calls with their messages, pagination, redirects."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from django.contrib import messages
from django.core.paginator import Page, Paginator
from django.db.models import QuerySet
from django.forms import Form
from django.http import HttpRequest
from django.utils.http import url_has_allowed_host_and_scheme

from core.errors import ServiceError

T = TypeVar("T")
PAGE_SIZE = 25


def attempt(request: HttpRequest, action: Callable[[], T], success: str | None = None) -> T | None:
    """Runs one service call; its refusal becomes an error message instead of an error page."""
    try:
        result = action()
    except ServiceError as exc:
        detail = "; ".join(f"{d.field.replace('_', ' ')}: {d.message}" for d in exc.details)
        messages.error(request, exc.message + (f" ({detail})" if detail else ""))
        return None
    if success:
        messages.success(request, success)
    return result


def page_of(request: HttpRequest, queryset: QuerySet, size: int = PAGE_SIZE) -> Page:
    """One page of a selector's list (already scoped to the actor's tenant and mode)."""
    if not queryset.ordered:
        raise ValueError("Refusing to paginate an unordered queryset.")
    return Paginator(queryset, size).get_page(request.GET.get("page"))


def safe_next(request: HttpRequest, fallback: str) -> str:
    target = request.POST.get("next") or request.GET.get("next") or ""
    if url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()},
                                       require_https=request.is_secure()):
        return target
    return fallback


def query_without_page(request: HttpRequest) -> str:
    params = request.GET.copy()
    params.pop("page", None)
    return params.urlencode()


def refuse_on_form(form: Form, exc: ServiceError, fields: dict[str, str] | None = None) -> None:
    """A service's refusal shown on the form that asked: each detail beside its field (a detail
    of ``events[2]`` beside ``events``; ``fields`` renames the service's names to the form's),
    the message above the form when no detail has a field there."""
    placed = False
    for detail in exc.details:
        name = detail.field.split("[", 1)[0]
        name = (fields or {}).get(name, name)
        if name in form.fields:
            form.add_error(name, detail.message)
            placed = True
    if not placed:
        form.add_error(None, exc.message)


def mark_invalid(form: Form) -> Form:
    """Marks the form's fields in error (``aria-invalid``), the first one focused, so that a page
    shown again with its errors opens at the first one."""
    first = True
    for name in form.errors:
        if name not in form.fields:
            continue
        attrs = form.fields[name].widget.attrs
        attrs["aria-invalid"] = "true"
        if first:
            attrs["autofocus"] = True
            first = False
    return form
