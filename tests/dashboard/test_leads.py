"""The dashboard's leads list: the source and status filters are part of the query, so pages are
full and the total counts only the matching leads, with or without a search; the status filter
offers every stored status by its label."""

from __future__ import annotations

import re

import pytest
from django.utils.dateformat import format as date_format
from django.utils.timezone import localtime

from leads.models import Lead
from leads.vocabulary import LeadStatus
from tests.dashboard.client import signed_in
from tests.factories import make_lead

ROW = re.compile(r'href="/dashboard/leads/[0-9a-f-]{36}/"')


@pytest.fixture
def sixty_leads(kit):
    """40 form leads and 20 imported ones, interleaved in time, all at Globex."""
    for i in range(60):
        make_lead(kit, email=f"lead{i}@globex.example", company="Globex",
                  source="import" if i % 3 == 0 else "form")


def rows(page: str) -> int:
    return len(ROW.findall(page))


@pytest.mark.parametrize("search", ["", "q=globex&"], ids=["list", "search"])
def test_the_source_filter_fills_pages_and_counts_only_that_source(manager, sixty_leads, search,
                                                                   django_assert_max_num_queries):
    client = signed_in(manager)
    client.get("/dashboard/")
    with django_assert_max_num_queries(9):  # + the team and the saved views
        first = client.get(f"/dashboard/leads/?{search}source=form").content.decode()
    assert rows(first) == 25 and "40 in all" in first and "Page 1 of 2" in first
    assert "@globex.example" in first and ">import<" not in first
    newest = Lead.objects.filter(source="form").latest("created_at")
    assert date_format(localtime(newest.created_at), "M j, Y H:i") in first  # the Created column
    second = client.get(f"/dashboard/leads/?{search}source=form&page=2").content.decode()
    assert rows(second) == 15 and "40 in all" in second and "Page 2 of 2" in second
    imported = client.get(f"/dashboard/leads/?{search}source=import").content.decode()
    assert rows(imported) == 20 and "20 in all" in imported and ">form<" not in imported
    assert "Page 1 of" not in imported  # one page: no pager


@pytest.mark.parametrize("search", ["", "q=initech&"], ids=["list", "search"])
def test_the_status_filter_offers_and_finds_every_stored_status(manager, kit, search,
                                                                django_assert_max_num_queries):
    # Two leads of each stored status, one of them in test mode (never shown on live data).
    for status in LeadStatus.values:
        make_lead(kit, email=f"{status}@initech.example", company="Initech", status=status)
        make_lead(kit, mode="test", email=f"{status}.test@initech.example", company="Initech",
                  status=status)
    client = signed_in(manager)
    form = client.get("/dashboard/leads/").content.decode()
    for status, label in LeadStatus.choices:
        assert f'<option value="{status}">{label}</option>' in form
    for status, label in LeadStatus.choices:
        with django_assert_max_num_queries(9):  # + the team and the saved views
            page = client.get(f"/dashboard/leads/?{search}status={status}").content.decode()
        assert rows(page) == 1 and "1 in all" in page, status
        assert f"{status}@initech.example" in page and f'<span class="pill {status}">{label}<' in page
        assert f'<option value="{status}" selected>{label}</option>' in page


@pytest.mark.parametrize("search", ["", "q=globex&"], ids=["list", "search"])
@pytest.mark.parametrize("sort, expected", [
    ("newest", ["c", "b", "a"]), ("oldest", ["a", "b", "c"]), ("score", ["b", "c", "a"]),
    ("updated", ["a", "c", "b"]),
])
def test_the_order_applies_to_the_list_and_to_a_search(manager, kit, search, sort, expected):
    from leads.services import lead_update

    made = {name: make_lead(kit, email=f"{name}@globex.example", company="Globex")
            for name in ("a", "b", "c")}
    lead_update(lead=made["b"], changes={"score": 90})
    lead_update(lead=made["c"], changes={"score": 40})
    lead_update(lead=made["a"], changes={"name": "Ann"})  # the last one updated
    page = signed_in(manager).get(f"/dashboard/leads/?{search}sort={sort}").content.decode()
    ids = re.findall(r'href="/dashboard/leads/([0-9a-f-]{36})/"', page)
    assert ids == [str(made[name].pk) for name in expected]
