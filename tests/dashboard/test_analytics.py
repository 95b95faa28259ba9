"""The dashboard's analytics page over HTTP: the funnel and the time series drawn as inline SVG
from the same selectors as the API (the numbers must agree), the period form, the Live/Test
switch, the tenant wall, and no script or third-party request."""

from __future__ import annotations

import html
import re
from datetime import timedelta

from django.utils import timezone

from analytics.services import record_widget_visit
from leads.services import lead_update
from tests.chat_helpers import chat
from tests.dashboard.client import signed_in
from tests.factories import make_lead


def activity(api, kit):
    for i in range(6):
        record_widget_visit(tenant=kit.tenant, visitor_id=f"w{i}")
    chat(api, kit, "Hi, I'm Ann, ann@hooli.com", visitor="w0")
    won = make_lead(kit, source="form")
    lead_update(lead=won, changes={"status": "qualified"})
    lead_update(lead=won, changes={"status": "converted"})
    make_lead(kit, source="form")


def stage_counts(page: str) -> dict[str, int]:
    found = re.findall(r'data-stage="([^"]+)">.*?class="count">(\d+)<', page, re.S)
    return {html.unescape(name): int(count) for name, count in found}


def test_the_page_shows_the_apis_numbers_as_charts(api, kit, manager, django_assert_max_num_queries):
    activity(api, kit)
    client = signed_in(manager)
    client.get("/dashboard/")
    # 9: with the check that a person with two-factor sign-in passed it (dashboard.auth).
    with django_assert_max_num_queries(9):
        r = client.get("/dashboard/analytics/")
    assert r.status_code == 200
    page = r.content.decode()
    funnel = api.get("/api/v1/analytics/funnel", headers=kit.auth("read")).json()
    assert stage_counts(page) == {s["name"]: s["count"] for s in funnel["stages"]}
    # Six widget visitors and the three leads (one captured in a chat, two from a form).
    assert stage_counts(page)["Visitors"] == 9 and stage_counts(page)["Converted"] == 1
    overview = api.get("/api/v1/analytics/overview", headers=kit.auth("read")).json()
    assert f'id="stat-leads">{overview["summary"]["totalLeads"]}<' in page
    assert f'id="stat-conversations">{overview["summary"]["totalConversations"]}<' in page
    # The chart: one polyline per series, a point per day of the default 31-day period.
    assert page.count("<polyline") == 3
    assert page.count("<circle") == 3 * len(overview["timeSeries"]) == 3 * 31
    today = timezone.now().date().isoformat()
    assert f"Leads {today}/{today}: 3</title>" in page
    # Nothing loaded from elsewhere, and no script but the dashboard's shared one (its Copy
    # buttons and confirmations): the charts need none.
    assert page.count("<script") == 1 and '<script src="/static/dashboard/dashboard.js" defer>' in page
    assert "http://" not in page.replace("http://www.w3.org", "")


def test_the_two_conversion_figures_are_told_apart(api, kit, manager):
    """Issue 17: "Conversion rate 67%" stood beside "Overall conversion: 0%" unexplained."""
    activity(api, kit)
    chat(api, kit, "Just looking", visitor="w1")
    chat(api, kit, "Hello again", visitor="w2")
    page = signed_in(manager).get("/dashboard/analytics/").content.decode()
    overview = api.get("/api/v1/analytics/overview", headers=kit.auth("read")).json()["summary"]
    funnel = api.get("/api/v1/analytics/funnel", headers=kit.auth("read")).json()
    rate = re.search(r'id="stat-conversation-rate"><b>(\d+)%</b><span>([^<]+)</span><small>([^<]+)<',
                     page)
    assert rate.groups() == (str(round(100 * overview["conversionRate"])), "Conversation → lead rate",
                             "Conversations started in the period that produced a lead")
    assert overview["conversionRate"] == 0.3333  # one chat of three left a lead
    overall = page[page.index('id="funnel-overall"'):]
    overall_rate = round(100 * funnel["overallConversion"])
    assert f"<b>{overall_rate}%</b> <span>Visitor → converted (whole funnel)" in overall
    assert "Converted ÷ Visitors" in overall
    assert f"Largest drop-off after <strong>{html.escape(funnel['topDropoffStage'])}</strong>" in overall
    # No stage passes more than all of itself on.
    assert all(int(n) <= 100 for n in re.findall(r"→ (\d+)% next", page))


def test_period_granularity_and_channel(api, kit, manager):
    activity(api, kit)
    client = signed_in(manager)
    end = timezone.now().date()
    start = end - timedelta(days=62)
    page = client.get(f"/dashboard/analytics/?start={start}&end={end}&granularity=month"
                      "&channel=web_chat").content.decode()
    overview = api.get(f"/api/v1/analytics/overview?startDate={start}&endDate={end}"
                       "&granularity=month", headers=kit.auth("read")).json()
    assert page.count("<circle") == 3 * len(overview["timeSeries"])
    funnel = api.get(f"/api/v1/analytics/funnel?startDate={start}&endDate={end}&channel=web_chat",
                     headers=kit.auth("read")).json()
    assert stage_counts(page) == {s["name"]: s["count"] for s in funnel["stages"]}
    # A range backwards: a message, and the default period instead.
    r = client.get(f"/dashboard/analytics/?start={end}&end={start}")
    assert r.status_code == 200 and b"startDate is after endDate" in r.content
    assert client.get("/dashboard/analytics/?start=yesterday&granularity=hour").status_code == 200


def test_test_mode_and_strangers_see_their_own_numbers(api, kit, stranger, manager, rep):
    activity(api, stranger)
    make_lead(kit, mode="test")
    client = signed_in(rep)  # reps see analytics too
    page = client.get("/dashboard/analytics/").content.decode()
    assert stage_counts(page)["Lead Captured"] == 0 and stage_counts(page)["Visitors"] == 0
    client.post("/dashboard/mode/", {"mode": "test"})
    page = client.get("/dashboard/analytics/").content.decode()
    assert stage_counts(page)["Lead Captured"] == 1 and "test data" in page


def test_the_page_needs_a_sign_in(db):
    from tests.dashboard.client import Client

    r = Client().get("/dashboard/analytics/")
    assert r.status_code == 302 and r["Location"].startswith("/dashboard/login/")
