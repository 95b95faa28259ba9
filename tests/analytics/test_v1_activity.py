"""GET /api/v1/analytics/activity: the event log's activity types, filtered and paged."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from analytics.models import ACTIVITY_TYPES
from core.models import Event
from leads.services import lead_update
from tests.chat_helpers import chat
from tests.events import v1_data
from tests.factories import make_lead

URL = "/api/v1/analytics/activity"


@pytest.fixture
def feed(api, kit):
    """A lead created, qualified and re-scored; a conversation started and handed off."""
    lead = make_lead(kit, name="Ada")
    lead_update(lead=lead, changes={"status": "qualified", "score": 40})
    chat(api, kit, "I want to talk to a human", visitor="v")
    return lead


def _get(api, kit, query="", mode="live"):
    return api.get(f"{URL}?{query}", headers=kit.auth("read", mode))


def test_items_are_the_activity_events_newest_first(api, kit, feed):
    r = _get(api, kit)
    assert r.status_code == 200, r.content
    data = r.json()["data"]
    expected = list(Event.objects.filter(tenant=kit.tenant, type__in=ACTIVITY_TYPES)
                    .order_by("-occurred_at", "-id"))
    assert [item["id"] for item in data] == ["evt_" + e.pk.hex for e in expected]
    assert {item["type"] for item in data} == {"lead.created", "lead.qualified",
                                              "lead.score_changed", "conversation.started",
                                              "conversation.handoff"}
    # message.received, lead.updated and the like are not activity.
    assert Event.objects.filter(type="message.received").exists()
    item = next(i for i in data if i["type"] == "lead.qualified")
    event = Event.objects.get(type="lead.qualified")
    assert item == {
        "id": "evt_" + event.pk.hex, "type": "lead.qualified", "leadId": "lead_" + feed.pk.hex,
        "conversationId": None, "description": event.description, "metadata": v1_data(event),
        "occurredAt": event.occurred_at.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
    }
    handoff = next(i for i in data if i["type"] == "conversation.handoff")
    assert handoff["conversationId"].startswith("conv_") and handoff["metadata"]["handoff"]
    assert r.json()["pagination"] == {"page": 1, "limit": 50, "total": 5, "totalPages": 1,
                                      "hasMore": False}


def test_type_filter_takes_a_comma_separated_list(api, kit, feed):
    r = _get(api, kit, "type=lead.qualified,conversation.handoff")
    assert sorted(i["type"] for i in r.json()["data"]) == ["conversation.handoff", "lead.qualified"]
    r = _get(api, kit, "type=lead.created")
    assert [i["type"] for i in r.json()["data"]] == ["lead.created"]


def test_lead_filter(api, kit, feed):
    other = make_lead(kit)
    r = _get(api, kit, f"leadId=lead_{other.pk.hex}")
    assert [i["type"] for i in r.json()["data"]] == ["lead.created"]
    assert _get(api, kit, f"leadId=lead_{'0' * 32}").json()["data"] == []


def test_the_default_window_is_the_last_24_hours(api, kit, feed):
    Event.objects.filter(type="lead.created").update(occurred_at=timezone.now() - timedelta(hours=25))
    types = {i["type"] for i in _get(api, kit).json()["data"]}
    assert "lead.created" not in types and "lead.qualified" in types
    # The day the moved events fell on (yesterday, or the day before between 00:00 and 01:00 UTC).
    that_day = (timezone.now() - timedelta(hours=25)).date().isoformat()
    types = {i["type"] for i in _get(api, kit, f"startDate={that_day}").json()["data"]}
    assert "lead.created" in types
    moment = (timezone.now() - timedelta(hours=26)).strftime("%Y-%m-%dT%H:%M:%SZ")
    r = _get(api, kit, f"endDate={moment}")
    assert r.status_code == 200 and r.json()["data"] == []


def test_pagination(api, kit):
    for _ in range(7):
        make_lead(kit)
    r = _get(api, kit, "limit=3&page=3")
    assert len(r.json()["data"]) == 1
    assert r.json()["pagination"] == {"page": 3, "limit": 3, "total": 7, "totalPages": 3,
                                      "hasMore": False}
    first = [i["id"] for i in _get(api, kit, "limit=3").json()["data"]]
    second = [i["id"] for i in _get(api, kit, "limit=3&page=2").json()["data"]]
    assert not set(first) & set(second)


@pytest.mark.parametrize("query, status, field, code", [
    ("type=lead.updated", 400, "type", "invalid_enum"),
    ("type=lead.created,bogus", 400, "type", "invalid_enum"),
    ("leadId=conv_" + "0" * 32, 400, "leadId", "invalid_format"),
    ("limit=101", 400, "limit", "out_of_range"),
    ("page=0", 400, "page", "out_of_range"),
    ("startDate=tomorrow", 400, "startDate", "invalid_format"),
    ("startDate=2026-03-02&endDate=2026-03-01", 422, "startDate", "out_of_range"),
    ("startDate=2024-01-01&endDate=2026-01-01", 422, "endDate", "out_of_range"),
])
def test_validation(api, kit, query, status, field, code):
    r = _get(api, kit, query)
    assert r.status_code == status
    assert {"field": field, "code": code}.items() <= r.json()["error"]["details"][0].items()


def test_stranger_and_test_mode_see_nothing(api, kit, stranger, feed):
    assert _get(api, stranger).json()["data"] == []
    assert _get(api, kit, mode="test").json()["data"] == []
    assert _get(api, stranger, f"leadId=lead_{feed.pk.hex}").json()["data"] == []
    make_lead(kit, mode="test")
    assert [i["type"] for i in _get(api, kit, mode="test").json()["data"]] == ["lead.created"]
    assert api.get(URL).status_code == 401


def test_query_count_is_fixed(api, kit, django_assert_max_num_queries):
    _get(api, kit)
    for _ in range(12):
        make_lead(kit)
    for limit in (5, 50):
        with django_assert_max_num_queries(3):  # key, page, total
            assert len(_get(api, kit, f"limit={limit}").json()["data"]) == min(limit, 12)
