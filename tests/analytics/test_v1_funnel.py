"""GET /api/v1/analytics/funnel: the six stages, conversions, filters, validation, scoping."""

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
    return {s["name"]: s["count"] for s in r.json()["stages"]}


def test_the_six_stages_in_order(api, kit, march):
    r = api.get(f"{URL}?{PERIOD}", headers=kit.auth("read"))
    data = r.json()
    assert [s["name"] for s in data["stages"]] == list(FUNNEL_STAGES)
    qualified = _stages(r)["Qualified"]
    assert _stages(r) == {"Visitors": 10, "Engaged (Started Chat)": 5, "Lead Captured": 5,
                          "Qualified": qualified, "Demo Booked": 1, "Converted": 1}
    assert qualified >= 1
    rates = [s["conversionToNext"] for s in data["stages"]]
    assert rates[:3] == [0.5, 1.0, round(qualified / 5, 4)]
    assert rates[-1] is None
    assert data["overallConversion"] == 0.1
    assert data["period"] == {"startDate": "2026-03-01", "endDate": "2026-03-31"}
    lowest = min((s for s in data["stages"][:-1]), key=lambda s: s["conversionToNext"])
    assert data["topDropoffStage"] == lowest["name"]


def test_channel_filter(api, kit, march):
    web = _stages(api.get(f"{URL}?{PERIOD}&channel=web_chat", headers=kit.auth("read")))
    assert web["Visitors"] == 10 and web["Engaged (Started Chat)"] == 4
    assert web["Lead Captured"] == 3 and web["Demo Booked"] == 1 and web["Converted"] == 0
    api_channel = _stages(api.get(f"{URL}?{PERIOD}&channel=api", headers=kit.auth("read")))
    assert api_channel == {"Visitors": 0, "Engaged (Started Chat)": 1, "Lead Captured": 0,
                           "Qualified": 0, "Demo Booked": 0, "Converted": 0}
    data = api.get(f"{URL}?{PERIOD}&channel=api", headers=kit.auth("read")).json()
    # Nothing to divide by: no conversion, no overall conversion.
    assert data["stages"][0]["conversionToNext"] is None and data["overallConversion"] is None
    assert data["topDropoffStage"] == "Engaged (Started Chat)"


def test_source_filter(api, kit, march):
    form = api.get(f"{URL}?{PERIOD}&source=form", headers=kit.auth("read"))
    assert _stages(form) == {"Visitors": 0, "Engaged (Started Chat)": 0, "Lead Captured": 2,
                             "Qualified": 1, "Demo Booked": 0, "Converted": 1}
    chat_source = _stages(api.get(f"{URL}?{PERIOD}&source=chat", headers=kit.auth("read")))
    assert chat_source["Visitors"] == 10 and chat_source["Lead Captured"] == 3
    both = _stages(api.get(f"{URL}?{PERIOD}&source=form&channel=web_chat", headers=kit.auth("read")))
    assert both["Lead Captured"] == 0


def test_the_period_bounds_the_stages(api, kit, march):
    r = api.get(f"{URL}?startDate=2026-03-03&endDate=2026-03-31", headers=kit.auth("read"))
    assert set(_stages(r).values()) == {0}
    assert r.json()["topDropoffStage"] is None and r.json()["overallConversion"] is None


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
