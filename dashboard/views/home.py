"""The dashboard's first page: what needs a person now, and the newest leads."""

from __future__ import annotations

from datetime import timedelta

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone

from conversations import selectors as conversation_selectors
from conversations.models import ConversationStatus
from leads import selectors as lead_selectors

from ..auth import dashboard_view

WAITING = (ConversationStatus.HANDED_OFF,)


@dashboard_view()
def home(request: HttpRequest) -> HttpResponse:
    actor = request.actor
    # A person sees the handoffs assigned to them; the admin token, every handoff.
    waiting = {"statuses": WAITING, "assignee": actor.user}
    week = actor.read(lead_selectors.lead_counts_since, since=timezone.now() - timedelta(days=7))
    return render(request, "dashboard/home.html", {
        "handoffs": actor.read(conversation_selectors.conversation_queue, **waiting)[:10],
        "handoff_count": actor.read(conversation_selectors.conversation_count, **waiting),
        "active_count": actor.read(conversation_selectors.conversation_count,
                                   statuses=(ConversationStatus.ACTIVE,)),
        "new_leads_week": week["created"],
        "qualified_week": week["qualified"],
        "recent_leads": actor.read(lead_selectors.lead_newest, limit=8),
        "section": "home",
    })
