"""Writes of the analytics app: widget visits (the funnel's Visitors)."""

from __future__ import annotations

import zlib
from datetime import datetime

from django.db import IntegrityError, transaction
from django.utils import timezone

from tenants.models import Tenant

from . import rollups
from .models import ROLLUP_SHARDS, WidgetVisit

CHANNELS = ("web_chat", "api", "whatsapp", "slack")


@transaction.atomic
def record_widget_visit(*, tenant: Tenant, visitor_id: str, livemode: bool = True,
                        channel: str = "web_chat", at: datetime | None = None) -> bool:
    """Counts a widget load as a visit of the funnel's first stage, Visitors.

    The contract for ``/api/widget`` (and any other place that serves the widget): call this
    once for each load that identifies its visitor, with the tenant the widget was served for,
    the visitor's ``visitorId`` (the same string the widget later sends to the chat), the mode
    of the data it serves (``livemode``; the public widget serves live data), and the channel
    (``web_chat`` for the website widget). A visitor counts once per UTC day, however many
    pages they load that day; the function returns True for that first load and False for the
    repeats. It writes in its own transaction (or the caller's) and raises nothing for a repeat.
    Blank or over-long visitor ids (the limit is 200 characters) are not counted.
    """
    if not visitor_id or len(visitor_id) > 200 or channel not in CHANNELS:
        return False
    moment = at or timezone.now()
    visit = WidgetVisit(tenant=tenant, livemode=livemode, day=rollups.utc_day(moment),
                        visitor_id=visitor_id, channel=channel, first_seen_at=moment)
    try:
        with transaction.atomic():
            visit.save(force_insert=True)
    except IntegrityError:
        return False
    rollups.visit_recorded(visit, shard=zlib.crc32(visitor_id.encode()) % ROLLUP_SHARDS)
    return True
