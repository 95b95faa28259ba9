"""What the inbox tells of who is there and what they saw (docs/dashboard.md, "Inbox"): unread
markers per conversation and per person; typing both ways between the visitor and the person
who has the conversation, over the live channels, throttled and never stored; the visitor panel
(page, referrer, time zone and local time, language, device and browser, other conversations)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.core.cache import cache

from conversations.live import group_name
from conversations.models import Conversation, ConversationRead
from conversations.useragent import parse
from conversations.visitor import visitor_of
from tenants.services import user_create
from tests.chat_helpers import chat
from tests.dashboard.client import Client, signed_in
from tests.dashboard.html import page
from tests.factories import PASSWORD, make_available, make_lead
from tests.inbox_helpers import conversation_with, listening


@pytest.fixture
def rep(kit):
    return user_create(tenant=kit.tenant, email="ray@acme.test", first_name="Ray",
                       last_name="Rep", password=PASSWORD)


@pytest.fixture
def other(kit):
    return user_create(tenant=kit.tenant, email="otto@acme.test", first_name="Otto",
                       password=PASSWORD)


@pytest.fixture(autouse=True)
def _no_typing_throttle_left():
    cache.clear()  # the typing throttle's keys of an earlier test


def _unread(client, conversation) -> str | None:
    rows = page(client.get("/dashboard/conversations/?view=all").content).xpath(
        f"//tr[.//a[@href='/dashboard/conversations/{conversation.pk}/']]")
    marker = rows[0].xpath(".//span[@class='unread-count']/text()")
    return marker[0] if marker else None


def test_unread_markers_are_per_person_and_cleared_by_a_view(api, kit, rep, other):
    sid = chat(api, kit, "Hello there", visitor="v-unread").json()["sessionId"]
    conversation = Conversation.objects.get(pk=sid[5:])
    ray, otto = signed_in(rep), signed_in(other)
    assert _unread(ray, conversation) == "2 unread"  # never opened: the visitor's and the reply
    ray.get(f"/dashboard/conversations/{conversation.pk}/")
    assert _unread(ray, conversation) is None
    assert _unread(otto, conversation) == "2 unread"  # each person their own
    chat(api, kit, "Are you there?", session=sid, visitor="v-unread")
    assert _unread(ray, conversation) == "2 unread"
    # The open page reports what arrived live; a marker never moves back, nor past the end.
    ray.post(f"/dashboard/conversations/{conversation.pk}/read/", {"seen": "3"})
    assert _unread(ray, conversation) == "1 unread"
    ray.post(f"/dashboard/conversations/{conversation.pk}/read/", {"seen": "1"})
    ray.post(f"/dashboard/conversations/{conversation.pk}/read/", {"seen": "99"})
    assert _unread(ray, conversation) is None
    assert ConversationRead.objects.get(user=rep).seen_count == 4
    assert ray.post(f"/dashboard/conversations/{conversation.pk}/read/",
                    {"seen": "x"}).status_code == 400


def test_the_admin_token_has_no_markers(api, kit):
    chat(api, kit, "Hello", visitor="v-a")
    client = Client()
    client.post("/dashboard/login/token/", {"token": kit.admin_token})
    assert "unread" not in client.get("/dashboard/conversations/?view=all").content.decode()
    assert not ConversationRead.objects.exists()


def _handed_off_to(api, kit, rep) -> tuple[str, object]:
    make_available(rep)
    sid = api.post(f"/api/chat?tenant={kit.tenant.public_id}",
                   json={"message": "I want to talk to a human", "visitorId": "w-typing"}
                   ).json()["sessionId"]
    conversation = Conversation.objects.get(pk=sid)
    assert conversation.status == "handed_off" and conversation.assigned_to == rep
    return sid, conversation


def test_the_visitor_typing_reaches_the_person_who_has_the_conversation(api, kit, rep):
    sid, conversation = _handed_off_to(api, kit, rep)
    url = (f"/api/chat/typing?tenant={kit.tenant.public_id}&sessionId={sid}"
           "&visitorId=w-typing")
    with listening(group_name(conversation.pk)) as heard:
        assert api.post(url).status_code == 204
        assert api.post(url).status_code == 204  # within the throttle: not passed on again
        assert heard() == [("typing", {"role": "user", "author": None})]
    # An unknown session, another visitor's, another tenant's: 404; nothing without a session.
    assert api.post(url.replace("w-typing", "someone-else")).status_code == 404
    assert api.post(f"/api/chat/typing?tenant={kit.tenant.public_id}&visitorId=w").status_code == 400


def test_no_typing_is_passed_on_while_the_agent_has_the_conversation(api, kit):
    sid = api.post(f"/api/chat?tenant={kit.tenant.public_id}",
                   json={"message": "Hello", "visitorId": "w-agent"}).json()["sessionId"]
    with listening(group_name(Conversation.objects.get(pk=sid).pk)) as heard:
        r = api.post(f"/api/chat/typing?tenant={kit.tenant.public_id}&sessionId={sid}"
                     "&visitorId=w-agent")
        assert r.status_code == 204
        assert heard(0.3) == []


def test_the_person_typing_reaches_the_visitor(api, kit, rep, other):
    _, conversation = _handed_off_to(api, kit, rep)
    url = f"/dashboard/conversations/{conversation.pk}/typing/"
    with listening(group_name(conversation.pk)) as heard:
        assert signed_in(other).post(url).status_code == 204  # not theirs: nothing
        assert signed_in(rep).post(url).status_code == 204
        assert heard() == [("typing", {"role": "assistant", "author": {"name": "Ray"}})]


def test_the_visitor_panel(kit, rep):
    lead = make_lead(kit, email="ann@hooli.test", name="Ann Lee")
    earlier = conversation_with(kit, ("user", "first visit"), visitor="v-ann")
    by_lead = conversation_with(kit, ("user", "from her phone"), visitor="v-phone", lead=lead)
    conversation_with(kit, ("user", "someone else"), visitor="v-other")
    conversation = conversation_with(
        kit, ("user", "Hallo, was kostet das?"), visitor="v-ann", lead=lead, language="de",
        metadata={"landingPage": "https://acme.example/pricing?plan=pro",
                  "referrer": "https://www.google.com/",
                  "timezone": "Europe/Berlin",
                  "userAgent": "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) "
                               "AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 "
                               "Mobile/15E148 Safari/604.1"})
    r = signed_in(rep).get(f"/dashboard/conversations/{conversation.pk}/")
    panel = page(r.content).xpath("//section[@id='visitor']")[0]
    facts = dict(zip(panel.xpath(".//dt/text()"),
                     (" ".join(dd.text_content().split()) for dd in panel.xpath(".//dd")),
                     strict=True))
    assert facts["Current page"] == "https://acme.example/pricing?plan=pro"
    assert facts["Came from"] == "https://www.google.com/"
    assert facts["Time zone"] == "Europe/Berlin" and facts["Their time"].endswith(")")
    assert facts["Language"] == "German (de)"
    assert facts["Device"] == "Phone · iOS" and facts["Browser"] == "Safari 17"
    others = panel.xpath(".//ul[@class='others small']/li//a/@href")
    assert sorted(others) == sorted(f"/dashboard/conversations/{c.pk}/" for c in (earlier, by_lead))


def test_the_local_time_is_the_visitors():
    visitor = visitor_of(type("C", (), {"metadata": {"timezone": "America/New_York"},
                                        "language": "xx"})(),
                         now=datetime(2026, 1, 6, 15, 30, tzinfo=UTC))
    assert visitor.local_time == "Tue 10:30 (UTC-05:00)" and visitor.language == "xx"


@pytest.mark.parametrize("agent, expected", [
    ("Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
     "Chrome/126.0.0.0 Safari/537.36 Edg/126.0.2592.87", ("Desktop", "Windows", "Edge 126")),
    ("Mozilla/5.0 (Macintosh; Intel Mac OS X 14_5) AppleWebKit/537.36 (KHTML, like Gecko) "
     "Chrome/126.0.0.0 Safari/537.36", ("Desktop", "macOS", "Chrome 126")),
    ("Mozilla/5.0 (X11; Ubuntu; Linux x86_64; rv:127.0) Gecko/20100101 Firefox/127.0",
     ("Desktop", "Linux", "Firefox 127")),
    ("Mozilla/5.0 (Linux; Android 14; SM-S918B) AppleWebKit/537.36 (KHTML, like Gecko) "
     "SamsungBrowser/25.0 Chrome/121.0.0.0 Mobile Safari/537.36",
     ("Phone", "Android", "Samsung Internet 25")),
    ("Mozilla/5.0 (Linux; Android 13; SM-X700) AppleWebKit/537.36 (KHTML, like Gecko) "
     "Chrome/126.0.0.0 Safari/537.36", ("Tablet", "Android", "Chrome 126")),
    ("Mozilla/5.0 (iPad; CPU OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) "
     "CriOS/126.0 Mobile/15E148 Safari/604.1", ("Tablet", "iPadOS", "Chrome 126")),
    ("Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
     ("Bot", "", "Googlebot 2.1")),
    ("python-httpx/0.27.0", ("", "", "python-httpx 0.27.0")),
    ("", ("", "", "")),
])
def test_the_user_agent_says_device_system_and_browser(agent, expected):
    parsed = parse(agent)
    assert (parsed.device, parsed.system, parsed.browser) == expected
