"""GET /api/v1/analytics/funnel: the six stages, each within the one before, conversions,
filters, validation, scoping."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from analytics.selectors import FUNNEL_STAGES
from analytics.services import record_widget_visit
from leads.services import lead_update
from tests.analytics_helpers import clock
from tests.chat_helpers import chat
from tests.factories import make_lead

URL = "/api/v1/analytics/funnel"
MARCH2 = datetime(2026, 3, 2, 10, 0, tzinfo=UTC)
PERIOD = "startDate=2026-03-01&endDate=2026-03-31"


def widget_chat(api, kit, message, visitor, session=None):
    body = {"message": message, "visitorId": visitor, **({"sessionId": session} if session else {})}
    return api.post(f"/api/chat?tenant={kit.tenant.public_id}", json=body)


@pytest.fixture
def march(api, kit):
    """Ten widget visitors; four of them chat on the widget, one on the API; three leads are
    captured by chat (one books a demo), two come from a form (one qualified, then converted)."""
    with clock(MARCH2):
        for i in range(10):
            record_widget_visit(tenant=kit.tenant, visitor_id=f"w{i}")
        widget_chat(api, kit, "Hi", "w0")
        widget_chat(api, kit, "my email is ann@hooli.com", "w1")
        widget_chat(api, kit, "my email is bob@globex.com", "w2")
        r = widget_chat(api, kit, "Hi, I'm Sam, sam@umbrella.io", "w3").json()
        offered = widget_chat(api, kit, "Can we book a demo?", "w3", session=r["sessionId"]).json()
        slot = next(a for a in offered["suggestedActions"] if a["type"] == "reply")
        widget_chat(api, kit, f"Book {slot['metadata']['slot']}", "w3", session=r["sessionId"])
        chat(api, kit, "Hello from the API", visitor="api-1")
        won = make_lead(kit, source="form", created_at=MARCH2)
        lead_update(lead=won, changes={"status": "qualified"})
        lead_update(lead=won, changes={"status": "converted"})
        make_lead(kit, source="form", created_at=MARCH2)


def _stages(r):
    assert r.status_code == 200, r.content
    return _counts(r.json())


def _counts(data):
    return {s["name"]: s["count"] for s in data["stages"]}


def test_the_six_stages_in_order(api, kit, march):
    r = api.get(f"{URL}?{PERIOD}", headers=kit.auth("read"))
    data = r.json()
    assert [s["name"] for s in data["stages"]] == list(FUNNEL_STAGES)
    qualified = _stages(r)["Qualified"]
    # Visitors: the five leads, and the eight visitor-days that left none (w0 and api-1
    # chatted, w4-w9 only loaded the widget). Engaged: the leads, w0 and api-1.
    assert _stages(r) == {"Visitors": 13, "Engaged (Started Chat)": 7, "Lead Captured": 5,
                          "Qualified": qualified, "Demo Booked": 2, "Converted": 1}
    # Sam booked a demo and the form lead converted: both count as qualified.
    assert 2 <= qualified <= 5
    rates = [s["conversionToNext"] for s in data["stages"]]
    assert rates == [0.5385, 0.7143, round(qualified / 5, 4), round(2 / qualified, 4), 0.5, None]
    assert data["overallConversion"] == 0.0769
    assert data["period"] == {"startDate": "2026-03-01", "endDate": "2026-03-31"}
    lowest = min((s for s in data["stages"][:-1]), key=lambda s: s["conversionToNext"])
    assert data["topDropoffStage"] == lowest["name"]


def test_channel_filter(api, kit, march):
    web = _stages(api.get(f"{URL}?{PERIOD}&channel=web_chat", headers=kit.auth("read")))
    assert web["Visitors"] == 10 and web["Engaged (Started Chat)"] == 4
    assert web["Lead Captured"] == 3 and web["Demo Booked"] == 1 and web["Converted"] == 0
    data = api.get(f"{URL}?{PERIOD}&channel=api", headers=kit.auth("read")).json()
    # The API visitor chatted and left no lead; form leads have no channel.
    assert _counts(data) == {"Visitors": 1, "Engaged (Started Chat)": 1, "Lead Captured": 0,
                             "Qualified": 0, "Demo Booked": 0, "Converted": 0}
    assert [s["conversionToNext"] for s in data["stages"]] == [1.0, 0.0, None, None, None, None]
    assert data["overallConversion"] == 0.0
    assert data["topDropoffStage"] == "Engaged (Started Chat)"


def test_source_filter(api, kit, march):
    form = api.get(f"{URL}?{PERIOD}&source=form", headers=kit.auth("read"))
    # Leads of a form enter the funnel at every stage down to the furthest they reached.
    assert _stages(form) == {"Visitors": 2, "Engaged (Started Chat)": 2, "Lead Captured": 2,
                             "Qualified": 1, "Demo Booked": 1, "Converted": 1}
    chat_source = _stages(api.get(f"{URL}?{PERIOD}&source=chat", headers=kit.auth("read")))
    # Visitors who left no lead are would-be chat leads: they count with source=chat only.
    assert chat_source["Visitors"] == 11 and chat_source["Engaged (Started Chat)"] == 5
    assert chat_source["Lead Captured"] == 3
    both = _stages(api.get(f"{URL}?{PERIOD}&source=form&channel=web_chat", headers=kit.auth("read")))
    assert set(both.values()) == {0}


def test_an_api_only_tenant_has_visitors_and_no_conversion_above_one(api, kit):
    """Issue 17: chats and leads through the API only used to give Visitors 0 under Engaged 1,
    and Lead Captured many times Engaged."""
    with clock(MARCH2):
        for visitor in ("api-1", "api-2", "api-3"):
            chat(api, kit, "Hello from the API", visitor=visitor)
        for i in range(4):
            r = api.post("/api/v1/leads", json={"email": f"p{i}@globex.com", "source": "api"},
                         headers=kit.auth("write"))
            assert r.status_code == 201
    data = api.get(f"{URL}?{PERIOD}", headers=kit.auth("read")).json()
    assert _counts(data) == {"Visitors": 7, "Engaged (Started Chat)": 7, "Lead Captured": 4,
                             "Qualified": 0, "Demo Booked": 0, "Converted": 0}
    assert [s["conversionToNext"] for s in data["stages"]] == [1.0, 0.5714, 0.0, None, None, None]
    assert data["overallConversion"] == 0.0 and data["topDropoffStage"] == "Lead Captured"
    api_leads = _counts(api.get(f"{URL}?{PERIOD}&source=api", headers=kit.auth("read")).json())
    assert list(api_leads.values()) == [4, 4, 4, 0, 0, 0]


def test_later_stages_count_the_periods_leads_wherever_they_went(api, kit):
    """A lead created in February and converted in March counts in February's funnel, down to
    Converted, and not in March's."""
    with clock(datetime(2026, 2, 20, 10, 0, tzinfo=UTC)):
        lead = make_lead(kit, source="import")
    with clock(MARCH2):
        lead_update(lead=lead, changes={"status": "converted"})
    february = api.get(f"{URL}?startDate=2026-02-01&endDate=2026-02-28", headers=kit.auth("read"))
    assert list(_stages(february).values()) == [1, 1, 1, 1, 1, 1]
    assert february.json()["overallConversion"] == 1.0
    # Nothing went from one stage to the next at less than 1: the first stage, on the tie.
    assert february.json()["topDropoffStage"] == "Visitors"
    assert set(_stages(api.get(f"{URL}?{PERIOD}", headers=kit.auth("read"))).values()) == {0}


