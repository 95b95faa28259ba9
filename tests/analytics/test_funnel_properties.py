"""The funnel holds together whatever happens (docs/analytics.md, "GET /api/v1/analytics/funnel").

Random mixes of widget loads, chats on every channel, leads of every source, qualifications,
conversions, booked demos and deletions, driven through the public surfaces over three UTC days
(seeded, so a failure names the mix that caused it). Then, on v1, for every period and every
filter: each stage is at most the one before it, every ``conversionToNext`` is in [0, 1],
``overallConversion`` is a number and ``topDropoffStage`` a stage name. On the legacy surface:
the status counts add up to the leads, the conversion rate is a percentage, and the leads now
qualified or booked are among those it counts. The rollups, kept live and rebuilt, agree with
the raw rows all along.
"""

from __future__ import annotations

import random
from datetime import UTC, date, datetime, timedelta

import pytest
from asgiref.sync import async_to_sync
from django.core.management import call_command

from agent.providers import provider_for
from analytics.models import ChannelDailyStat, LeadDailyStat, LeadJourney, VisitorDay
from analytics.selectors import FUNNEL_STAGES
from config.ratelimit import get_store
from conversations.services import TurnInput, run_turn, turn_open
from tests.analytics_helpers import (
    clock,
    raw_channel_stats,
    raw_lead_stats,
    raw_visitor_days,
    rollup_channel_stats,
    rollup_lead_stats,
    rollup_visitor_days,
)
from tests.factories import make_tenant

START = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
DAYS = 3
URL = "/api/v1/analytics/funnel"
CHANNELS = ("web_chat", "api", "whatsapp", "slack")
SOURCES = ("chat", "api", "import", "form")
FILTERS = ["", *(f"channel={c}" for c in CHANNELS), *(f"source={s}" for s in SOURCES),
           "channel=web_chat&source=chat", "channel=api&source=form"]


@pytest.fixture
def big(db):
    """An enterprise tenant: the story's requests stay inside its rate limits."""
    return make_tenant(name="Funnel Inc", plan="enterprise")


class Story:
    """One random mix of what visitors, the agent and the staff do, through the surfaces."""

    def __init__(self, api, kit, rng: random.Random):
        self.api, self.kit, self.rng = api, kit, rng
        self.visitors = [f"v{i}" for i in range(8)]
        self.leads: list[str] = []
        self.conversations: list[str] = []
        self.emails = 0

    def _email(self) -> str:
        self.emails += 1
        return f"p{self.emails}@example.org"

    def load(self) -> None:
        visitor = self.rng.choice(self.visitors)
        r = self.api.get(f"/api/widget?tenant={self.kit.tenant.public_id}&visitorId={visitor}")
        assert r.status_code == 200, r.content

    def _chat(self, channel: str, visitor: str, message: str,
              session: str | None = None) -> tuple[str, list[dict]]:
        """A turn on ``channel``: the widget's and the API's endpoints, and for the channels
        that have no endpoint of their own the chat service they would call. The session, and
        the actions the reply suggested."""
        body = {"message": message, "visitorId": visitor, **({"sessionId": session} if session else {})}
        if channel == "web_chat":
            r = self.api.post(f"/api/chat?tenant={self.kit.tenant.public_id}", json=body)
        elif channel == "api":
            r = self.api.post("/api/v1/chat", json=body, headers=self.kit.auth("write"))
        else:
            opened = turn_open(TurnInput(tenant=self.kit.tenant, livemode=True, visitor_id=visitor,
                                         message=message, channel=channel))
            async_to_sync(run_turn)(opened, provider_for(self.kit.tenant))
            return f"sess_{opened.conversation_id.hex}", []
        assert r.status_code == 200, r.content
        return r.json()["sessionId"], r.json()["suggestedActions"]

    def chat(self) -> None:
        """A visitor chats on some channel, and perhaps gives an email (a lead, or theirs)."""
        channel = self.rng.choice(CHANNELS)
        visitor = self.rng.choice(self.visitors)
        message = "Hi, what does it cost?"
        if self.rng.random() < 0.6:
            message = f"I'm interested, my email is {self._email()}"
        self.conversations.append(self._chat(channel, visitor, message)[0])

    def _conversation(self) -> str:
        """One of the story's conversations, as the conversations API names it."""
        session = self.conversations.pop(self.rng.randrange(len(self.conversations)))
        return "conv_" + session.split("_", 1)[1]

    def book(self) -> None:
        """A visitor gives their email, asks for a demo and takes the first slot."""
        channel = self.rng.choice(("web_chat", "api"))
        visitor = self.rng.choice(self.visitors)
        session, _ = self._chat(channel, visitor, f"Hi, I'm Sam, {self._email()}")
        self.conversations.append(session)
        _, offered = self._chat(channel, visitor, "Can we book a demo?", session)
        slot = next((a for a in offered if a["type"] == "reply"), None)
        if slot is not None:
            self._chat(channel, visitor, slot["message"], session)

    def lead(self) -> None:
        source = self.rng.choice(SOURCES)
        status = self.rng.choice(("new", "new", "qualified", "converted"))
        r = self.api.post("/api/v1/leads", json={"email": self._email(), "source": source,
                                                  "status": status},
                          headers=self.kit.auth("write"))
        assert r.status_code == 201, r.content

    def _some_lead(self) -> str | None:
        r = self.api.get("/api/v1/leads?limit=100", headers=self.kit.auth("read"))
        ids = [lead["id"] for lead in r.json()["data"]]
        return self.rng.choice(ids) if ids else None

    def move(self) -> None:
        """A lead is qualified, converted, lost, or changes source."""
        lead = self._some_lead()
        if lead is None:
            return
        change = self.rng.choice(({"status": "qualified"}, {"status": "converted"},
                                  {"status": "lost"}, {"source": self.rng.choice(SOURCES)}))
        r = self.api.patch(f"/api/v1/leads/{lead}", json=change, headers=self.kit.auth("write"))
        assert r.status_code == 200, r.content

    def delete(self) -> None:
        if self.rng.random() < 0.5 and self.conversations:
            target = f"/api/v1/conversations/{self._conversation()}"
        else:
            lead = self._some_lead()
            if lead is None:
                return
            target = f"/api/v1/leads/{lead}"
        assert self.api.delete(target, headers=self.kit.auth("admin")).status_code == 204

    def play(self) -> None:
        actions = [(self.load, 5), (self.chat, 5), (self.lead, 3), (self.move, 3),
                   (self.book, 1), (self.delete, 1)]
        for day in range(DAYS):
            with clock(START + timedelta(days=day)):
                for _ in range(self.rng.randint(6, 12)):
                    get_store().clear()  # rate limits are not under test here
                    action = self.rng.choices([a for a, _ in actions],
                                              weights=[w for _, w in actions])[0]
                    action()


