"""A lead's history on its dashboard page: a readable timeline, newest first, built from the lead's
events (created and from where, scored and why, qualified, a meeting booked at the meeting's
local time, handed off to a person, status changes), in a fixed number of queries, naming people
and linking conversations and meetings instead of showing ids."""

from __future__ import annotations

import re
from zoneinfo import ZoneInfo

import pytest
from django.utils.dateformat import format as date_format

from conversations.models import Conversation
from tenants.services import tenant_set_meetings
from tests.chat_helpers import chat
from tests.conversations.meeting_helpers import book
from tests.dashboard.client import signed_in
from tests.factories import make_available

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-|[0-9a-f]{32}")


@pytest.fixture
def lived(api, kit, manager, rep):
    """Sam books a demo (in Berlin time), asks for a person, and a manager sets the lead to
    Nurturing from the dashboard."""
    tenant_set_meetings(tenant=kit.tenant, timezone_name="Europe/Berlin", days=[0, 1, 2, 3, 4, 5, 6],
                        start_hour=9, end_hour=17, minutes=30, booking_url="")
    make_available(rep)  # the handoff goes to someone who is there
    meeting, _ = book(api, kit)
    chat(api, kit, "Can I talk to a person please?", session="sess_" + meeting.conversation_id.hex)
    signed_in(manager).post(f"/dashboard/leads/{meeting.lead_id}/status/", {"status": "nurturing"})
    return meeting


def history(page: str) -> list[str]:
    """The history's lines as a reader sees them (tags gone, spaces folded), top to bottom."""
    section = page.split('id="history"', 1)[1].split("</section>", 1)[0]
    items = re.findall(r'<li class="[a-z]+">(.*?)</li>\s*(?=<li class=|</ol>)', section, re.S)
    return [" ".join(re.sub(r"<[^>]+>", " ", item).split()) for item in items]


def test_the_history_reads_as_a_timeline_newest_first(lived, kit, rep, manager):
    page = signed_in(rep).get(f"/dashboard/leads/{lived.lead_id}/").content.decode()
    lines = history(page)
    conversation = Conversation.objects.get(pk=lived.conversation_id)
    berlin = date_format(lived.starts_at.astimezone(ZoneInfo("Europe/Berlin")), "D j M, H:i")
    expected = [
        "Status: Meeting booked → Nurturing",
        f"Handed off to {conversation.assigned_to.display_name} · the conversation "
        "The visitor asked to talk to a person. Priority high",
        f"Meeting booked for {berlin} (Europe/Berlin) with {lived.host.display_name} · the meeting",
        "Qualified: Qualifying → Meeting booked A meeting was booked",
        "Scored 0 → 45",
        "Created (source: Chat) · the conversation",
    ]
    found = iter(lines)
    for wanted in expected:  # in this order, newest first, each somewhere after the one before
        assert any(wanted in line for line in found), (wanted, lines)
    score = next(line for line in lines if "Scored 0 → 45" in line)
    assert re.search(r"\+\d+ \w", score), score  # the reasons that made the score
    later = next(line for line in lines if re.search(r"Scored 45 → \d+", line))
    assert later.count("+") < score.count("+"), (later, score)  # only what the new score added
    # No raw event types and no ids; conversations and meetings are links instead.
    section = re.sub(r"<[^>]+>", " ", page.split('id="history"', 1)[1].split("</section>")[0])
    assert not UUID.search(section) and "lead.updated" not in section
    assert f'href="/dashboard/conversations/{conversation.pk}/">the conversation</a>' in page
    assert f'href="#meeting-{lived.pk}">the meeting</a>' in page
    assert f'id="meeting-{lived.pk}"' in page


def test_the_history_costs_the_same_queries_however_long(api, kit, rep, lived,
                                                        django_assert_max_num_queries):
    client = signed_in(rep)
    client.get("/dashboard/")
    # 17: with the one INSERT of the staff access audit (docs/privacy.md).
    with django_assert_max_num_queries(17) as first:
        client.get(f"/dashboard/leads/{lived.lead_id}/")
    count = len(first.captured_queries)
    # More conversations, handoffs and status changes: the same number of queries.
    for i in range(3):
        sid = chat(api, kit, "Hi again, sam@umbrella.io here", visitor=f"again{i}").json()["sessionId"]
        chat(api, kit, "I want to talk to a human", visitor=f"again{i}", session=sid)
        client.post(f"/dashboard/leads/{lived.lead_id}/status/",
                    {"status": ["contacted", "lost", "qualified"][i]})
    with django_assert_max_num_queries(count):
        page = client.get(f"/dashboard/leads/{lived.lead_id}/").content.decode()
    lines = history(page)
    assert lines[0].endswith("Qualified: Lost → Qualified Set to Qualified by Ray in the dashboard")
    assert sum("Came back in a new conversation" in line for line in lines) == 3


def test_a_strangers_lead_has_no_history_page(stranger, lived, rep):
    from tests.factories import make_lead

    theirs = make_lead(stranger, email="secret@stranger.example")
    assert signed_in(rep).get(f"/dashboard/leads/{theirs.pk}/").status_code == 404
