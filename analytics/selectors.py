"""Reads of the analytics of both surfaces: the rollups and the event log's activity feed."""

from __future__ import annotations

import uuid
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any

from django.db.models import Count, Q, QuerySet, Sum
from django.db.models.functions import Coalesce

from conversations.models import Conversation, Rating
from core.models import Event
from leads.models import LeadDailyCount
from leads.vocabulary import LEGACY_OF_STORED, LEGACY_STATUSES
from tenants.models import Tenant

from .models import ACTIVITY_TYPES, ChannelDailyStat, LeadDailyStat, VisitorDay

# --- analytics ------------------------------------------------------------------------------
#
# Every figure is read from the rollups (``analytics.models``, docs/analytics.md): one query
# per rollup table and request, whatever the size of the tenant. Days are UTC days.

GRANULARITIES = ("day", "week", "month")
COMPARISONS = ("previous_period", "previous_year")
FUNNEL_STAGES = ("Visitors", "Engaged (Started Chat)", "Lead Captured", "Qualified",
                 "Demo Booked", "Converted")
MAX_RANGE_DAYS = 365


@dataclass(frozen=True)
class Period:
    """A range of UTC days, both ends included."""

    start: date
    end: date

    def days(self) -> Iterator[date]:
        day = self.start
        while day <= self.end:
            yield day
            day += timedelta(days=1)

    def as_dict(self) -> dict[str, str]:
        return {"startDate": self.start.isoformat(), "endDate": self.end.isoformat()}

    def label(self) -> str:
        return f"{self.start.isoformat()}/{self.end.isoformat()}"


def comparison_period(period: Period, compare_with: str) -> Period:
    """``previous_period``: as many days, ending the day before the start; ``previous_year``:
    the same dates a year earlier (29 February becomes the 28th)."""
    if compare_with == "previous_period":
        end = period.start - timedelta(days=1)
        return Period(end - (period.end - period.start), end)
    return Period(_year_earlier(period.start), _year_earlier(period.end))


def _year_earlier(day: date) -> date:
    try:
        return day.replace(year=day.year - 1)
    except ValueError:  # 29 February
        return day.replace(year=day.year - 1, day=28)


def buckets(period: Period, granularity: str) -> list[Period]:
    """The time series' buckets: days, ISO weeks (Monday to Sunday) or calendar months, the
    first and last cut to the period."""
    out: list[Period] = []
    start = period.start
    while start <= period.end:
        if granularity == "day":
            end = start
        elif granularity == "week":
            end = start + timedelta(days=6 - start.weekday())
        else:
            following = date(start.year + (start.month == 12), start.month % 12 + 1, 1)
            end = following - timedelta(days=1)
        end = min(end, period.end)
        out.append(Period(start, end))
        start = end + timedelta(days=1)
    return out


_CHANNEL_SUMS = ("conversations", "converted", "handed_off", "messages", "responses",
                 "response_us")
_LEAD_SUMS = ("created", "score_sum", "reached", "qualified", "booked", "converted")


def _in_periods(periods: list[Period]) -> Q:
    condition = Q()
    for period in periods:
        condition |= Q(day__gte=period.start, day__lte=period.end)
    return condition


def _daily(queryset: QuerySet, names: tuple[str, ...], periods: list[Period]) -> dict[date, dict]:
    """Per day, the sums of ``names`` over the shards (and whatever else the rows split by)."""
    rows = (queryset.filter(_in_periods(periods)).values("day")
            .annotate(**{name: Sum(name) for name in names}).order_by())
    return {row.pop("day"): row for row in rows}


def _total(daily: dict[date, dict], period: Period, names: tuple[str, ...]) -> dict[str, int]:
    totals = dict.fromkeys(names, 0)
    for day in period.days():
        row = daily.get(day)
        if row is not None:
            for name in names:
                totals[name] += row[name] or 0
    return totals


def _ratio(part: float, whole: float, digits: int = 4) -> float:
    return round(part / whole, digits) if whole else 0.0


def _change(current: float, previous: float) -> float | None:
    return None if not previous else round((current - previous) / previous, 4)