def test_the_period_bounds_the_stages(api, kit, march):
    r = api.get(f"{URL}?startDate=2026-03-03&endDate=2026-03-31", headers=kit.auth("read"))
    assert set(_stages(r).values()) == {0}
    # The specification's types: a number and a stage name, even with nobody in the funnel.
    assert r.json()["overallConversion"] == 0.0 and r.json()["topDropoffStage"] == "Visitors"
    assert all(s["conversionToNext"] is None for s in r.json()["stages"])


@pytest.mark.parametrize("query, status, field, code", [
    ("channel=fax", 400, "channel", "invalid_enum"),
    ("source=web", 400, "source", "invalid_enum"),
    ("startDate=03/01/2026", 400, "startDate", "invalid_format"),
    ("startDate=2026-04-01&endDate=2026-03-01", 422, "startDate", "out_of_range"),
    ("startDate=2024-01-01&endDate=2026-01-01", 422, "endDate", "out_of_range"),
])
def test_validation(api, kit, query, status, field, code):
    r = api.get(f"{URL}?{query}", headers=kit.auth("read"))
    assert r.status_code == status
    assert {"field": field, "code": code}.items() <= r.json()["error"]["details"][0].items()


def test_stranger_and_test_mode_see_nothing(api, kit, stranger, march):
    for auth in (stranger.auth("read"), kit.auth("read", "test")):
        assert set(_stages(api.get(f"{URL}?{PERIOD}", headers=auth)).values()) == {0}
    assert api.get(URL).status_code == 401


def test_query_count_is_fixed(api, kit, march, django_assert_max_num_queries):
    api.get(URL, headers=kit.auth("read"))
    for query in (PERIOD, f"{PERIOD}&channel=web_chat&source=chat"):
        with django_assert_max_num_queries(3):  # key, channel stats, lead stats
            assert api.get(f"{URL}?{query}", headers=kit.auth("read")).status_code == 200
