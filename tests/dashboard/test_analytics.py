"""The dashboard's analytics page over HTTP: the funnel and the time series drawn as inline SVG
from the same selectors as the API (the numbers must agree), the period form, the Live/Test
switch, the tenant wall, and no script or third-party request."""

from __future__ import annotations

import html
import re
from datetime import timedelta

from django.utils import timezone

from analytics.services import record_widget_visit
from conversations.models import Meeting
from leads.services import lead_update
from tests.chat_helpers import chat, take
from tests.dashboard.client import signed_in
from tests.dashboard.html import errors_beside, value_of
from tests.dashboard.html import page as parsed
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
    # 11: with the check that a person with two-factor sign-in passed it (dashboard.auth), the
    # period's first meetings and conversions beside the funnel, and the visitors' ratings.
    with django_assert_max_num_queries(11):
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
    assert f"Leads created {today}/{today}: 3</title>" in page
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
    # The stage named in the page's words, as its bar is.
    words = {"Visitors": "Visitors", "Engaged (Started Chat)": "Started a chat",
             "Lead Captured": "Leads created", "Qualified": "Qualified, or further",
             "Demo Booked": "Booked a meeting, or converted", "Converted": "Converted"}
    dropoff = html.escape(words[funnel["topDropoffStage"]])
    assert f"Largest drop-off after <strong>{dropoff}</strong>" in overall
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
    assert client.get("/dashboard/analytics/?start=yesterday&granularity=hour").status_code == 200


def test_a_refused_period_is_told_beside_from_or_to_in_the_forms_words(kit, manager):
    """Issue 29: "startDate is after endDate" named the API's parameters, not the fields."""
    client = signed_in(manager)
    end = timezone.now().date()
    r = client.get(f"/dashboard/analytics/?start={end}&end={end - timedelta(days=3)}")
    assert r.status_code == 200
    assert errors_beside(r.content, "id_start") == ["From is after To: choose a From on or before To."]
    assert value_of(r.content, "id_start") == end.isoformat()  # what was asked, kept
    r = client.get(f"/dashboard/analytics/?start={end - timedelta(days=400)}&end={end}")
    assert errors_beside(r.content, "id_end") == ["At most 365 days from From to To."]
    r = client.get("/dashboard/analytics/?start=yesterday")
    assert errors_beside(r.content, "id_start") == ["Enter a valid date."]
    for content in (r.content, client.get(f"/dashboard/analytics/?start={end}&end=2000-01-01").content):
        text = content.decode()
        assert "startDate" not in text and "endDate" not in text
        assert "the period asked for cannot be shown" in text  # the default period meanwhile
        assert "(UTC days)" in text


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


def tiles(page: str) -> dict[str, int]:
    """Each tile that counts something, its figure by its name, as the page shows them (the
    rate and the average score left out)."""
    return {" ".join(tile.xpath("./span")[0].text_content().split()):
            int(tile.xpath("./b")[0].text_content())
            for tile in parsed(page).xpath("//div[@class='stats']/div[@class='stat']")
            if tile.xpath("./b")[0].text_content().isdigit()}


def stage_labels(page: str) -> dict[str, int]:
    """Each funnel stage's figure by the name the page gives it."""
    return {" ".join(stage.xpath(".//*[@class='stage-label']")[0].text_content().split()):
            int(stage.xpath(".//*[@class='count']")[0].text_content())
            for stage in parsed(page).xpath("//*[@data-stage]")}


def test_each_figure_is_named_for_what_it_counts_and_tiles_and_stages_agree(api, kit, manager):
    """Issue 29: "6 Qualified leads" stood beside a funnel "Qualified 12", and "Demo Booked 7"
    after one booking. The tile counted first qualifications in the period; the stage, the
    period's leads qualified or gone further (converted ones included); "Demo Booked", the
    leads with a meeting or converted."""
    for _ in range(6):
        lead_update(lead=make_lead(kit, source="api"), changes={"status": "qualified"})
    for _ in range(6):
        lead_update(lead=make_lead(kit, source="api"), changes={"status": "converted"})
    sam = chat(api, kit, "Hi, I'm Sam, sam@umbrella.io", visitor="d").json()["sessionId"]
    r = chat(api, kit, "Can we book a demo?", session=sam, visitor="d")
    slot = next(a for a in r.json()["suggestedActions"] if a["type"] == "reply")
    take(api, kit, slot, session=sam, visitor="d")
    assert Meeting.objects.filter(lead__email="sam@umbrella.io").count() == 1

    page = signed_in(manager).get("/dashboard/analytics/").content.decode()
    overview = api.get("/api/v1/analytics/overview", headers=kit.auth("read")).json()["summary"]
    funnel = {s["name"]: s["count"] for s in api.get(
        "/api/v1/analytics/funnel", headers=kit.auth("read")).json()["stages"]}
    assert (overview["qualifiedLeads"], funnel["Qualified"], funnel["Demo Booked"]) == (7, 13, 7)
    assert tiles(page) == {
        "Conversations started": 1, "Leads created": 13, "Leads first qualified": 7,
        "First meetings booked": 1, "Leads converted": 6}
    assert stage_labels(page) == {
        "Visitors": 13, "Started a chat": 13, "Leads created": 13, "Qualified, or further": 13,
        "Booked a meeting, or converted": 7, "Converted": 6}
    # Where a tile and a stage count the same thing they carry the same name and number; no
    # other name is shared.
    shared = tiles(page).keys() & stage_labels(page).keys()
    assert shared == {"Leads created"} and tiles(page)["Leads created"] == 13
    # Where they differ, the page says why, with the tile's figure.
    why = " ".join(parsed(page).xpath("//*[@id='tiles-and-funnel']")[0].text_content().split())
    assert "Leads created: the same 13 leads in the tile and in the funnel." in why
    assert ("counts a lead that went on to a meeting or converted without being marked qualified; "
            "the tile Leads first qualified (7) counts the first qualifications made in the "
            "period, of leads created at any time.") in why
    assert "First meetings booked (1) and Leads converted (6)" in why


def test_with_a_channel_the_page_says_the_funnel_leaves_the_other_leads_out(api, kit, manager):
    activity(api, kit)  # one lead from a chat through the API, two from a form
    page = signed_in(manager).get("/dashboard/analytics/?channel=api").content.decode()
    assert tiles(page)["Leads created"] == 3 and stage_labels(page)["Leads created"] == 1
    assert "<h2>Funnel: API only</h2>" in page
    why = " ".join(parsed(page).xpath("//*[@id='why-channel']")[0].text_content().split())
    assert "its Leads created (1) leaves out" in why and "which the tile (3) counts" in why
