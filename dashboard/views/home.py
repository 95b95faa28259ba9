"""The dashboard's first page: the install checklist until every step is done, how the
language-model provider answers (a tenant on one), what needs a person now, and the newest
leads."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone

from analytics import selectors as analytics_selectors
from apikeys import selectors as apikey_selectors
from conversations import selectors as conversation_selectors
from conversations.models import ConversationStatus
from leads import selectors as lead_selectors
from tenants import selectors as tenant_selectors
from webhooks import selectors as webhook_selectors

from ..auth import Actor, dashboard_view

WAITING = (ConversationStatus.HANDED_OFF,)


@dataclass(frozen=True)
class Step:
    """One step of the install checklist: done or not, and where to do it."""

    done: bool
    label: str
    action: str  # what to do, the link's text
    href: str
    managers_only: bool = False  # the page it links to is for managers and the admin token


def install_checklist(actor: Actor) -> list[Step]:
    """The steps of putting the service to work, for the tenant (the same in Live and Test): at
    most five queries, whatever the tenant holds (docs/dashboard.md, "Home")."""
    settings = reverse("dashboard:settings")
    return [
        Step(bool(actor.tenant.allowed_origins), "Allowed origin set",
             "Add your site's address to the allowed origins", f"{settings}#origins",
             managers_only=True),
        Step(actor.read(analytics_selectors.widget_seen, both_modes=True), "Widget seen on a site",
             "Paste the embed snippet into your site's pages", f"{settings}#widget",
             managers_only=True),
        Step(actor.read(conversation_selectors.conversation_any, both_modes=True),
             "First conversation", "Say hello in the widget preview",
             reverse("dashboard:widget-preview")),
        Step(actor.read(apikey_selectors.api_key_usable, both_modes=True), "API key created",
             "Generate an API key", reverse("dashboard:keys"), managers_only=True),
        Step(actor.read(webhook_selectors.webhook_added, both_modes=True), "Webhook added",
             "Add a webhook", reverse("dashboard:webhooks"), managers_only=True),
    ]


@dashboard_view()
def home(request: HttpRequest) -> HttpResponse:
    actor = request.actor
    # A person sees the handoffs assigned to them; the admin token, every handoff.
    waiting = {"statuses": WAITING, "assignee": actor.user}
    week = actor.read(lead_selectors.lead_counts_since, since=timezone.now() - timedelta(days=7))
    checklist = install_checklist(actor)
    return render(request, "dashboard/home.html", {
        # Shown until every step is done.
        "checklist": None if all(step.done for step in checklist) else checklist,
        "checklist_done": sum(step.done for step in checklist),
        "handoffs": actor.read(conversation_selectors.conversation_queue, **waiting)[:10],
        "handoff_count": actor.read(conversation_selectors.conversation_count, **waiting),
        "active_count": actor.read(conversation_selectors.conversation_count,
                                   statuses=(ConversationStatus.ACTIVE,)),
        "new_leads_week": week["created"],
        "qualified_week": week["qualified"],
        "recent_leads": actor.read(lead_selectors.lead_newest, limit=8),
        # One query, for a tenant on a model provider only.
        "provider_health": actor.read(tenant_selectors.provider_health, both_modes=True),
        "on_provider": actor.tenant.agent_provider != "builtin",
        "section": "home",
    })
