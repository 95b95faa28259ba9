"""Analytics: the funnel and the time series of ``analytics.selectors`` (the numbers the API
gives), drawn as inline SVG on the server so that the page needs no script and loads nothing from
elsewhere.

The page names each figure for what it counts, in its own words rather than the API's field and
stage names: the tiles count what happened in the period (to leads of any age), the funnel follows
the period's new leads to where they are now, and where a tile and a stage could be read as the
same figure the page says why they differ (docs/analytics.md, "On the dashboard")."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django import forms
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone

from analytics import selectors as analytics_selectors
from analytics.api.v1 import resolve_period
from conversations.models import Channel
from core.errors import Unprocessable

from ..auth import dashboard_view

WIDTH, HEIGHT = 720, 260
PAD_LEFT, PAD_RIGHT, PAD_TOP, PAD_BOTTOM = 44, 16, 16, 36
SERIES = (("conversations", "Conversations started", "#2563eb"),
          ("leads", "Leads created", "#f59e0b"),
          ("qualifiedLeads", "Leads first qualified", "#047857"))

# The funnel's stages (the API's names, which the specification fixes) in the page's words: what
# each counts. From "Leads created" down, the same leads: those created in the period.
STAGES = {
    "Visitors": ("Visitors", "Visitors who left no lead (one a day and channel), and the leads"),
    "Engaged (Started Chat)": ("Started a chat", "Or became a lead another way: API, import, form"),
    "Lead Captured": ("Leads created", "In the period: the tile of the same name"),
    "Qualified": ("Qualified, or further", "Of those leads, qualified since, or booked or "
                                           "converted without being marked qualified"),
    "Demo Booked": ("Booked a meeting, or converted", "Of those leads, with a meeting since, or "
                                                       "converted without one"),
    "Converted": ("Converted", "Of those leads, converted since"),
}


class RangeForm(forms.Form):
    start = forms.DateField(required=False, label="From",
                            widget=forms.DateInput(attrs={"type": "date"}))
    end = forms.DateField(required=False, label="To", widget=forms.DateInput(attrs={"type": "date"}))
    granularity = forms.ChoiceField(choices=[(g, g.title()) for g in analytics_selectors.GRANULARITIES],
                                    required=False, initial="day")
    channel = forms.ChoiceField(choices=[("", "All channels"), *Channel.choices], required=False)

    def clean(self) -> dict[str, Any]:
        """The period the API would take (``resolve_period``: its defaults and limits), kept as
        ``period``; its refusal told beside From or To, in the form's words, where the API's
        names its parameters (``startDate``, ``endDate``)."""
        data = super().clean()
        if "start" not in data or "end" not in data:
            return data  # a malformed date: its field says so
        try:
            data["period"] = resolve_period({"startDate": data["start"], "endDate": data["end"]})
        except Unprocessable as refused:
            for detail in refused.details:
                if detail.field == "startDate":
                    self.add_error("start", "From is after To: choose a From on or before To.")
                else:
                    self.add_error("end", f"At most {analytics_selectors.MAX_RANGE_DAYS} days "
                                          "from From to To.")
        return data


@dataclass(frozen=True)
class FunnelBar:
    name: str  # the API's stage name
    label: str  # what the stage counts, in the page's words
    note: str
    count: int
    width: float  # share of the widest bar, in percent
    rate: float | None  # conversion to the next stage


def funnel_bars(funnel: dict[str, Any]) -> list[FunnelBar]:
    top = max((stage["count"] for stage in funnel["stages"]), default=0) or 1
    return [FunnelBar(stage["name"], *STAGES[stage["name"]], stage["count"],
                      round(100 * stage["count"] / top, 2), stage["conversionToNext"])
            for stage in funnel["stages"]]


def _nice_step(value: int) -> int:
    """The gridlines' step: 1, 2 or 5 times a power of ten, so that four steps reach ``value``."""
    needed = max(1, -(-value // 4))
    step = 1
    while True:
        for factor in (1, 2, 5):
            if step * factor >= needed:
                return step * factor
        step *= 10


def time_series_chart(series: list[dict[str, Any]]) -> dict[str, Any]:
    """Polyline points, ticks and labels for the three counts of the overview's time series."""
    step = _nice_step(max((row[key] for row in series for key, _, _ in SERIES), default=0))
    top = 4 * step
    inner_w, inner_h = WIDTH - PAD_LEFT - PAD_RIGHT, HEIGHT - PAD_TOP - PAD_BOTTOM
    count = len(series)

    def x(index: int) -> float:
        return PAD_LEFT + (inner_w * index / (count - 1) if count > 1 else inner_w / 2)

    def y(value: int) -> float:
        return PAD_TOP + inner_h * (1 - value / top)

    lines = []
    for key, label, colour in SERIES:
        points = [(round(x(i), 1), round(y(row[key]), 1)) for i, row in enumerate(series)]
        lines.append({"key": key, "label": label, "colour": colour,
                      "points": " ".join(f"{px},{py}" for px, py in points),
                      "dots": [{"x": px, "y": py, "value": row[key], "period": row["period"]}
                               for (px, py), row in zip(points, series, strict=True)]})
    ticks = [{"y": round(y(step * i), 1), "value": step * i} for i in range(5)]
    every = max(1, count // 8)  # at most about eight date labels under the axis
    labels = [{"x": round(x(i), 1), "text": row["period"].split("/")[0][5:]}
              for i, row in enumerate(series) if i % every == 0]
    return {"width": WIDTH, "height": HEIGHT, "lines": lines, "ticks": ticks, "labels": labels,
            "left": PAD_LEFT, "right": WIDTH - PAD_RIGHT, "bottom": HEIGHT - PAD_BOTTOM,
            "label_y": HEIGHT - PAD_BOTTOM + 18}


@dashboard_view()
def analytics_page(request: HttpRequest) -> HttpResponse:
    form = RangeForm(request.GET or None)
    form.is_valid()
    # What was valid of it: a refused range is told beside its field, and the page shows the
    # default period meanwhile; an unknown granularity or channel falls back on its own.
    data = getattr(form, "cleaned_data", {})
    period = data.get("period") or resolve_period({})
    granularity = data.get("granularity") or "day"
    channel = data.get("channel") or None
    overview = request.actor.read(analytics_selectors.analytics_overview, period=period,
                                  granularity=granularity)
    funnel = request.actor.read(analytics_selectors.analytics_funnel, period=period, channel=channel)
    milestones = request.actor.read(analytics_selectors.analytics_milestones, period=period)
    satisfaction = request.actor.read(analytics_selectors.analytics_satisfaction, period=period)
    if not form.is_bound:
        form = RangeForm(initial={"start": period.start, "end": period.end,
                                  "granularity": granularity})
    return render(request, "dashboard/analytics.html", {
        "section": "analytics", "form": form, "period": period, "overview": overview,
        "summary": overview["summary"], "funnel": funnel, "bars": funnel_bars(funnel),
        "milestones": milestones, "satisfaction": satisfaction,
        "funnel_leads": next(s["count"] for s in funnel["stages"] if s["name"] == "Lead Captured"),
        "channel_label": dict(Channel.choices).get(channel) if channel else None,
        "chart": time_series_chart(overview["timeSeries"]), "today": timezone.now().date(),
    })
