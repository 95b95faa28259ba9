"""The dashboard's first page: what needs a person now, and the newest leads."""

from __future__ import annotations

from datetime import timedelta

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone

from conversations.models import Conversation, ConversationStatus
from leads.models import Lead

from ..auth import dashboard_view


@dashboard_view()
def home(request: HttpRequest) -> HttpResponse:
    actor = request.actor
    conversations = Conversation.objects.filter(**actor.scope)
    handoffs = conversations.filter(status=ConversationStatus.HANDED_OFF)
    if actor.user is not None:
        handoffs = handoffs.filter(assigned_to=actor.user)
    week_ago = timezone.now() - timedelta(days=7)
    leads = Lead.objects.filter(**actor.scope)
    return render(request, "dashboard/home.html", {
        "handoffs": handoffs.select_related("lead", "assigned_to")
                            .order_by("-last_message_at", "-id")[:10],
        "handoff_count": handoffs.count(),
        "active_count": conversations.filter(status=ConversationStatus.ACTIVE).count(),
        "new_leads_week": leads.filter(created_at__gte=week_ago).count(),
        "qualified_week": leads.filter(created_at__gte=week_ago,
                                       status__in=["qualified", "booked"]).count(),
        "recent_leads": leads.order_by("-created_at", "-id")[:8],
        "section": "home",
    })
