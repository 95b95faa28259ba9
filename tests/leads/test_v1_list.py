"""GET /api/v1/leads: filters, sorts, pagination, scoping, query count."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from leads.services import lead_update
from tests.factories import make_lead

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def _ids(response) -> list[str]:
    return [lead["id"] for lead in response.json()["data"]]


def _v1(lead) -> str:
    return f"lead_{lead.pk.hex}"


@pytest.fixture
def five(kit):
    """Five live leads a day apart, with distinct statuses, sources and scores."""
    specs = [
        ("new", "chat", 10), ("qualified", "api", 50), ("contacted", "import", 30),
        ("converted", "form", 90), ("lost", "chat", 70),
    ]
    leads = []
    for day, (status, source, score) in enumerate(specs):
        lead = make_lead(kit, status=status, source=source, created_at=T0 + timedelta(days=day))
        lead_update(lead=lead, changes={"score": score}, touch_activity=False)
        leads.append(lead)
    return leads


def test_lists_newest_first_in_the_v1_shape(api, kit, five):
    r = api.get("/api/v1/leads", headers=kit.auth("read"))
    assert r.status_code == 200
    assert _ids(r) == [_v1(lead) for lead in reversed(five)]
    first = r.json()["data"][0]
    assert set(first) == {"id", "email", "name", "company", "title", "phone", "status", "score",
                          "source", "tags", "customFields", "assignedTo", "firstSeenAt",
                          "lastActiveAt", "createdAt", "updatedAt"}
    assert first["createdAt"] == "2026-03-05T12:00:00.000Z"
    assert first["status"] == "lost" and first["score"] == 70 and first["source"] == "chat"
    assert r.json()["pagination"] == {"page": 1, "limit": 25, "total": 5, "totalPages": 1,
                                      "hasMore": False}


def test_stored_statuses_show_in_the_v1_vocabulary(api, kit):
    make_lead(kit, status="booked")
    make_lead(kit, status="nurturing")
    make_lead(kit, status="qualifying")
    r = api.get("/api/v1/leads", headers=kit.auth("read"))
    assert [lead["status"] for lead in r.json()["data"]] == ["new", "contacted", "qualified"]
    r = api.get("/api/v1/leads?status=qualified", headers=kit.auth("read"))
    assert r.json()["pagination"]["total"] == 1


@pytest.mark.parametrize("query, expected", [
    ("status=qualified", [1]),
    ("status=new", [0]),
    ("source=chat", [4, 0]),
    ("source=form", [3]),
    ("createdAfter=2026-03-03", [4, 3, 2]),
    ("createdBefore=2026-03-02", [1, 0]),
    ("createdAfter=2026-03-02&createdBefore=2026-03-02", [1]),
    ("createdAfter=2026-03-02&createdBefore=2026-03-04&source=chat", []),
    ("status=lost&source=chat", [4]),
])
def test_filters(api, kit, five, query, expected):
    r = api.get(f"/api/v1/leads?{query}", headers=kit.auth("read"))
    assert r.status_code == 200, r.json()
    assert _ids(r) == [_v1(five[i]) for i in expected]
    assert r.json()["pagination"]["total"] == len(expected)


@pytest.mark.parametrize("query, expected", [
    ("sortBy=createdAt&sortOrder=asc", [0, 1, 2, 3, 4]),
    ("sortBy=score", [3, 4, 1, 2, 0]),
    ("sortBy=score&sortOrder=asc", [0, 2, 1, 4, 3]),
    ("sortBy=updatedAt&sortOrder=asc", [0, 1, 2, 3, 4]),
])
def test_sorts(api, kit, five, query, expected):
    r = api.get(f"/api/v1/leads?{query}", headers=kit.auth("read"))
    assert _ids(r) == [_v1(five[i]) for i in expected]


def test_ties_are_broken_by_id_so_pages_are_stable(api, kit):
    leads = [make_lead(kit, created_at=T0) for _ in range(7)]
    by_id = sorted(leads, key=lambda lead: lead.pk, reverse=True)
    seen = []
    for page in (1, 2, 3):
        r = api.get(f"/api/v1/leads?limit=3&page={page}", headers=kit.auth("read"))
        seen += _ids(r)
    assert seen == [_v1(lead) for lead in by_id]
    r = api.get("/api/v1/leads?sortOrder=asc", headers=kit.auth("read"))
    assert _ids(r) == [_v1(lead) for lead in reversed(by_id)]


def test_pagination(api, kit, five):
    r = api.get("/api/v1/leads?limit=2&page=2", headers=kit.auth("read"))
    assert _ids(r) == [_v1(five[2]), _v1(five[1])]
    assert r.json()["pagination"] == {"page": 2, "limit": 2, "total": 5, "totalPages": 3,
                                      "hasMore": True}
    r = api.get("/api/v1/leads?limit=2&page=3", headers=kit.auth("read"))
    assert r.json()["pagination"]["hasMore"] is False
    r = api.get("/api/v1/leads?limit=2&page=9", headers=kit.auth("read"))
    assert r.json()["data"] == [] and r.json()["pagination"]["total"] == 5


def test_deep_pages_by_creation_date_skip_whole_days(api, kit, monkeypatch):
    """Deep pages start at the right day (from the daily counts) instead of an OFFSET over
    every earlier row; the result must be the same as plain offsets."""
    from leads import selectors

    leads = [make_lead(kit, created_at=T0 + timedelta(hours=7 * i), source="chat" if i % 3
                       else "form") for i in range(40)]
    for order, key in (("desc", True), ("asc", False)):
        expected = [_v1(lead) for lead in sorted(leads, key=lambda x: (x.created_at, x.pk),
                                                 reverse=key)]
        for threshold in (10_000, 0):  # plain OFFSET, then the day skip on every page
            monkeypatch.setattr(selectors, "DEEP_OFFSET", threshold)
            got = []
            for page in range(1, 7):
                r = api.get(f"/api/v1/leads?limit=7&page={page}&sortOrder={order}",
                            headers=kit.auth("read"))
                got += _ids(r)
                assert r.json()["pagination"]["total"] == 40
            assert got == expected, (order, threshold)
        chat = [i for i in expected if i in {_v1(x) for x in leads if x.source == "chat"}]
        r = api.get(f"/api/v1/leads?limit=5&page=3&source=chat&sortOrder={order}",
                    headers=kit.auth("read"))
        assert _ids(r) == chat[10:15]
    r = api.get("/api/v1/leads?limit=7&page=7", headers=kit.auth("read"))
    assert r.json()["data"] == [] and r.json()["pagination"]["total"] == 40


def test_deep_pages_by_score_and_update_day_skip_whole_buckets(api, kit, monkeypatch, settings):
    """Deep pages sorted by score or updatedAt start at the right score or update day (from
    their counts); the result must be the same as plain offsets, with and without filters."""
    import random

    settings.RATE_LIMIT_ENABLED = False  # 140 pages, well past a Starter key's minute

    from django.utils import timezone

    from leads import selectors
    from leads.models import Lead

    rng = random.Random(3)
    made = []
    for i in range(40):
        lead = make_lead(kit, created_at=T0 + timedelta(hours=7 * i),
                         source=rng.choice(["chat", "form", "api"]))
        updated = T0 + timedelta(hours=11 * ((i * 7) % 40))
        with monkeypatch.context() as frozen:  # the service stamps updated_at with "now"
            frozen.setattr(timezone, "now", lambda at=updated: at)
            lead_update(lead=lead, changes={"score": rng.randrange(0, 101, 5),
                                            "status": rng.choice(["new", "qualified"])})
        made.append(lead.pk)
    leads = list(Lead.objects.filter(pk__in=made))
    assert len({lead.updated_at.date() for lead in leads}) > 10

    cases = [("score", "", lambda x: True), ("updatedAt", "", lambda x: True),
             ("score", "&status=qualified", lambda x: x.status == "qualified"),
             ("updatedAt", "&source=chat", lambda x: x.source == "chat"),
             ("score", "&createdAfter=2026-03-03", lambda x: x.created_at >= datetime(
                 2026, 3, 3, tzinfo=UTC))]  # no counts by score and day: plain OFFSET
    for sort_by, query, keep in cases:
        column = {"score": "score", "updatedAt": "updated_at"}[sort_by]
        for order, descending in (("desc", True), ("asc", False)):
            expected = [_v1(lead) for lead in sorted(
                filter(keep, leads), key=lambda x, c=column: (getattr(x, c), x.pk),
                reverse=descending)]
            for threshold in (10_000, 0):  # plain OFFSET, then the skip on every page
                monkeypatch.setattr(selectors, "DEEP_OFFSET", threshold)
                got = []
                for page in range(1, 8):
                    r = api.get(f"/api/v1/leads?limit=6&page={page}&sortBy={sort_by}"
                                f"&sortOrder={order}{query}", headers=kit.auth("read"))
                    assert r.status_code == 200, r.text
                    got += _ids(r)
                    assert r.json()["pagination"]["total"] == len(expected)
                assert got == expected, (sort_by, query, order, threshold)


@pytest.mark.parametrize("query, field, code", [
    ("limit=0", "limit", "out_of_range"),
    ("limit=101", "limit", "out_of_range"),
    ("page=0", "page", "out_of_range"),
    ("page=x", "page", "invalid_format"),
    ("status=booked", "status", "invalid_enum"),
    ("source=email", "source", "invalid_enum"),
    ("sortBy=name", "sortBy", "invalid_enum"),
    ("sortOrder=up", "sortOrder", "invalid_enum"),
    ("createdAfter=yesterday", "createdAfter", "invalid_format"),
    ("createdAfter=2026-13-01", "createdAfter", "invalid_format"),
    ("createdBefore=2026-03-01T10:00:00Z", "createdBefore", "invalid_format"),
])
def test_bad_query_parameters_are_400_with_details(api, kit, query, field, code):
    r = api.get(f"/api/v1/leads?{query}", headers=kit.auth("read"))
    assert r.status_code == 400
    error = r.json()["error"]
    assert error["code"] == "invalid_request"
    assert {"field": field, "code": code} == {k: error["details"][0][k] for k in ("field", "code")}


def test_a_backwards_range_is_422_as_in_analytics(api, kit):
    """Both dates are well formed (what the schema can say); that the pair runs backwards is a
    semantic failure, 422, as a backwards analytics period is."""
    r = api.get("/api/v1/leads?createdAfter=2026-03-02&createdBefore=2026-03-01",
                headers=kit.auth("read"))
    assert r.status_code == 422
    error = r.json()["error"]
    assert error["code"] == "unprocessable"
    assert [(d["field"], d["code"]) for d in error["details"]] == [("createdBefore", "out_of_range")]


def test_other_tenants_and_the_other_mode_are_invisible(api, kit, stranger, five):
    make_lead(stranger, email="theirs@example.com")
    test_lead = make_lead(kit, mode="test", email="sandbox@example.com")
    r = api.get("/api/v1/leads", headers=stranger.auth("read"))
    assert [lead["email"] for lead in r.json()["data"]] == ["theirs@example.com"]
    r = api.get("/api/v1/leads", headers=kit.auth("read", "test"))
    assert _ids(r) == [_v1(test_lead)]
    assert r.json()["pagination"]["total"] == 1
    r = api.get("/api/v1/leads", headers=kit.auth("read"))
    assert _v1(test_lead) not in _ids(r) and r.json()["pagination"]["total"] == 5


def test_needs_a_key(api):
    r = api.get("/api/v1/leads")
    assert r.status_code == 401 and r.json()["error"]["code"] == "unauthorized"


def test_an_empty_parameter_is_a_400_not_its_default(api, kit, five):
    """An empty value is no status, source or number, as the schema says (minLength 1, an enum,
    an integer): leaving the parameter out is how to get its default."""
    r = api.get("/api/v1/leads?status=&source=&limit=&createdAfter=", headers=kit.auth("read"))
    assert r.status_code == 400
    details = r.json()["error"]["details"]
    assert {(d["field"], d["code"]) for d in details} == {
        ("status", "invalid_format"), ("source", "invalid_format"), ("limit", "invalid_format"),
        ("createdAfter", "invalid_format")}


@pytest.mark.parametrize("query, deep_offset", [
    ("", 1000), ("status=new", 1000), ("source=chat", 1000), ("sortBy=score", 1000),
    ("sortBy=updatedAt&sortOrder=asc", 1000),
    ("createdAfter=2026-03-01&createdBefore=2026-06-01", 1000),
    ("page=2", 1000), ("page=2", 0), ("sortOrder=asc&source=api", 0),
])
def test_query_count_is_the_same_at_limit_10_and_100(api, kit, query, deep_offset, monkeypatch,
                                                     django_assert_max_num_queries):
    from leads import selectors

    monkeypatch.setattr(selectors, "DEEP_OFFSET", deep_offset)
    for i in range(150):
        make_lead(kit, created_at=T0 + timedelta(hours=i), source="chat" if i % 2 else "api")
    api.get("/api/v1/leads", headers=kit.auth("read"))  # key's last-use stamp written once
    for limit in (10, 100):
        # key lookup + total (daily counts) + page
        with django_assert_max_num_queries(3):
            r = api.get(f"/api/v1/leads?limit={limit}&{query}", headers=kit.auth("read"))
        assert r.status_code == 200
        assert r.json()["data"]


def test_list_timestamps_read_exactly_like_the_single_lead(api, kit):
    """The list has the database format its timestamps; they must match Python's rendering
    of the single read to the character, milliseconds truncated."""
    lead = make_lead(kit, created_at=T0 + timedelta(microseconds=123_999))
    lead_update(lead=lead, changes={})
    listed = api.get("/api/v1/leads", headers=kit.auth("read")).json()["data"][0]
    single = api.get(f"/api/v1/leads/{_v1(lead)}", headers=kit.auth("read")).json()
    assert listed["createdAt"] == "2026-03-01T12:00:00.123Z"
    for key in ("firstSeenAt", "lastActiveAt", "createdAt", "updatedAt"):
        assert listed[key] == single[key], key
    found = api.get("/api/v1/leads/search?q=example", headers=kit.auth("read")).json()["data"]
    assert found[0]["lastActiveAt"] == single["lastActiveAt"]
    legacy = api.get("/api/leads?q=example", headers=kit.auth("read")).json()["leads"][0]
    assert legacy["createdAt"] == single["createdAt"]
