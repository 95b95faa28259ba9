"""Leads, a lead's history, the transcript's Markdown and the home page's install checklist in a
real browser (headless Chromium) against a real daphne process on the embedded default: the
status filter finds a booked lead by its label, the history reads as a timeline linking its
meeting, a rep's Markdown reply renders as the widget renders it (and nothing hostile runs),
and the checklist ticks a step once it is done. Screenshots with ``SCREENSHOTS=1``
(``make screenshots``)."""

from __future__ import annotations

import json
import re
import time
import uuid

import httpx
import pytest

from tests.browser import browser, screenshot
from tests.live import daphne, manage

from .test_browser import EMBEDDED, PASSWORD

pytestmark = pytest.mark.live  # daphne and Chromium

SETUP = """
from leads.services import lead_create
from tenants.models import Tenant
from tenants.services import tenant_set_meetings, user_create
tenant = Tenant.objects.get(pk={tenant!r})
user_create(tenant=tenant, email="mia@acme.test", first_name="Mia", last_name="Manager",
            role="manager", password={password!r})
tenant_set_meetings(tenant=tenant, timezone_name="Europe/Berlin", days=[0, 1, 2, 3, 4, 5, 6],
                    start_hour=9, end_hour=17, minutes=30, booking_url="")
for email, name, status in [("olga@initech.example", "Olga", "nurturing"),
                            ("pete@globex.example", "Pete", "qualifying"),
                            ("quinn@hooli.example", "Quinn", "lost")]:
    lead_create(tenant=tenant, livemode=True, email=email, name=name, status=status, source="form")
"""
REPLY = ("Hi, Mia here. **Happy to help** — see [the docs](https://example.com/docs).\n"
         "- Setup takes *minutes*\n- <script>window.__pwned = 1</script>"
         "[click](javascript:window.__pwned=2)")


def _chat(base: str, key: str, message: str, session: str | None = None,
          visitor: str = "sam", metadata: dict | None = None) -> dict:
    body = {"message": message, "visitorId": visitor, **({"sessionId": session} if session else {}),
            **({"metadata": metadata} if metadata else {})}
    r = httpx.post(f"{base}/api/v1/chat", json=body, timeout=30,
                   headers={"Authorization": f"Bearer {key}"})
    assert r.status_code == 200, r.text
    return r.json()


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    env = {**EMBEDDED, "VAR_DIR": str(tmp_path_factory.mktemp("leads"))}
    manage("migrate", "--noinput", env=env)
    acme = json.loads(manage("create_tenant", "Acme", "--json", env=env))
    manage("shell", "-c", SETUP.format(tenant=acme["tenant"]["id"], password=PASSWORD), env=env)
    with browser() as chromium, daphne(env) as base:
        key = acme["keys"]["live"]["write"]
        # Sam books a demo through the chat, as a visitor does.
        sid = _chat(base, key, "I'm Sam Lee, CTO at Umbrella, sam@umbrella.io")["sessionId"]
        offered = _chat(base, key, "Can we book a demo?", sid)
        slot = next(a for a in offered["suggestedActions"] if "slot" in a.get("metadata", {}))
        booked = _chat(base, key, slot["message"], sid, metadata=slot["metadata"])["content"]
        assert booked.startswith("You're booked for"), booked
        yield {"base": base, "browser": chromium, "key": key}


@pytest.fixture
def page(stack):
    context = stack["browser"].new_context(viewport={"width": 1280, "height": 900})
    yield signed_in(context, stack["base"])
    context.close()


def signed_in(context, base: str):
    page = context.new_page()
    page.goto(base + "/dashboard/login/")
    page.fill("#id_username", "mia@acme.test")
    page.fill("#id_password", PASSWORD)
    page.get_by_role("button", name="Sign in", exact=True).click()
    page.wait_for_url(base + "/dashboard/")
    return page


def test_the_status_filter_finds_a_booked_lead_by_its_label(stack, page):
    page.get_by_role("link", name="Leads").click()
    rows = page.locator("table tbody tr")
    assert rows.count() == 4
    for created in rows.locator("td:last-child").all_inner_texts():  # the Created column
        assert re.fullmatch(r"[A-Z][a-z]{2} \d{1,2}, \d{4} \d{2}:\d{2}", created), created
    options = page.locator("#id_status option").all_inner_texts()
    assert options == ["Any status", "New", "Qualifying", "Qualified", "Meeting booked", "Contacted",
                       "Nurturing", "Converted", "Lost"]
    page.select_option("#id_status", label="Meeting booked")
    page.get_by_role("button", name="Filter").click()
    page.wait_for_url(re.compile(r".*status=booked.*"))
    assert rows.count() == 1 and "Sam Lee" in rows.first.inner_text()
    assert "1 in all" in page.locator("h1").inner_text()
    screenshot(page, "dashboard-leads-status.png", full_page=True)
    page.select_option("#id_status", label="Nurturing")
    page.get_by_role("button", name="Filter").click()
    page.wait_for_url(re.compile(r".*status=nurturing.*"))
    assert rows.count() == 1 and "Olga" in rows.first.inner_text()


