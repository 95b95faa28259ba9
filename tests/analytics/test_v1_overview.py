"""GET /api/v1/analytics/overview: summary, comparison, time series, defaults, validation,
scoping."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import pytest
from django.utils import timezone

from core.models import Event
from leads.services import lead_update
from tests.analytics_helpers import clock, raw_channel_stats
from tests.chat_helpers import chat
from tests.factories import make_lead

URL = "/api/v1/analytics/overview"
MARCH2 = datetime(2026, 3, 2, 10, 0, tzinfo=UTC)
MARCH10 = datetime(2026, 3, 10, 10, 0, tzinfo=UTC)
FEB20 = datetime(2026, 2, 20, 10, 0, tzinfo=UTC)


@pytest.fixture
def march(api, kit):
    """March 2026: four conversations (one produces a lead, one is handed off), three new
    leads (one qualified); one lead in February; one a year earlier."""
    with clock(datetime(2025, 3, 5, tzinfo=UTC)):
        make_lead(kit, created_at=datetime(2025, 3, 5, tzinfo=UTC))
        make_lead(kit, created_at=datetime(2025, 3, 6, tzinfo=UTC))
    with clock(FEB20):
        make_lead(kit, created_at=FEB20)
    with clock(MARCH2):
        first = make_lead(kit, source="api", created_at=MARCH2)
        lead_update(lead=first, changes={"status": "qualified", "score": 70})
        make_lead(kit, source="form", created_at=MARCH2)
        chat(api, kit, "Hi", visitor="a")
        chat(api, kit, "I want to talk to a human", visitor="b")
        chat(api, kit, "my email is carol@example.com", visitor="c")
    with clock(MARCH10):
        chat(api, kit, "Hi", visitor="d")


def _get(api, kit, query="", scope="read", mode="live"):
    return api.get(f"{URL}?{query}", headers=kit.auth(scope, mode))


def test_summary_of_a_month(api, kit, march):
    r = _get(api, kit, "startDate=2026-03-01&endDate=2026-03-31")
    assert r.status_code == 200, r.content
    data = r.json()
    assert data["period"] == {"startDate": "2026-03-01", "endDate": "2026-03-31"}
    assert data["comparison"] is None
    raw = raw_channel_stats(kit.tenant, True)
    responses = sum(c["responses"] for c in raw.values())
    response_us = sum(c["response_us"] for c in raw.values())
    qualified = Event.objects.filter(type="lead.qualified", occurred_at__month=3).count()
    assert data["summary"] == {
        "totalConversations": 4,
        "totalLeads": 3,
        "qualifiedLeads": qualified,
        "conversionRate": 0.25,
        "avgLeadScore": round(sum(lead.score for lead in _march_leads(kit)) / 3, 2),
        "avgResponseTime": round(response_us / 1_000_000 / responses, 3),
        "avgMessagesPerConversation": 2.0,
        "handoffRate": 0.25,
        "totalRevenuePipeline": qualified * 10000.0,
    }
    assert qualified >= 1 and data["summary"]["avgResponseTime"] > 0


def _march_leads(kit):
    return kit.tenant.leads.filter(created_at__gte=datetime(2026, 3, 1, tzinfo=UTC))


def test_weekly_series_covers_the_period_with_empty_weeks(api, kit, march):
    data = _get(api, kit, "startDate=2026-03-01&endDate=2026-03-31&granularity=week").json()
    series = data["timeSeries"]
    assert [item["period"] for item in series] == [
        "2026-03-01/2026-03-01", "2026-03-02/2026-03-08", "2026-03-09/2026-03-15",
        "2026-03-16/2026-03-22", "2026-03-23/2026-03-29", "2026-03-30/2026-03-31"]
    assert [item["conversations"] for item in series] == [0, 3, 1, 0, 0, 0]
    assert [item["leads"] for item in series] == [0, 3, 0, 0, 0, 0]
    assert series[1]["conversionRate"] == round(1 / 3, 4) and series[2]["conversionRate"] == 0
    assert series[1]["qualifiedLeads"] == data["summary"]["qualifiedLeads"]


def test_daily_and_monthly_series(api, kit, march):
    days = _get(api, kit, "startDate=2026-02-15&endDate=2026-03-15").json()["timeSeries"]
    assert len(days) == 29 and days[0]["period"] == "2026-02-15/2026-02-15"
    assert {d["period"][:10]: d["leads"] for d in days if d["leads"]} == {
        "2026-02-20": 1, "2026-03-02": 3}
    months = _get(api, kit, "startDate=2026-01-10&endDate=2026-03-15&granularity=month").json()
    assert [(m["period"], m["leads"]) for m in months["timeSeries"]] == [
        ("2026-01-10/2026-01-31", 0), ("2026-02-01/2026-02-28", 1), ("2026-03-01/2026-03-15", 3)]


def test_comparison_with_the_previous_period(api, kit, march):
    data = _get(api, kit, "startDate=2026-03-01&endDate=2026-03-31&compareWith=previous_period").json()
    comparison = data["comparison"]
    assert comparison["period"] == {"startDate": "2026-01-29", "endDate": "2026-02-28"}
    assert comparison["totalLeads"] == {"value": 1, "change": 2.0}
    # Nothing to compare with: the change is null, not infinite.
    assert comparison["totalConversations"] == {"value": 0, "change": None}
    assert comparison["conversionRate"] == {"value": 0.0, "change": None}
    assert set(comparison) == {"period", "totalConversations", "totalLeads", "qualifiedLeads",
                               "conversionRate"}


def test_comparison_with_the_previous_year(api, kit, march):
    data = _get(api, kit, "startDate=2026-03-01&endDate=2026-03-31&compareWith=previous_year").json()
    assert data["comparison"]["period"] == {"startDate": "2025-03-01", "endDate": "2025-03-31"}
    assert data["comparison"]["totalLeads"] == {"value": 2, "change": 0.5}
    leap = _get(api, kit, "startDate=2028-02-29&endDate=2028-03-01&compareWith=previous_year").json()
    assert leap["comparison"]["period"] == {"startDate": "2027-02-28", "endDate": "2027-03-01"}


def test_defaults_are_the_last_30_days_by_day(api, kit):
    data = _get(api, kit).json()
    today = timezone.now().date()
    assert data["period"] == {"startDate": (today - timedelta(days=30)).isoformat(),
                              "endDate": today.isoformat()}
    assert len(data["timeSeries"]) == 31 and data["comparison"] is None
    assert data["summary"]["totalConversations"] == 0 and data["summary"]["avgResponseTime"] == 0
    only_end = _get(api, kit, "endDate=2026-01-31").json()["period"]
    assert only_end == {"startDate": "2026-01-01", "endDate": "2026-01-31"}


@pytest.mark.parametrize("query, field, code", [
    ("startDate=2026-13-01", "startDate", "invalid_format"),
    ("endDate=yesterday", "endDate", "invalid_format"),
    ("startDate=2026-03-01T10:00:00Z", "startDate", "invalid_format"),
    ("granularity=hour", "granularity", "invalid_enum"),
    ("compareWith=last_week", "compareWith", "invalid_enum"),
])
def test_malformed_parameters_are_400(api, kit, query, field, code):
    r = _get(api, kit, query)
    assert r.status_code == 400
    assert r.json()["error"]["code"] == "invalid_request"
    assert {"field": field, "code": code}.items() <= r.json()["error"]["details"][0].items()


@pytest.mark.parametrize("query, field", [
    ("startDate=2026-03-02&endDate=2026-03-01", "startDate"),
    ("startDate=2025-01-01&endDate=2026-01-02", "endDate"),
    ("startDate=2099-01-01", "startDate"),
])
def test_semantic_range_errors_are_422(api, kit, query, field):
    r = _get(api, kit, query)
    assert r.status_code == 422
    error = r.json()["error"]
    assert error["code"] == "unprocessable"
    assert error["details"][0]["field"] == field and error["details"][0]["code"] == "out_of_range"


def test_a_range_of_365_days_is_allowed(api, kit):
    r = _get(api, kit, "startDate=2025-01-01&endDate=2026-01-01&granularity=month")
    assert r.status_code == 200 and len(r.json()["timeSeries"]) == 13


def test_stranger_and_test_mode_see_nothing(api, kit, stranger, march):
    query = "startDate=2026-03-01&endDate=2026-03-31"
    for r in (_get(api, stranger, query), _get(api, kit, query, mode="test")):
        assert r.status_code == 200
        assert r.json()["summary"]["totalLeads"] == 0
        assert r.json()["summary"]["totalConversations"] == 0
    # And the other way round: test data stays out of live figures.
    with clock(MARCH2):
        make_lead(kit, mode="test", created_at=MARCH2)
    assert _get(api, kit, query, mode="test").json()["summary"]["totalLeads"] == 1
    assert _get(api, kit, query).json()["summary"]["totalLeads"] == 3


def test_authentication_and_scope(api, kit):
    assert api.get(URL).status_code == 401
    for scope in ("read", "write", "admin"):
        assert _get(api, kit, scope=scope).status_code == 200


def test_query_count_is_fixed(api, kit, march, django_assert_max_num_queries):
    _get(api, kit)  # the key's last use is recorded once a minute: not in the count below
    for query in ("granularity=day", "startDate=2025-06-01&endDate=2026-05-31&granularity=month"
                  "&compareWith=previous_year"):
        with django_assert_max_num_queries(3):  # key, channel stats, lead stats
            assert _get(api, kit, query).status_code == 200


def test_the_deal_value_is_the_tenants(api, kit, march):
    kit.tenant.default_deal_value = 2500
    kit.tenant.save()
    data = _get(api, kit, "startDate=2026-03-01&endDate=2026-03-31").json()["summary"]
    assert data["totalRevenuePipeline"] == data["qualifiedLeads"] * 2500.0


def test_days_are_utc_days(api, kit):
    late = datetime(2026, 3, 2, 23, 59, 30, tzinfo=UTC)
    with clock(late):
        make_lead(kit, created_at=late)
    series = _get(api, kit, "startDate=2026-03-02&endDate=2026-03-03").json()["timeSeries"]
    assert [s["leads"] for s in series] == [1, 0]
    assert date(2026, 3, 2).isoformat() in series[0]["period"]