def _periods() -> list[tuple[date, date]]:
    days = [(START + timedelta(days=d)).date() for d in range(DAYS)]
    return [(days[0], days[-1]), *((d, d) for d in days), (days[1], days[2])]


def _check_funnel(data: dict, where: str) -> None:
    stages = data["stages"]
    assert [s["name"] for s in stages] == list(FUNNEL_STAGES), where
    counts = [s["count"] for s in stages]
    assert counts == sorted(counts, reverse=True), (where, counts)
    for stage in stages[:-1]:
        rate = stage["conversionToNext"]
        assert rate is None if stage["count"] == 0 else 0 <= rate <= 1, (where, stages)
    assert stages[-1]["conversionToNext"] is None
    assert isinstance(data["overallConversion"], int | float), (where, data)
    assert 0 <= data["overallConversion"] <= 1
    assert data["topDropoffStage"] in FUNNEL_STAGES, (where, data)


def _check_legacy(api, kit) -> None:
    overview = api.get("/api/analytics/overview", headers=kit.auth("read")).json()["overview"]
    funnel = api.get("/api/analytics/funnel", headers=kit.auth("read")).json()["funnel"]
    assert sum(funnel.values()) == overview["totalLeads"]
    assert 0 <= overview["conversionRate"] <= 100
    # Leads now qualified or booked (converted shows as booked) have all reached the stage the
    # rate counts; the rate is the share of the leads that did.
    reached = round(overview["conversionRate"] * overview["totalLeads"] / 100)
    assert funnel["qualified"] + funnel["booked"] <= reached <= overview["totalLeads"]


def _check_rollups(kit) -> None:
    tenant = kit.tenant
    assert rollup_visitor_days(tenant, True) == raw_visitor_days(tenant, True)
    assert rollup_channel_stats(tenant, True) == raw_channel_stats(tenant, True)
    assert rollup_lead_stats(tenant, True) == raw_lead_stats(tenant, True)


@pytest.mark.parametrize("seed", range(5))
def test_every_stage_is_within_the_one_before(api, big, seed):
    Story(api, big, random.Random(seed)).play()
    _check_rollups(big)
    for start, end in _periods():
        for query in FILTERS:
            get_store().clear()
            r = api.get(f"{URL}?startDate={start}&endDate={end}&{query}", headers=big.auth("read"))
            assert r.status_code == 200, r.content
            _check_funnel(r.json(), f"seed {seed}, {start}..{end}, {query or 'no filter'}")
    _check_legacy(api, big)
    # The rebuild recomputes the same rows from scratch.
    kept = (rollup_visitor_days(big.tenant, True), rollup_channel_stats(big.tenant, True),
            rollup_lead_stats(big.tenant, True))
    for model in (ChannelDailyStat, LeadDailyStat, LeadJourney):
        model.objects.all().delete()
    VisitorDay.objects.update(chats=0, leads=0)
    call_command("rebuild_counts", big.tenant.public_id, "--mode", "live")
    assert (rollup_visitor_days(big.tenant, True), rollup_channel_stats(big.tenant, True),
            rollup_lead_stats(big.tenant, True)) == kept
