"""What every dashboard page shares: service calls with their messages, pagination, redirects,
and the one-time display of a generated secret.

**A secret shown once, and forms that do not create twice** (POST-redirect-GET). A form that
creates something with a secret (an API key, a webhook's signing secret) must not answer its
POST with the secret: a reload would post again and create a second one. It stashes the secret
and redirects; the page it redirects to shows it once::

    # the POST view, once the service has created ``key`` and returned ``raw``:
    return secret_redirect(request, kind="api-key", object_id=key.pk, secret=raw,
                           to=reverse("dashboard:key-created", args=[key.pk]))

    # the GET view at that address:
    return secret_page(request, "dashboard/key_created.html", {"key": key},
                       kind="api-key", object_id=key.pk)

``secret_page`` renders the template with ``secret`` in its context: the value on the first GET,
None on every later one (the template says "shown once" and how to get a new one;
``dashboard/_secret.html`` does both, with a Copy button). Both answers carry
``Cache-Control: no-store``. The secret waits in the session, encrypted (``core.crypto``),
under ``<kind>:<object id>``: the first GET removes it; one never fetched is dropped after
``SECRET_TTL`` (on the next stash or page), and at sign-out with the whole session.
"""

from __future__ import annotations

import time
import zoneinfo
from collections.abc import Callable
from typing import Any, TypeVar

from django import forms
from django.contrib import messages
from django.core.exceptions import ValidationError
from django.core.paginator import Page, Paginator
from django.db.models import QuerySet
from django.forms import Form
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.utils.html import format_html, format_html_join
from django.utils.http import url_has_allowed_host_and_scheme

from core import crypto
from core.errors import ServiceError

T = TypeVar("T")
PAGE_SIZE = 25
SECRETS_SESSION_KEY = "dashboard_shown_once"  # {"<kind>:<id>": {"s": encrypted, "at": epoch s}}
SECRET_TTL = 600  # seconds between the POST and the GET that shows the secret


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


def page_of(request: HttpRequest, queryset: QuerySet, size: int = PAGE_SIZE,
            param: str = "page") -> Page:
    """One page of a selector's list (already scoped to the actor's tenant and mode); ``param``:
    the query parameter of its number, for a page with more than one list."""
    if not queryset.ordered:
        raise ValueError("Refusing to paginate an unordered queryset.")
    return Paginator(queryset, size).get_page(request.GET.get(param))


def safe_next(request: HttpRequest, fallback: str) -> str:
    target = request.POST.get("next") or request.GET.get("next") or ""
    if url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()},
                                       require_https=request.is_secure()):
        return target
    return fallback


def query_without_page(request: HttpRequest, param: str = "page") -> str:
    return query_without(request, param)


def query_without(request: HttpRequest, *names: str) -> str:
    """The page's query string without the parameters ``names``."""
    params = request.GET.copy()
    for name in names:
        params.pop(name, None)
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


def _secrets(request: HttpRequest) -> dict[str, dict[str, Any]]:
    """The stashed secrets still in time (stale ones are dropped from the session)."""
    stash = request.session.get(SECRETS_SESSION_KEY) or {}
    now = time.time()
    fresh = {k: v for k, v in stash.items() if now - v.get("at", 0) <= SECRET_TTL}
    if fresh != stash:
        request.session[SECRETS_SESSION_KEY] = fresh
    return fresh


def secret_redirect(request: HttpRequest, *, kind: str, object_id: object, secret: str,
                    to: str) -> HttpResponseRedirect:
    """Stashes ``secret`` for the one GET of ``to`` that will show it, and redirects there."""
    stash = _secrets(request)
    stash[f"{kind}:{object_id}"] = {"s": crypto.encrypt(secret), "at": time.time()}
    request.session[SECRETS_SESSION_KEY] = stash
    response = HttpResponseRedirect(to)
    response["Cache-Control"] = "no-store"
    return response


def secret_pop(request: HttpRequest, *, kind: str, object_id: object) -> str | None:
    """The stashed secret, removed from the session; None once it has been shown (or expired)."""
    stash = _secrets(request)
    entry = stash.pop(f"{kind}:{object_id}", None)
    if entry is None:
        return None
    request.session[SECRETS_SESSION_KEY] = stash
    return crypto.decrypt(entry["s"]) or None


def secret_page(request: HttpRequest, template: str, context: dict[str, Any], *, kind: str,
                object_id: object) -> HttpResponse:
    """``template`` with ``secret`` (the value the first time, then None); never cached."""
    secret = secret_pop(request, kind=kind, object_id=object_id)
    response = render(request, template, {**context, "secret": secret})
    response["Cache-Control"] = "no-store"
    return response


# Every IANA zone the server knows, but the machine's own ("localtime") and tzdata's placeholder
# ("Factory"), which are nobody's zone.
TIME_ZONES = sorted(zoneinfo.available_timezones() - {"localtime", "Factory"})
_ZONE_BY_FOLDED = {zone.casefold(): zone for zone in TIME_ZONES}
_ZONE_OPTIONS = format_html_join("", '<option value="{}">', ((zone,) for zone in TIME_ZONES))


class TimeZoneInput(forms.TextInput):
    """A text box with the list of every zone (a ``<datalist>`` of its own): the browser offers
    the zones that match what is typed ("paris", "new_y"), and any zone can still be typed."""

    def render(self, name: str, value: Any, attrs: dict[str, Any] | None = None,
               renderer: Any = None) -> str:
        list_id = f"{(attrs or {}).get('id') or name}-zones"
        box = super().render(name, value, {**(attrs or {}), "list": list_id}, renderer)
        return format_html('{}<datalist id="{}">{}</datalist>', box, list_id, _ZONE_OPTIONS)


class TimeZoneField(forms.CharField):
    """An IANA time zone chosen from ``TIME_ZONES`` (in any case: "europe/paris" is Europe/Paris);
    anything else is refused beside the field, before a service sees it."""

    widget = TimeZoneInput(attrs={"autocomplete": "off", "spellcheck": "false",
                                  "placeholder": "Europe/Paris"})

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("max_length", 64)
        super().__init__(**kwargs)

    def clean(self, value: Any) -> str:
        value = super().clean(value)
        if not value:
            return value
        zone = _ZONE_BY_FOLDED.get(value.casefold())
        if zone is None:
            raise ValidationError("Choose a time zone from the list, such as Europe/Paris or "
                                  "America/New_York.", code="invalid_choice")
        return zone
