"""Helpers for the analytics tests: a controllable clock, and the analytics figures computed
from the raw rows (leads, conversations, messages, meetings, events, widget loads) without the
rollups, to hold the rollups to."""

from __future__ import annotations

import itertools
from collections import Counter, defaultdict
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from unittest import mock

from analytics.models import ChannelDailyStat, LeadDailyStat, VisitorDay
from conversations.models import Conversation, Meeting, Message
from core.models import Event
from leads.models import Lead


@contextmanager
def clock(start: datetime, step: timedelta = timedelta(seconds=2)):
    """``timezone.now()`` starts at ``start`` and advances by ``step`` on every call, so that
    the services' writes happen on chosen days and replies take measurable time."""
    ticks = itertools.count()
    with mock.patch("django.utils.timezone.now", side_effect=lambda: start + step * next(ticks)):
        yield


def _capture(lead) -> tuple[str, str]:
    """The channel and visitor of the conversation that captured the lead, blank for none."""
    created = (Event.objects.filter(lead=lead, type="lead.created")
               .values_list("conversation_id", flat=True).first())
    found = (Conversation.objects.filter(pk=created).values_list("channel", "visitor_id").first()
             if created else None)
    return found or ("", "")


def raw_visitor_days(tenant, livemode) -> dict:
    """(day, channel, visitor) -> loads, chats, leads: the widget loads as recorded (they are
    raw data), the conversations started and the leads captured, from the raw rows."""
    out: dict = defaultdict(Counter)
    for row in VisitorDay.objects.filter(tenant=tenant, livemode=livemode):
        out[(row.day, row.channel, row.visitor_id)]["loads"] += row.loads
    for c in Conversation.objects.filter(tenant=tenant, livemode=livemode):
        out[(c.started_at.astimezone(UTC).date(), c.channel, c.visitor_id)]["chats"] += 1
    for lead in Lead.objects.filter(tenant=tenant, livemode=livemode):
        channel, visitor = _capture(lead)
        if channel:
            out[(lead.created_at.astimezone(UTC).date(), channel, visitor)]["leads"] += 1
    return _nonzero(out)


def rollup_visitor_days(tenant, livemode) -> dict:
    out: dict = defaultdict(Counter)
    for row in VisitorDay.objects.filter(tenant=tenant, livemode=livemode):
        for name in ("loads", "chats", "leads"):
            out[(row.day, row.channel, row.visitor_id)][name] += getattr(row, name)
    return _nonzero(out)


def raw_channel_stats(tenant, livemode) -> dict:
    """(day, channel) -> counters, from the raw rows."""
    out: dict = defaultdict(Counter)
    for (day, channel, _), counts in raw_visitor_days(tenant, livemode).items():
        if not counts["leads"]:
            out[(day, channel)]["uncaptured_visitors"] += 1
            out[(day, channel)]["uncaptured_engaged"] += counts["chats"] > 0
    conversations = {c.pk: c for c in Conversation.objects.filter(tenant=tenant, livemode=livemode)}
    for c in conversations.values():
        key = (c.started_at.astimezone(UTC).date(), c.channel)
        out[key]["conversations"] += 1
        out[key]["converted"] += c.lead_id is not None
        out[key]["handed_off"] += c.handoff is not None
    previous: dict = {}
    for m in Message.objects.filter(tenant=tenant, livemode=livemode).order_by("conversation",
                                                                               "sequence"):
        c = conversations[m.conversation_id]
        key = (c.started_at.astimezone(UTC).date(), c.channel)
        out[key]["messages"] += 1
        before = previous.get(m.conversation_id)
        if (m.role == "assistant" and m.author_id is None and before is not None
                and before.role == "user" and before.sequence == m.sequence - 1):
            out[key]["responses"] += 1
            out[key]["response_us"] += (m.created_at - before.created_at) // timedelta(microseconds=1)
        previous[m.conversation_id] = m
    return _nonzero(out)


def _first(lead, type):
    found = (Event.objects.filter(lead=lead, type=type).order_by("occurred_at")
             .values_list("occurred_at", flat=True).first())
    return found


def raw_lead_stats(tenant, livemode) -> dict:
    """(day, source, channel) -> counters, from the raw rows."""
    out: dict = defaultdict(Counter)
    for lead in Lead.objects.filter(tenant=tenant, livemode=livemode):
        channel, _ = _capture(lead)
        qualified = _first(lead, "lead.qualified")
        converted = _first(lead, "lead.converted")
        booked = (Meeting.objects.filter(lead=lead).order_by("created_at")
                  .values_list("created_at", flat=True).first())
        base = (lead.source, channel)
        created_key = (lead.created_at.astimezone(UTC).date(), *base)
        out[created_key]["created"] += 1
        out[created_key]["score_sum"] += lead.score
        out[created_key]["reached"] += bool(qualified) or lead.status == "converted"
        # How far it went: a stage reached implies the ones before it.
        gone = 3 if converted else 2 if booked else 1 if qualified else 0
        for index, name in enumerate(("cohort_qualified", "cohort_booked", "cohort_converted")):
            out[created_key][name] += gone > index
        for name, moment in (("qualified", qualified), ("booked", booked), ("converted", converted)):
            if moment is not None:
                out[(moment.astimezone(UTC).date(), *base)][name] += 1
    return _nonzero(out)


def _nonzero(rows: dict) -> dict:
    """Counters without their zero entries (a negative count stays, to be caught)."""
    out = {}
    for key, counts in rows.items():
        kept = Counter({name: value for name, value in counts.items() if value})
        if kept:
            out[key] = kept
    return out


_CHANNEL = ("uncaptured_visitors", "uncaptured_engaged", "conversations", "converted",
            "handed_off", "messages", "responses", "response_us")
_LEAD = ("created", "score_sum", "reached", "cohort_qualified", "cohort_booked",
         "cohort_converted", "qualified", "booked", "converted")


def rollup_channel_stats(tenant, livemode) -> dict:
    out: dict = defaultdict(Counter)
    for row in ChannelDailyStat.objects.filter(tenant=tenant, livemode=livemode):
        for name in _CHANNEL:
            out[(row.day, row.channel)][name] += getattr(row, name)
    return _nonzero(out)


def rollup_lead_stats(tenant, livemode) -> dict:
    out: dict = defaultdict(Counter)
    for row in LeadDailyStat.objects.filter(tenant=tenant, livemode=livemode):
        for name in _LEAD:
            out[(row.day, row.source, row.channel)][name] += getattr(row, name)
    return _nonzero(out)