def analytics_overview(*, tenant: Tenant, livemode: bool, period: Period, granularity: str = "day",
                       compare_with: str | None = None) -> dict[str, Any]:
    """The v1 overview: ``period``, ``summary``, ``comparison`` and ``timeSeries``."""
    earlier = comparison_period(period, compare_with) if compare_with else None
    periods = [period] + ([earlier] if earlier else [])
    scope = {"tenant": tenant, "livemode": livemode}
    chats = _daily(ChannelDailyStat.objects.filter(**scope), _CHANNEL_SUMS, periods)
    leads = _daily(LeadDailyStat.objects.filter(**scope), _LEAD_SUMS, periods)
    deal_value = float(tenant.default_deal_value)

    def figures(span: Period) -> dict[str, Any]:
        c = _total(chats, span, _CHANNEL_SUMS)
        n = _total(leads, span, _LEAD_SUMS)
        return {
            "totalConversations": c["conversations"],
            "totalLeads": n["created"],
            "qualifiedLeads": n["qualified"],
            "conversionRate": _ratio(c["converted"], c["conversations"]),
            "avgLeadScore": _ratio(n["score_sum"], n["created"], 2),
            "avgResponseTime": _ratio(c["response_us"] / 1_000_000, c["responses"], 3),
            "avgMessagesPerConversation": _ratio(c["messages"], c["conversations"], 2),
            "handoffRate": _ratio(c["handed_off"], c["conversations"]),
            "totalRevenuePipeline": round(n["qualified"] * deal_value, 2),
        }

    summary = figures(period)
    comparison = None
    if earlier is not None:
        before = figures(earlier)
        comparison = {"period": earlier.as_dict()}
        for name in ("totalConversations", "totalLeads", "qualifiedLeads", "conversionRate"):
            comparison[name] = {"value": before[name], "change": _change(summary[name], before[name])}
    series = []
    for bucket in buckets(period, granularity):
        c = _total(chats, bucket, ("conversations", "converted"))
        n = _total(leads, bucket, ("created", "qualified"))
        series.append({"period": bucket.label(), "conversations": c["conversations"],
                       "leads": n["created"], "qualifiedLeads": n["qualified"],
                       "conversionRate": _ratio(c["converted"], c["conversations"])})
    return {"period": period.as_dict(), "summary": summary, "comparison": comparison,
            "timeSeries": series}


def analytics_funnel(*, tenant: Tenant, livemode: bool, period: Period, channel: str | None = None,
                     source: str | None = None) -> dict[str, Any]:
    """The v1 funnel of the people who entered it during the period, each stage a subset of
    the one before (docs/analytics.md)."""
    counts = _funnel_counts(tenant=tenant, livemode=livemode, period=period, channel=channel,
                            source=source)
    rows = _funnel_stages(counts)
    rated = [row for row in rows if row["conversionToNext"] is not None]
    # The stage that loses the largest share of its count before the next; the first on a tie.
    # With nobody in the funnel, nobody got past its top: the first stage.
    worst = min(rated, key=lambda row: row["conversionToNext"], default=rows[0])
    return {
        "period": period.as_dict(),
        "stages": rows,
        "overallConversion": _ratio(counts[-1], counts[0]),
        "topDropoffStage": worst["name"],
    }


MILESTONES = ("qualified", "booked", "converted")


def analytics_milestones(*, tenant: Tenant, livemode: bool, period: Period) -> dict[str, int]:
    """How many leads, whenever created, reached each stage for the first time during the
    period: first qualified (the overview's ``qualifiedLeads``), first meeting booked, first
    converted. The dashboard shows them beside the funnel, which follows the period's new
    leads instead, so that each of the funnel's later stages has its counterpart of the period
    (docs/analytics.md, "On the dashboard"). One query."""
    return LeadDailyStat.objects.filter(
        tenant=tenant, livemode=livemode, day__gte=period.start, day__lte=period.end,
    ).aggregate(**{name: Coalesce(Sum(name), 0) for name in MILESTONES})


_COHORT_SUMS = ("created", "cohort_qualified", "cohort_booked", "cohort_converted")


def _funnel_counts(*, tenant: Tenant, livemode: bool, period: Period, channel: str | None,
                   source: str | None) -> list[int]:
    """How many reached each of FUNNEL_STAGES, in their order.

    The leads created in the period count at every stage down to the furthest they have
    reached since; a visitor-day of the period that produced no lead counts as a visitor, and
    as engaged if the visitor chatted. A lead is thus always a visitor and an engaged one
    (captured through a conversation, or through the API, an import or a form)."""
    scope = {"tenant": tenant, "livemode": livemode, "day__gte": period.start,
             "day__lte": period.end}
    chats = ChannelDailyStat.objects.filter(**scope)
    leads = LeadDailyStat.objects.filter(**scope)
    if channel:
        chats = chats.filter(channel=channel)
        leads = leads.filter(channel=channel)
    if source:
        leads = leads.filter(source=source)
    if source and source != "chat":
        # A visitor who left no lead would have become a chat lead, not one of this source.
        uncaptured = {"visitors": 0, "engaged": 0}
    else:
        uncaptured = chats.aggregate(visitors=Coalesce(Sum("uncaptured_visitors"), 0),
                                     engaged=Coalesce(Sum("uncaptured_engaged"), 0))
    cohort = leads.aggregate(**{name: Coalesce(Sum(name), 0) for name in _COHORT_SUMS})
    created = cohort["created"]
    return [uncaptured["visitors"] + created, uncaptured["engaged"] + created, created,
            cohort["cohort_qualified"], cohort["cohort_booked"], cohort["cohort_converted"]]


def _funnel_stages(counts: list[int]) -> list[dict[str, Any]]:
    """Each stage with its count and the share of it that reached the next stage."""
    rows = []
    for index, (name, count) in enumerate(zip(FUNNEL_STAGES, counts, strict=True)):
        following = counts[index + 1] if index + 1 < len(counts) else None
        rate = None if following is None or not count else round(following / count, 4)
        rows.append({"name": name, "count": count, "conversionToNext": rate})
    return rows


