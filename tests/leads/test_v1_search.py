"""GET /api/v1/leads/search."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from leads.services import lead_update
from tests.factories import make_lead

T0 = datetime(2026, 3, 1, tzinfo=UTC)


@pytest.fixture
def people(kit):
    specs = [
        {"email": "ada@engines.example", "name": "Ada Lovelace", "company": "Analytical Engines"},
        {"email": "grace@navy.example", "name": "Grace Hopper", "company": "US Navy",
         "custom_fields": {"team": "compilers", "notes": {"met": "at Engines conference"}}},
        {"email": "alan@bletchley.example", "name": "Alan Turing", "company": "Bletchley Park",
         "status": "qualified"},
        {"email": "linus@kernel.example", "name": "Linus", "company": "Kernel Engines Ltd",
         "custom_fields": {"stack": "C"}},
    ]
    leads = [make_lead(kit, created_at=T0 + timedelta(days=i), **spec)
             for i, spec in enumerate(specs)]
    for lead in leads:  # last activity in creation order: the newest is the most recent
        lead_update(lead=lead, changes={})
    return leads


def _search(api, kit, query, scope="read", mode="live"):
    return api.get(f"/api/v1/leads/search?{query}", headers=kit.auth(scope, mode))


def test_matches_name_email_company_and_custom_field_values(api, kit, people):
    r = _search(api, kit, "q=engines")
    assert r.status_code == 200
    data = r.json()["data"]
    # Most recently active first.
    assert [d["email"] for d in data] == ["linus@kernel.example", "grace@navy.example",
                                          "ada@engines.example"]
    assert [d["matchField"] for d in data] == ["company", "customFields.notes", "email"]
    assert set(data[0]) == {"id", "email", "name", "company", "status", "score", "matchField",
                            "lastActiveAt"}
    assert data[0]["id"] == f"lead_{people[3].pk.hex}"
    assert r.json()["pagination"] == {"page": 1, "limit": 25, "total": 3, "totalPages": 1,
                                      "hasMore": False}


@pytest.mark.parametrize("q, emails, field", [
    ("LOVELACE", ["ada@engines.example"], "name"),
    ("bletchley.ex", ["alan@bletchley.example"], "email"),
    ("navy", ["grace@navy.example"], "email"),
    ("compilers", ["grace@navy.example"], "customFields.team"),
    ("ov", ["ada@engines.example"], "name"),  # too short for a trigram: a scan, same answer
    ("100%", [], None),
    ("a_a", [], None),
])
def test_case_insensitive_substrings_and_literal_wildcards(api, kit, people, q, emails, field):
    r = _search(api, kit, f"q={q.replace('%', '%25')}")
    assert [d["email"] for d in r.json()["data"]] == emails
    if field:
        assert r.json()["data"][0]["matchField"] == field


def test_custom_field_keys_are_not_searched(api, kit, people):
    assert _search(api, kit, "q=stack").json()["data"] == []


def test_status_filter_and_pagination(api, kit, people):
    r = _search(api, kit, "q=example&status=qualified")
    assert [d["email"] for d in r.json()["data"]] == ["alan@bletchley.example"]
    assert r.json()["data"][0]["status"] == "qualified"
    r = _search(api, kit, "q=example&limit=3&page=2")
    assert [d["email"] for d in r.json()["data"]] == ["ada@engines.example"]
    assert r.json()["pagination"] == {"page": 2, "limit": 3, "total": 4, "totalPages": 2,
                                      "hasMore": False}
    r = _search(api, kit, "q=example&limit=3&page=5")
    assert r.json()["data"] == [] and r.json()["pagination"]["total"] == 4


@pytest.mark.parametrize("query, field, code", [
    ("", "q", "required"),
    ("q=a", "q", "too_short"),
    ("q=%20a%20", "q", "too_short"),
    ("q=" + "x" * 201, "q", "too_long"),
    ("q=ada&status=booked", "status", "invalid_enum"),
    ("q=ada&limit=101", "limit", "out_of_range"),
    ("q=ada&page=0", "page", "out_of_range"),
])
def test_bad_queries_are_400_with_details(api, kit, query, field, code):
    r = _search(api, kit, query)
    assert r.status_code == 400
    assert r.json()["error"]["details"][0] | {"message": ""} == {
        "field": field, "code": code, "message": ""}


def test_stranger_and_other_mode_find_nothing(api, kit, stranger, people):
    assert _search(api, stranger, "q=engines").json()["data"] == []
    assert _search(api, kit, "q=engines", mode="test").json()["data"] == []
    make_lead(kit, mode="test", email="sandbox@engines.example")
    r = _search(api, kit, "q=engines", mode="test")
    assert [d["email"] for d in r.json()["data"]] == ["sandbox@engines.example"]
    assert _search(api, kit, "q=sandbox").json()["data"] == []


def test_needs_a_key(api):
    assert api.get("/api/v1/leads/search?q=ada").status_code == 401


@pytest.mark.parametrize("q", ["engines", "en"])
def test_query_count_is_the_same_at_limit_10_and_100(api, kit, q):
    for i in range(120):
        make_lead(kit, email=f"p{i}@engines.example", company=f"Engines {i}")
    _search(api, kit, f"q={q}")
    counts = []
    for limit in (10, 100):
        with CaptureQueriesContext(connection) as captured:
            r = _search(api, kit, f"q={q}&limit={limit}")
        assert len(r.json()["data"]) == limit
        assert r.json()["pagination"]["total"] == 120
        counts.append(len(captured))
    # "engines" is in one word of every lead: key, the word count (too few leads for a walk),
    # and one query (rows and total); "en" has no trigram: key + one query. The walk of the
    # search rows: test_search_rows.py.
    assert counts[0] == counts[1] == (3 if len(q) >= 3 else 2)
