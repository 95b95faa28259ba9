"""API keys: generate (the value shown once), rotate with the 24-hour grace period, revoke the
old key early, revoke.

Generate and rotate answer with a redirect (POST-redirect-GET, ``common.secret_redirect``): a
reload of the page that shows the new key reloads that page, and never posts the form again,
which would make a second key. The value waits for that one GET in the session, encrypted, and
the GET removes it: a reload says it was shown once and offers to rotate the key instead.
Nothing else keeps it (the database has only its hash); docs/decisions.md says why."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django import forms
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_POST

from apikeys import selectors as apikey_selectors
from apikeys import services as apikey_services
from apikeys.models import KeyStatus, Scope

from ..auth import dashboard_view
from .common import attempt, secret_page, secret_redirect

if TYPE_CHECKING:
    from apikeys.models import ApiKey

SHOWN = 200
SECRET_KIND = "api-key"


class KeyForm(forms.Form):
    name = forms.CharField(max_length=100, label="Name",
                           widget=forms.TextInput(attrs={"placeholder": "CRM sync"}))
    scope = forms.ChoiceField(choices=Scope.choices, initial=Scope.READ)
    mode = forms.ChoiceField(choices=[("live", "Live (sk_live_)"), ("test", "Test (sk_test_)")],
                             initial="live")


def _key(request: HttpRequest, key_id: str) -> ApiKey:
    """A key of the tenant, live or test (keys belong to the tenant, whichever mode is shown)."""
    return request.actor.get(apikey_selectors.api_key_get, both_modes=True, key_id=key_id)


def _created_by(request: HttpRequest) -> str:
    actor = request.actor
    return f"dashboard:{actor.user.email}" if actor.user else "dashboard:admin-token"


def _shown_once(request: HttpRequest, key: ApiKey, raw: str) -> HttpResponse:
    return secret_redirect(request, kind=SECRET_KIND, object_id=key.pk, secret=raw,
                           to=reverse("dashboard:key-created", args=[key.pk]))


@dashboard_view(manage=True)
def key_index(request: HttpRequest) -> HttpResponse:
    now = timezone.now()
    keys = request.actor.read(apikey_selectors.api_key_list, both_modes=True, limit=SHOWN)
    rows = [{"key": k, "status": k.status_at(now), "label": KeyStatus(k.status_at(now)).label,
             "has_old_in_grace": k.pk in _successors_of_grace_keys(keys, now)} for k in keys]
    return render(request, "dashboard/keys.html", {"rows": rows, "form": KeyForm(),
                                                   "section": "keys"})


def _successors_of_grace_keys(keys: list[ApiKey], now) -> set:
    """The keys that replaced a key still in its grace period, directly or down a chain of
    rotations: "Revoke old key" on any of them ends that grace (``api_key_revoke_old``)."""
    by_id = {k.pk: k for k in keys}
    found: set = set()
    for k in keys:
        if k.status_at(now) != KeyStatus.GRACE:
            continue
        successor = k.replaced_by_id
        while successor is not None and successor not in found:
            found.add(successor)
            successor = by_id[successor].replaced_by_id if successor in by_id else None
    return found


@require_POST
@dashboard_view(manage=True)
def key_create(request: HttpRequest) -> HttpResponse:
    form = KeyForm(request.POST)
    if not form.is_valid():
        messages.error(request, "A key needs a name (1-100 characters), a scope and a mode.")
        return redirect("dashboard:keys")
    data = form.cleaned_data
    # The form chooses the new key's mode; the tenant is the actor's.
    created = attempt(request, lambda: request.actor.write(
        apikey_services.api_key_create, both_modes=True, name=data["name"], scope=data["scope"],
        livemode=data["mode"] == "live", created_by=_created_by(request)),
        f"Key “{data['name']}” created.")
    if created is None:
        return redirect("dashboard:keys")
    return _shown_once(request, *created)


@require_POST
@dashboard_view(manage=True)
def key_rotate(request: HttpRequest, key_id: str) -> HttpResponse:
    key = _key(request, key_id)
    rotated = attempt(request,
                      lambda: apikey_services.api_key_rotate(key=key, created_by=_created_by(request)),
                      f"Key “{key.name}” rotated: the old key keeps working for 24 hours.")
    if rotated is None:
        return redirect("dashboard:keys")
    return _shown_once(request, *rotated)


@dashboard_view(manage=True)
def key_created(request: HttpRequest, key_id: str) -> HttpResponse:
    """The new key's value, once; then only that it was shown. After a rotation, the old key
    and the button that ends its grace period early."""
    key = _key(request, key_id)
    now = timezone.now()
    old = request.actor.read(apikey_selectors.api_key_ancestors, both_modes=True, key_id=key.pk)
    in_grace = [k for k in old if k.status_at(now) == KeyStatus.GRACE]
    return secret_page(request, "dashboard/key_created.html", {
        "key": key, "active": key.status_at(now) == KeyStatus.ACTIVE,
        "rotated": old[0] if old else None, "old_in_grace": in_grace,
        "section": "keys"}, kind=SECRET_KIND, object_id=key.pk)


@require_POST
@dashboard_view(manage=True)
def key_revoke_old(request: HttpRequest, key_id: str) -> HttpResponse:
    key = _key(request, key_id)
    revoked = attempt(request, lambda: apikey_services.api_key_revoke_old(key=key))
    if revoked:
        messages.success(request, "The old key is revoked: only the new one works now."
                         if len(revoked) == 1 else f"The {len(revoked)} old keys of this "
                         "rotation are revoked: only the new one works now.")
    return redirect("dashboard:keys")


@require_POST
@dashboard_view(manage=True)
def key_revoke(request: HttpRequest, key_id: str) -> HttpResponse:
    key = _key(request, key_id)
    attempt(request, lambda: apikey_services.api_key_revoke(key=key), f"Key “{key.name}” revoked.")
    return redirect("dashboard:keys")
