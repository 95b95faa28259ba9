"""Writes of the analytics app: widget loads (the funnel's Visitors)."""

from __future__ import annotations

from datetime import datetime

from django.db import transaction
from django.utils import timezone

from tenants.models import Tenant

from . import rollups

CHANNELS = ("web_chat", "api", "whatsapp", "slack")


@transaction.atomic
def record_widget_visit(*, tenant: Tenant, visitor_id: str, livemode: bool = True,
                        channel: str = "web_chat", at: datetime | None = None) -> bool:
    """Counts a widget load: the visitor is one of the funnel's Visitors that day.

    The contract for ``/api/widget`` (and any other place that serves the widget): call this
    once for each load that identifies its visitor, with the tenant the widget was served for,
    the visitor's ``visitorId`` (the same string the widget later sends to the chat), the mode
    of the data it serves (``livemode``; the public widget serves live data), and the channel
    (``web_chat`` for the website widget). A visitor counts once per UTC day and channel,
    however many pages they load that day, and whether or not they also chat; the function
    returns True for that first load and False for the repeats. It writes in its own
    transaction (or the caller's) and raises nothing for a repeat. Blank or over-long visitor
    ids (the limit is 200 characters) are not counted.
    """
    if not visitor_id or len(visitor_id) > 200 or channel not in CHANNELS:
        return False
    return rollups.widget_loaded(tenant_id=tenant.pk, livemode=livemode, channel=channel,
                                 visitor_id=visitor_id, at=at or timezone.now())
