"""The slots offered follow what the visitor asked for (docs/agent.md, "When the visitor would
like to meet"): "next week", a weekday, "tomorrow", a part of the day, in the visitor's time zone
and language, through /api/v1/chat; asked after slots were offered, other slots are offered; and
when nothing is free then, the reply says so and offers the closest times."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from django.utils import timezone

from agent.phrases import phrase
from tenants.services import tenant_set_meetings
from tests.chat_helpers import chat

BERLIN = ZoneInfo("Europe/Berlin")
SAM = "Hi, I'm Sam, sam@umbrella.io"


@pytest.fixture
def every_day(kit):
    """Meetings every day, 08:00-18:00 UTC (09:00-19:00 in Berlin)."""
    tenant_set_meetings(tenant=kit.tenant, timezone_name="UTC", days=list(range(7)),
                        start_hour=8, end_hour=18, minutes=30)
    return kit


def _local(action) -> datetime:
    token = action["metadata"]["slot"]
    return datetime.strptime(token, "%Y-%m-%dT%H:%MZ").replace(tzinfo=UTC).astimezone(BERLIN)


def _offered(response) -> list[datetime]:
    slots = [a for a in response.json()["suggestedActions"] if "slot" in a.get("metadata", {})]
    assert slots, response.json()
    return [_local(a) for a in slots]


def _today() -> date:
    return timezone.now().astimezone(BERLIN).date()


def _ask(api, kit, message, *, session=None, **extra):
    return chat(api, kit, message, session=session, metadata={"timezone": "Europe/Berlin"},
                **extra)


def test_next_week_offers_next_weeks_days_in_the_visitors_zone(api, every_day):
    sid = _ask(api, every_day, SAM).json()["sessionId"]
    r = _ask(api, every_day, "Can we book a demo next week?", session=sid)
    monday = _today() - timedelta(days=_today().weekday()) + timedelta(days=7)
    offered = _offered(r)
    assert len(offered) == 3 and len({t.date() for t in offered}) == 3  # several days
    assert all(monday <= t.date() <= monday + timedelta(days=6) for t in offered), offered


def test_a_weekday_and_a_part_of_the_day_asked_in_german(api, every_day):
    sid = _ask(api, every_day, "Hallo, ich bin Sam, sam@umbrella.io", language="de").json()[
        "sessionId"]
    r = _ask(api, every_day, "Ich möchte eine Demo buchen, am liebsten Donnerstagnachmittag",
             session=sid, language="de")
    days_ahead = (3 - _today().weekday() - 1) % 7 + 1
    thursday = _today() + timedelta(days=days_ahead)
    offered = _offered(r)
    assert len(offered) == 3 and len(set(offered)) == 3
    assert all(t.date() == thursday and 12 <= t.hour < 18 for t in offered), offered
    assert r.json()["content"].startswith(phrase("de", "offer_slots"))


def test_a_time_asked_after_the_offer_offers_those_times_instead(api, every_day):
    sid = _ask(api, every_day, SAM).json()["sessionId"]
    first = _offered(_ask(api, every_day, "I'd like to book a demo", session=sid))
    r = _ask(api, every_day, "Do you have anything tomorrow morning?", session=sid)
    tomorrow = _today() + timedelta(days=1)
    offered = _offered(r)
    assert all(t.date() == tomorrow and t.hour < 12 for t in offered), offered
    assert offered != first
    # The offer changed: the new slots are the ones the visitor may choose among.
    chosen = [a for a in r.json()["suggestedActions"] if "slot" in a.get("metadata", {})][1]
    booked = chat(api, every_day, chosen["message"], session=sid)
    assert chosen["label"] in booked.json()["content"]


def test_a_time_nothing_is_free_at_gets_the_closest_times_and_says_so(api, kit):
    # Monday to Friday only (the default): Sunday has nothing.
    sid = _ask(api, kit, SAM).json()["sessionId"]
    r = _ask(api, kit, "Could we book a demo on Sunday evening?", session=sid)
    offered = _offered(r)
    assert all(t.weekday() < 5 for t in offered)
    assert r.json()["content"].startswith(phrase("en", "slots_not_then"))


def test_a_time_said_before_the_meeting_was_asked_for_still_counts(api, every_day):
    sid = _ask(api, every_day, SAM).json()["sessionId"]
    _ask(api, every_day, "We are a team of 20, evenings suit us best", session=sid)
    offered = _offered(_ask(api, every_day, "Book a demo please", session=sid))
    assert all(t.hour >= 17 for t in offered), offered
