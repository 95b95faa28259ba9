"""Integrations (managers only): connect a CRM (OAuth 2.0, or a private app's token: verified
at once, never shown again), see where it stands, disconnect it (the grant revoked at the CRM),
and read its sync log with "Try again" on the failed syncs. Reads are ``integrations.selectors``
queries and writes ``integrations.services`` calls, through the actor."""

from __future__ import annotations

import secrets

from django.contrib import messages
from django.core import signing
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from integrations import selectors as crm_selectors
from integrations import services as crm_services
from integrations.connectors import connector_class
from integrations.models import ConnectionStatus, Provider, SyncStatus

from ..auth import dashboard_view
from .common import attempt, page_of

LOG_PAGE_SIZE = 20
STATE_SALT = "dashboard.integrations.oauth"
STATE_MAX_AGE = 600  # seconds the manager has at the CRM's consent page
NONCE_SESSION_KEY = "integrations_oauth_nonce"


def _provider(provider: str) -> str:
    if provider not in Provider.values:
        raise Http404()
    return provider


def _oauth_ready(provider: str) -> bool:
    return connector_class(provider).oauth_configured()


@dashboard_view(manage=True)
def integrations_page(request: HttpRequest) -> HttpResponse:
    actor = request.actor
    connections = {c.provider: c for c in actor.read(crm_selectors.connections_of)}
    cards = []
    for provider, label in Provider.choices:
        connection = connections.get(provider)
        log = None
        if connection is not None:
            log = page_of(request, actor.read(crm_selectors.sync_log, connection=connection),
                          LOG_PAGE_SIZE)
        cls = connector_class(provider)
        cards.append({"provider": provider, "label": label, "connection": connection,
                      "log": log, "oauth": _oauth_ready(provider), "scopes": cls.scopes,
                      "oauth_scopes": cls.oauth_scopes})
    return render(request, "dashboard/integrations.html", {
        "cards": cards, "section": "integrations", "statuses": ConnectionStatus,
        "sync_statuses": SyncStatus})


@require_POST
@dashboard_view(manage=True)
def integration_token(request: HttpRequest, provider: str) -> HttpResponse:
    provider = _provider(provider)
    token = request.POST.get("token", "")
    attempt(request, lambda: request.actor.write(crm_services.crm_connect_token,
                                                 provider=provider, token=token),
            f"{connector_class(provider).label} connected.")
    return redirect("dashboard:integrations")


def _redirect_uri(request: HttpRequest, provider: str) -> str:
    return request.build_absolute_uri(reverse("dashboard:integration-oauth-callback",
                                              args=[provider]))


@dashboard_view(manage=True)
def integration_oauth_start(request: HttpRequest, provider: str) -> HttpResponse:
    provider = _provider(provider)
    if not _oauth_ready(provider):
        raise Http404()
    nonce = secrets.token_urlsafe(16)
    request.session[NONCE_SESSION_KEY] = nonce
    actor = request.actor
    state = signing.dumps({"t": str(actor.tenant.pk), "l": actor.livemode, "p": provider,
                           "n": nonce}, salt=STATE_SALT)
    return redirect(connector_class(provider).authorize_url(
        state=state, redirect_uri=_redirect_uri(request, provider)))


@dashboard_view(manage=True)
def integration_oauth_callback(request: HttpRequest, provider: str) -> HttpResponse:
    """Where the CRM sends the manager back: the state must be the one this session signed for
    this tenant and mode (no one else's grant lands here), then the code is exchanged."""
    provider = _provider(provider)
    actor = request.actor
    if not _state_ok(request, provider):
        messages.error(request, "This authorization was not started here (or took longer than "
                                "10 minutes): connect again.")
        return redirect("dashboard:integrations")
    if request.GET.get("error") or not request.GET.get("code"):
        messages.error(request, f"{connector_class(provider).label} did not grant access "
                                f"({request.GET.get('error') or 'no code'}).")
        return redirect("dashboard:integrations")
    code = request.GET["code"]
    attempt(request, lambda: actor.write(
        crm_services.crm_connect_oauth, provider=provider, code=code,
        redirect_uri=_redirect_uri(request, provider)), f"{connector_class(provider).label} connected.")
    return redirect("dashboard:integrations")


def _state_ok(request: HttpRequest, provider: str) -> bool:
    """The callback's state is the one this session signed, for this tenant, mode and CRM."""
    nonce = request.session.pop(NONCE_SESSION_KEY, None)
    try:
        state = signing.loads(request.GET.get("state", ""), salt=STATE_SALT,
                              max_age=STATE_MAX_AGE)
    except signing.BadSignature:
        return False
    actor = request.actor
    expected = {"t": str(actor.tenant.pk), "l": actor.livemode, "p": provider, "n": nonce}
    return bool(nonce) and state == expected


@require_POST
@dashboard_view(manage=True)
def integration_disconnect(request: HttpRequest, provider: str) -> HttpResponse:
    connection = request.actor.get(crm_selectors.connection_get, provider=_provider(provider))
    connection = crm_services.crm_disconnect(connection=connection)
    if connection.last_error:
        messages.warning(request, f"Disconnected here. {connection.last_error}")
    else:
        messages.success(request, f"{connection.get_provider_display()} disconnected; its "
                                  "access was revoked.")
    return redirect("dashboard:integrations")


@require_POST
@dashboard_view(manage=True)
def integration_sync_retry(request: HttpRequest, sync_id: str) -> HttpResponse:
    sync = request.actor.get(crm_selectors.sync_get, sync_id=sync_id)
    attempt(request, lambda: crm_services.crm_sync_retry(sync=sync), "Trying again now.")
    return redirect("dashboard:integrations")
