"""Searching messages from the conversations list (docs/dashboard.md, "Inbox"): the visitors'
and the agent's words, at the start of a word and in any case, in the caller's tenant and mode
only; the matching message shown with the terms marked and everything escaped; the tabs, the
channel and the tag still filter; pages without a total, in a fixed number of queries."""

from __future__ import annotations

import pytest
from django.db import connection

from conversations.services import conversation_tag_add, tag_create
from tenants.services import user_create
from tests.dashboard.client import signed_in
from tests.dashboard.html import page
from tests.factories import PASSWORD, make_lead
from tests.inbox_helpers import conversation_with


@pytest.fixture
def rep(kit):
    return user_create(tenant=kit.tenant, email="ray@acme.test", first_name="Ray",
                       last_name="Rep", password=PASSWORD)


def _hits(response) -> list[str]:
    """The matching messages listed, as text."""
    return [" ".join(p.text_content().split())
            for p in page(response.content).xpath("//ol[@id='search-results']/li/p[@class='hit']")]


def _marks(response) -> list[str]:
    return [m.text_content() for m in page(response.content).xpath("//ol[@id='search-results']//mark")]


def test_finds_the_visitors_and_the_agents_words_by_their_start_in_any_case(kit, rep):
    lead = make_lead(kit, email="ann@hooli.test", name="Ann Lee")
    conversation_with(kit, ("user", "How much is the Enterprise PLAN?"),
                      ("assistant", "Enterprise pricing starts at 49 euros a seat."), lead=lead)
    conversation_with(kit, ("user", "Do you integrate with Salesforce?"), visitor="v-other")
    client = signed_in(rep)

    r = client.get("/dashboard/conversations/?view=all&q=enterprise")
    assert r.status_code == 200
    hits = _hits(r)
    # Newest first: the agent's reply, then the visitor's question; the other one not at all.
    assert hits == ["Agent: Enterprise pricing starts at 49 euros a seat.",
                    "Visitor: How much is the Enterprise PLAN?"]
    assert _marks(r) == ["Enterprise", "Enterprise"]
    assert "Ann Lee" in r.content.decode()
    # The start of a word, any case: "PRIC" finds "pricing"; every term must be there.
    assert _hits(client.get("/dashboard/conversations/?view=all&q=PRIC")) == [hits[0]]
    assert _marks(client.get("/dashboard/conversations/?view=all&q=plan+enterprise")) == [
        "Enterprise", "PLAN"]
    assert _hits(client.get("/dashboard/conversations/?view=all&q=plan+salesforce")) == []
    # Only the last term may be a word's start on PostgreSQL; SQLite's LIKE takes any part.
    cut = _hits(client.get("/dashboard/conversations/?view=all&q=enterpr+pricing"))
    assert cut == ([] if connection.vendor == "postgresql" else [hits[0]])
    # Each result leads to its message in the transcript.
    link = page(r.content).xpath("//ol[@id='search-results']/li[1]//a/@href")[0]
    assert link.startswith("/dashboard/conversations/") and "#m-" in link


def test_a_message_is_shown_escaped_around_its_match(kit, rep):
    long_start = "word " * 60
    conversation_with(kit, ("user", long_start + "<script>alert(1)</script> & <b>invoice</b> 42"))
    r = signed_in(rep).get("/dashboard/conversations/?view=all&q=invoice")
    html = r.content.decode()
    assert "<script>alert(1)</script>" not in html and "<b>invoice" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt; &amp; &lt;b&gt;<mark>invoice</mark>&lt;/b&gt;" in html
    (hit,) = _hits(r)
    assert hit.startswith("Visitor: …") and len(hit) < 220  # a window around the match


