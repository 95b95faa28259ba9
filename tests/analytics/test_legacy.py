"""Legacy GET /api/analytics/overview, /funnel and /activity."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from leads.services import lead_update
from tests.chat_helpers import chat
from tests.factories import make_lead


@pytest.fixture
def leads(api, kit):
    """Eight leads, one per stored status except one; two conversations, four messages."""
    made = {}
    for status in ("new", "qualifying", "qualified", "booked", "contacted", "nurturing",
                   "converted", "lost"):
        made[status] = make_lead(kit, status=status)
    # Qualified once, then lost: it still "reached qualified".
    lead_update(lead=made["lost"], changes={"status": "qualified"})
    lead_update(lead=made["lost"], changes={"status": "lost"})
    chat(api, kit, "Hi", visitor="a")
    chat(api, kit, "How much is it?", visitor="b")
    return made


def test_overview(api, kit, leads):
    r = api.get("/api/analytics/overview", headers=kit.auth("read"))
    assert r.status_code == 200, r.content
    # Reached qualified or booked: qualified, booked, converted, and lost-after-qualified.
    assert r.json() == {"overview": {"totalLeads": 8, "totalConversations": 2,
                                     "avgMessagesPerConversation": 2.0, "conversionRate": 50.0}}


def test_funnel_in_the_legacy_vocabulary(api, kit, leads):
    r = api.get("/api/analytics/funnel", headers=kit.auth("read"))
    assert r.status_code == 200
    # contacted shows as qualifying, converted as booked, lost as disqualified.
    assert r.json() == {"funnel": {"new": 1, "qualifying": 2, "qualified": 1, "booked": 2,
                                   "disqualified": 1, "nurturing": 1}}


def test_activity_has_the_last_30_days_with_zero_days(api, kit):
    now = timezone.now()
    for days_ago in (0, 0, 3, 29, 30):
        make_lead(kit, created_at=now - timedelta(days=days_ago))
    r = api.get("/api/analytics/activity", headers=kit.auth("read"))
    assert r.status_code == 200
    activity = r.json()["activity"]
    today = now.date()
    assert [a["date"] for a in activity] == [(today - timedelta(days=29 - i)).isoformat()
                                             for i in range(30)]
    assert {a["date"]: a["count"] for a in activity if a["count"]} == {
        today.isoformat(): 2, (today - timedelta(days=3)).isoformat(): 1,
        (today - timedelta(days=29)).isoformat(): 1}


def test_empty_tenant(api, kit):
    overview = api.get("/api/analytics/overview", headers=kit.auth("read")).json()["overview"]
    assert overview == {"totalLeads": 0, "totalConversations": 0, "avgMessagesPerConversation": 0.0,
                        "conversionRate": 0.0}
    funnel = api.get("/api/analytics/funnel", headers=kit.auth("read")).json()["funnel"]
    assert set(funnel.values()) == {0}


def test_the_admin_cookie_sees_live_data(api, kit, leads):
    assert api.post("/api/admin/auth", json={"token": kit.admin_token}).status_code in (200, 204)
    r = api.get("/api/analytics/overview")
    assert r.status_code == 200 and r.json()["overview"]["totalLeads"] == 8


def test_stranger_and_test_mode_see_nothing(api, kit, stranger, leads):
    for auth in (stranger.auth("read"), kit.auth("read", "test")):
        assert api.get("/api/analytics/overview", headers=auth).json()["overview"]["totalLeads"] == 0
        assert set(api.get("/api/analytics/funnel", headers=auth).json()["funnel"].values()) == {0}
        activity = api.get("/api/analytics/activity", headers=auth).json()["activity"]
        assert len(activity) == 30 and {a["count"] for a in activity} == {0}
    r = api.get("/api/analytics/overview")
    assert r.status_code == 401 and set(r.json()) == {"error"}


def test_query_counts(api, kit, leads, django_assert_max_num_queries):
    api.get("/api/analytics/funnel", headers=kit.auth("read"))
    for path, queries in (("overview", 3), ("funnel", 2), ("activity", 2)):
        with django_assert_max_num_queries(queries):
            assert api.get(f"/api/analytics/{path}", headers=kit.auth("read")).status_code == 200
