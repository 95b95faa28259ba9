"""Analytics: the funnel and the time series of ``analytics.selectors`` (the numbers the API
gives), drawn as inline SVG on the server so that the page needs no script and loads nothing from
elsewhere."""

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

from ..auth import dashboard_view
from .common import attempt

WIDTH, HEIGHT = 720, 260
PAD_LEFT, PAD_RIGHT, PAD_TOP, PAD_BOTTOM = 44, 16, 16, 36
SERIES = (("conversations", "Conversations", "#2563eb"), ("leads", "Leads", "#f59e0b"),
          ("qualifiedLeads", "Qualified leads", "#047857"))


class RangeForm(forms.Form):
    start = forms.DateField(required=False, label="From",
                            widget=forms.DateInput(attrs={"type": "date"}))
    end = forms.DateField(required=False, label="To", widget=forms.DateInput(attrs={"type": "date"}))
    granularity = forms.ChoiceField(choices=[(g, g.title()) for g in analytics_selectors.GRANULARITIES],
                                    required=False, initial="day")
    channel = forms.ChoiceField(choices=[("", "All channels"), *Channel.choices], required=False)


@dataclass(frozen=True)
class FunnelBar:
    name: str
    count: int
    width: float  # share of the widest bar, in percent
    rate: float | None  # conversion to the next stage


def funnel_bars(funnel: dict[str, Any]) -> list[FunnelBar]:
    top = max((stage["count"] for stage in funnel["stages"]), default=0) or 1
    return [FunnelBar(stage["name"], stage["count"], round(100 * stage["count"] / top, 2),
                      stage["conversionToNext"]) for stage in funnel["stages"]]


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
    data = form.cleaned_data if form.is_valid() else {}
    query = {"startDate": data.get("start"), "endDate": data.get("end")}
    period = attempt(request, lambda: resolve_period(query))
    if period is None:  # a range backwards or too long: the message says so; show the default
        period = resolve_period({})
    granularity = data.get("granularity") or "day"
    channel = data.get("channel") or None
    overview = request.actor.read(analytics_selectors.analytics_overview, period=period,
                                  granularity=granularity)
    funnel = request.actor.read(analytics_selectors.analytics_funnel, period=period, channel=channel)
    if not form.is_bound or not form.is_valid():
        form = RangeForm(initial={"start": period.start, "end": period.end,
                                  "granularity": granularity})
    return render(request, "dashboard/analytics.html", {
        "section": "analytics", "form": form, "period": period, "overview": overview,
        "summary": overview["summary"], "funnel": funnel, "bars": funnel_bars(funnel),
        "chart": time_series_chart(overview["timeSeries"]), "today": timezone.now().date(),
    })