@pytest.mark.parametrize("mode_shown", ["live", "test"])
def test_search_sees_the_callers_tenant_and_mode_only(kit, stranger, rep, mode_shown):
    conversation_with(kit, ("user", "Our budget is marker-live"), mode="live")
    conversation_with(kit, ("user", "Our budget is marker-test"), mode="test", visitor="v-t")
    conversation_with(stranger, ("user", "Our budget is marker-stranger"))
    client = signed_in(rep)
    if mode_shown == "test":
        client.post("/dashboard/mode/", {"mode": "test"})
    hits = _hits(client.get("/dashboard/conversations/?view=all&q=budget"))
    assert hits == [f"Visitor: Our budget is marker-{mode_shown}"]
    theirs = signed_in(user_create(tenant=stranger.tenant, email="sam@stranger.test",
                                   password=PASSWORD))
    assert _hits(theirs.get("/dashboard/conversations/?view=all&q=budget")) == [
        "Visitor: Our budget is marker-stranger"]


def test_the_tab_the_channel_and_the_tag_still_filter(kit, rep):
    mine = conversation_with(kit, ("user", "refund please"), status="handed_off", assigned_to=rep,
                             visitor="v1")
    conversation_with(kit, ("user", "refund for the api order"), channel="api", visitor="v2")
    tagged = conversation_with(kit, ("user", "refund, it broke"), visitor="v3")
    vip = tag_create(tenant=kit.tenant, name="VIP")
    conversation_tag_add(conversation=tagged, tag=vip, user=rep)
    client = signed_in(rep)

    def texts(query: str) -> list[str]:
        return _hits(client.get(f"/dashboard/conversations/?q=refund&{query}"))

    assert len(texts("view=all")) == 3
    assert texts("view=mine") == ["Visitor: refund please"]
    assert texts("view=all&channel=api") == ["Visitor: refund for the api order"]
    assert texts(f"view=all&tag={vip.pk}") == ["Visitor: refund, it broke"]
    # The search box keeps the tab and the channel; nothing in a tab offers all conversations.
    r = client.get("/dashboard/conversations/?view=unassigned&q=refund")
    form = page(r.content).xpath("//form[@role='search']")[0]
    assert form.xpath(".//input[@name='view']/@value") == ["unassigned"]
    assert "search all conversations" in r.content.decode()
    assert str(mine.pk) not in r.content.decode()


def test_pages_of_results_without_a_total_in_a_fixed_number_of_queries(
        kit, rep, django_assert_num_queries):
    for number in range(27):
        conversation_with(kit, ("user", f"question number {number} about onboarding"),
                          visitor=f"v{number}")
    client = signed_in(rep)
    first = client.get("/dashboard/conversations/?view=all&q=onboarding")
    assert len(_hits(first)) == 25 and "Older →" in first.content.decode()
    assert _hits(first)[0] == "Visitor: question number 26 about onboarding"
    second = client.get("/dashboard/conversations/?view=all&q=onboarding&page=2")
    assert _hits(second) == ["Visitor: question number 1 about onboarding",
                             "Visitor: question number 0 about onboarding"]
    assert "Older →" not in second.content.decode() and "← Newer" in second.content.decode()
    # As many statements for 25 results as for 2: the session, the person, their second factor,
    # the tenant, the tags, the search, the tags of the results' conversations, the unread handoffs.
    for path in ("?view=all&q=onboarding", "?view=all&q=onboarding&page=2"):
        with django_assert_num_queries(8):
            client.get("/dashboard/conversations/" + path)


@pytest.mark.parametrize("query", ["", "   "])
def test_an_empty_search_lists_the_conversations(kit, rep, query):
    conversation = conversation_with(kit, ("user", "hello"))
    r = signed_in(rep).get("/dashboard/conversations/", {"view": "all", "q": query})
    assert f"/dashboard/conversations/{conversation.pk}/" in r.content.decode()
    assert not page(r.content).xpath("//ol[@id='search-results']")


def test_a_search_without_a_word_finds_nothing(kit, rep):
    conversation_with(kit, ("user", "hello !!!"))
    r = signed_in(rep).get("/dashboard/conversations/", {"view": "all", "q": "!!! ???"})
    assert _hits(r) == [] and "No message holds a word to search for" in r.content.decode()