def test_the_history_reads_as_a_timeline_and_links_its_meeting(stack, page):
    page.get_by_role("link", name="Leads").click()
    page.get_by_role("link", name="Sam Lee").click()
    history = page.locator("#history")
    lines = history.locator("ol.timeline > li").all_inner_texts()
    text = "\n".join(lines)
    assert re.search(r"Meeting booked for \w{3} \d{1,2} \w{3}, \d{2}:\d{2} \(Europe/Berlin\) "
                     r"with Mia Manager", text), text
    assert "Qualified: Qualifying → Meeting booked" in text and "A meeting was booked" in text
    assert re.search(r"Scored 0 → \d+\n\+\d+ gave an email address", text), text
    assert lines[-1].split("\n")[-1].startswith("Created (source: Chat)")  # newest first
    assert not re.search(r"[0-9a-f]{8}-[0-9a-f]{4}-|[0-9a-f]{32}|lead\.updated", text)
    screenshot(page, "dashboard-lead-history.png", full_page=True)
    history.get_by_role("link", name="the meeting").first.click()
    assert re.search(r"#meeting-[0-9a-f-]{36}$", page.url)
    assert "Scheduled" in page.locator(page.url[page.url.index("#"):]).inner_text()


def test_a_reps_markdown_reply_renders_as_in_the_widget_and_nothing_hostile_runs(stack, page):
    base = stack["base"]
    session = _chat(base, stack["key"], "Hello, how does setup work?", visitor="vera")["sessionId"]
    url = f"{base}/dashboard/conversations/{uuid.UUID(hex=session.removeprefix('sess_'))}/"
    page.goto(url)
    page.get_by_role("button", name="Take over").click()
    # A second page on the conversation receives the reply live, once its stream is open.
    watcher = page.context.new_page()
    with watcher.expect_response(lambda r: r.url.endswith("/events/")):
        watcher.goto(url)
    time.sleep(0.5)  # the server subscribes right after it answered the stream's headers
    page.fill("#id_content", REPLY)
    page.get_by_role("button", name="Send to the visitor").click()
    assert "Reply sent." in page.locator(".messages").inner_text()

    for shown in (page, watcher.locator(".bubble.human").wait_for() or watcher):
        reply = shown.locator(".bubble.human .text")
        assert reply.locator("strong").inner_text() == "Happy to help"
        assert reply.locator("em").inner_text() == "minutes"
        links = reply.locator("a")
        assert links.count() == 1 and links.inner_text() == "the docs"
        assert (links.get_attribute("href"), links.get_attribute("rel"),
                links.get_attribute("target")) == ("https://example.com/docs",
                                                   "noopener noreferrer nofollow", "_blank")
        assert reply.locator("li").count() == 2
        assert "<script>window.__pwned = 1</script>" in reply.inner_text()  # shown as text
        assert shown.locator("#transcript script, #transcript [onerror]").count() == 0
        assert shown.evaluate("window.__pwned") is None
    # The visitor's own words are never read as Markdown (as in the widget).
    assert page.locator(".bubble.user .text").last.inner_text() == "Hello, how does setup work?"
    assert page.locator(".bubble.user .text strong, .bubble.user .text a").count() == 0
    screenshot(page, "dashboard-transcript-markdown.png", full_page=True)

    # Without JavaScript the reply is its plain text, as written.
    context = stack["browser"].new_context(java_script_enabled=False)
    try:
        plain = signed_in(context, base)
        plain.goto(url)
        reply = plain.locator(".bubble.human .text")
        assert "**Happy to help**" in reply.inner_text() and reply.locator("strong").count() == 0
    finally:
        context.close()


def test_the_install_checklist_ticks_a_step_once_done(stack, page):
    checklist = page.locator("#install")
    # The conversations, and the keys create_tenant made: every other step is open.
    assert "2 of 5 done" in checklist.inner_text()
    done = checklist.locator("li.done strong").all_inner_texts()
    assert done == ["First conversation", "API key created"]
    screenshot(page, "dashboard-home.png", full_page=True)
    checklist.get_by_role("link", name="Add your site's address to the allowed origins").click()
    page.wait_for_url(stack["base"] + "/dashboard/settings/#origins")
    page.fill("#id_origins", "https://www.acme.example")
    page.locator("#origins").get_by_role("button").click()
    page.get_by_role("link", name="Home").click()
    assert page.locator("#install li.done strong").all_inner_texts() == [
        "Allowed origin set", "First conversation", "API key created"]
    assert "3 of 5 done" in page.locator("#install").inner_text()