def activity_feed(events: QuerySet, *, types: list[str] | None = None,
                  lead_id: uuid.UUID | None = None, start: datetime, end: datetime) -> QuerySet:
    """Activity events (the caller's scoped Event queryset), newest first, id breaking ties."""
    events = events.filter(type__in=sorted(types or ACTIVITY_TYPES),
                           occurred_at__gte=start, occurred_at__lte=end)
    if lead_id is not None:
        events = events.filter(lead_id=lead_id)
    return events.order_by("-occurred_at", "-id")


# --- legacy ---------------------------------------------------------------------------------

def legacy_overview(*, tenant: Tenant, livemode: bool) -> dict[str, Any]:
    """All-time figures of the legacy overview (docs/analytics.md, "Legacy")."""
    scope = {"tenant": tenant, "livemode": livemode}
    leads = LeadDailyStat.objects.filter(**scope).aggregate(
        created=Coalesce(Sum("created"), 0), reached=Coalesce(Sum("reached"), 0))
    chats = ChannelDailyStat.objects.filter(**scope).aggregate(
        conversations=Coalesce(Sum("conversations"), 0), messages=Coalesce(Sum("messages"), 0))
    return {
        "totalLeads": leads["created"],
        "totalConversations": chats["conversations"],
        "avgMessagesPerConversation": _ratio(chats["messages"], chats["conversations"], 2),
        "conversionRate": _ratio(100 * leads["reached"], leads["created"], 2),
    }


def legacy_funnel(*, tenant: Tenant, livemode: bool) -> dict[str, int]:
    """Leads per current status, in the legacy vocabulary (several stored statuses share a
    legacy word: converted counts as booked, contacted as qualifying, lost as disqualified)."""
    funnel = dict.fromkeys(LEGACY_STATUSES, 0)
    rows = (LeadDailyCount.objects.filter(tenant=tenant, livemode=livemode)
            .values("status").annotate(n=Sum("count")).order_by())
    for row in rows:
        funnel[LEGACY_OF_STORED[row["status"]]] += row["n"] or 0
    return funnel


LEGACY_ACTIVITY_DAYS = 30


def legacy_activity(*, tenant: Tenant, livemode: bool, today: date) -> list[dict[str, Any]]:
    """Leads created on each of the last 30 UTC days (today included), oldest first."""
    first = today - timedelta(days=LEGACY_ACTIVITY_DAYS - 1)
    counts = dict(LeadDailyCount.objects.filter(tenant=tenant, livemode=livemode, day__gte=first,
                                                day__lte=today)
                  .values("day").annotate(n=Sum("count")).order_by().values_list("day", "n"))
    return [{"date": day.isoformat(), "count": counts.get(day) or 0}
            for day in Period(first, today).days()]


# --- the staff dashboard --------------------------------------------------------------------

def lead_events(*, tenant: Tenant, livemode: bool, lead_id: uuid.UUID, types: Collection[str],
                limit: int) -> list[dict[str, Any]]:
    """The lead's events of ``types``, newest first (one query): each one's ``type``,
    ``occurred_at``, ``conversation_id`` and ``facts`` (stored vocabulary, docs/events.md)."""
    return list(Event.objects.filter(tenant=tenant, livemode=livemode, lead_id=lead_id,
                                     type__in=list(types))
                .order_by("-occurred_at", "-id")
                .values("type", "occurred_at", "conversation_id", "facts")[:limit])


def widget_seen(*, tenant: Tenant) -> bool:
    """Whether the tenant's widget has been loaded anywhere: a load that names its visitor
    (``/api/widget``) counts in its visitor's ``VisitorDay``."""
    return VisitorDay.objects.filter(tenant=tenant, loads__gt=0).exists()


def analytics_satisfaction(*, tenant: Tenant, livemode: bool, period: Period) -> dict[str, Any]:
    """The visitors' ratings of the period's conversations (by start, as ``handoffRate``):
    how many were rated, how many good, and ``satisfactionRate`` = good ÷ rated (0 without a
    rating). Shown on the dashboard beside the handoff rate (docs/analytics.md). One query, on
    the partial index of rated conversations."""
    start = datetime.combine(period.start, datetime.min.time(), tzinfo=UTC)
    end = datetime.combine(period.end + timedelta(days=1), datetime.min.time(), tzinfo=UTC)
    counts = Conversation.objects.filter(
        tenant=tenant, livemode=livemode, rated_at__isnull=False,
        started_at__gte=start, started_at__lt=end,
    ).aggregate(rated=Count("pk"), good=Count("pk", filter=Q(rating=Rating.GOOD)))
    return {"rated": counts["rated"], "good": counts["good"],
            "bad": counts["rated"] - counts["good"],
            "satisfactionRate": _ratio(counts["good"], counts["rated"])}
