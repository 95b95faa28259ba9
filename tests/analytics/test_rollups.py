"""The analytics rollups agree with the raw rows: kept by the services through chats, lead
writes, meetings, handoffs, widget loads and deletions, and recomputed by the rebuild."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.core.management import call_command

from analytics.models import ChannelDailyStat, LeadDailyStat, LeadJourney, VisitorDay
from analytics.services import record_widget_visit
from conversations.models import Conversation
from conversations.services import (
    conversation_assign,
    conversation_delete,
    conversation_hand_back,
    conversation_reply_as_human,
)
from leads.models import Lead
from leads.services import lead_delete, lead_update
from tests.analytics_helpers import (
    clock,
    raw_channel_stats,
    raw_lead_stats,
    raw_visitor_days,
    rollup_channel_stats,
    rollup_lead_stats,
    rollup_visitor_days,
)
from tests.chat_helpers import chat, take
from tests.factories import UserFactory, make_lead

DAY1 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def _story(api, kit, mode="live"):
    """Three days of a tenant's life, through the public services only."""
    live = mode == "live"
    with clock(DAY1):
        for visitor in ("a", "b", "c", "a"):
            record_widget_visit(tenant=kit.tenant, livemode=live, visitor_id=visitor)
        a = chat(api, kit, "Hi", visitor="a", mode=mode).json()["sessionId"]
        chat(api, kit, "How much does it cost?", session=a, visitor="a", mode=mode)
        b = chat(api, kit, "Hi, I'm Ann, CTO at Hooli. ann@hooli.com", visitor="b",
                 mode=mode).json()["sessionId"]
        chat(api, kit, "We need to automate lead capture, budget is $20k and we want it this "
                       "quarter", session=b, visitor="b", mode=mode)
        chat(api, kit, "I want to talk to a human", visitor="c", mode=mode)
        api_lead = make_lead(kit, mode=mode, source="form", created_at=DAY1)
    with clock(DAY1 + timedelta(days=1)):
        record_widget_visit(tenant=kit.tenant, livemode=live, visitor_id="a")
        sam = chat(api, kit, "Hi, I'm Sam, sam@umbrella.io", visitor="d", mode=mode).json()["sessionId"]
        r = chat(api, kit, "Can we book a demo?", session=sam, visitor="d", mode=mode)
        slot = next(a for a in r.json()["suggestedActions"] if a["type"] == "reply")
        take(api, kit, slot, session=sam, visitor="d", mode=mode)
        lead_update(lead=api_lead, changes={"score": 55, "status": "qualified"})
        lead_update(lead=api_lead, changes={"source": "import"})
        imported = make_lead(kit, mode=mode, source="import", status="converted")
    with clock(DAY1 + timedelta(days=2)):
        # Ann comes back after her session expired: a new conversation, already her lead's.
        chat(api, kit, "Hello again, any news?", visitor="b", mode=mode)
        lead_update(lead=api_lead, changes={"status": "converted", "score": 90})
        lead_update(lead=imported, changes={"status": "lost", "source": "api"})
        doomed = chat(api, kit, "I'm Zed, zed@example.org", visitor="z", mode=mode).json()["sessionId"]
        conversation_delete(conversation=Conversation.objects.get(pk=a[5:]))
        # A person takes a conversation over and answers: a handoff, a message, no agent reply.
        rep = UserFactory(tenant=kit.tenant)
        taken = chat(api, kit, "Hi there", visitor="t", mode=mode).json()["sessionId"]
        taken = conversation_assign(conversation=Conversation.objects.get(pk=taken[5:]), user=rep)
        conversation_reply_as_human(conversation=taken, author=rep, content="Hello, I'm here.")
        conversation_hand_back(conversation=taken)
        lead_delete(lead=Lead.objects.get(email="zed@example.org", livemode=live))
        assert Conversation.objects.get(pk=doomed[5:]).lead_id is None
        # The conversation that captured Una goes; Una stays, captured by no conversation now.
        una = chat(api, kit, "I'm Una, una@example.org", visitor="u", mode=mode).json()["sessionId"]
        conversation_delete(conversation=Conversation.objects.get(pk=una[5:]))
        assert LeadJourney.objects.get(lead__email="una@example.org", lead__livemode=live,
                                       lead__tenant=kit.tenant).channel == ""


def _assert_agree(tenant, livemode):
    assert rollup_visitor_days(tenant, livemode) == raw_visitor_days(tenant, livemode)
    assert rollup_channel_stats(tenant, livemode) == raw_channel_stats(tenant, livemode)
    assert rollup_lead_stats(tenant, livemode) == raw_lead_stats(tenant, livemode)


def test_services_keep_the_rollups_equal_to_the_raw_rows(api, kit, stranger):
    _story(api, kit)
    _story(api, kit, mode="test")
    _story(api, stranger)
    for tenant in (kit.tenant, stranger.tenant):
        for livemode in (True, False):
            _assert_agree(tenant, livemode)
    raw = raw_channel_stats(kit.tenant, True)
    day1 = raw[(DAY1.date(), "api")]
    # The story really exercised every counter (a, deleted, no longer counts).
    assert day1["conversations"] == 2 and day1["converted"] == 1 and day1["handed_off"] == 1
    assert day1["responses"] == 3 and day1["response_us"] > 0
    # Widget loads of a, b, c; on the API channel, c chatted without leaving a lead (b left
    # one, a's conversation was deleted).
    assert raw[(DAY1.date(), "web_chat")]["uncaptured_visitors"] == 3
    assert day1["uncaptured_visitors"] == day1["uncaptured_engaged"] == 1
    days = raw_visitor_days(kit.tenant, True)
    assert days[(DAY1.date(), "api", "b")] == {"chats": 1, "leads": 1}
    assert days[(DAY1.date(), "web_chat", "a")] == {"loads": 2}
    day3 = raw[((DAY1 + timedelta(days=2)).date(), "api")]
    assert day3["handed_off"] == 1  # the takeover
    assert day3["messages"] == 3 * 2 + 1  # three turns, and the person's reply
    leads = raw_lead_stats(kit.tenant, True)
    assert sum(c["booked"] for c in leads.values()) == 1
    assert sum(c["qualified"] for c in leads.values()) >= 2
    assert sum(c["converted"] for c in leads.values()) == 2
    # The form lead went on to qualify and convert; Sam booked a demo without qualifying.
    assert sum(c["cohort_converted"] for c in leads.values()) == 2
    assert sum(c["cohort_booked"] for c in leads.values()) == 3


def test_the_rebuild_recomputes_the_same_numbers(api, kit):
    _story(api, kit)
    kept = (rollup_visitor_days(kit.tenant, True), rollup_channel_stats(kit.tenant, True),
            rollup_lead_stats(kit.tenant, True))
    ChannelDailyStat.objects.all().delete()
    LeadDailyStat.objects.all().delete()
    LeadJourney.objects.all().delete()
    VisitorDay.objects.filter(loads=0).delete()  # the widget loads are raw data: they stay
    VisitorDay.objects.update(chats=0, leads=0)
    call_command("rebuild_counts", kit.tenant.public_id, "--mode", "live")
    assert (rollup_visitor_days(kit.tenant, True), rollup_channel_stats(kit.tenant, True),
            rollup_lead_stats(kit.tenant, True)) == kept
    # The services go on from the rebuilt rows.
    with clock(DAY1 + timedelta(days=2, hours=5)):
        chat(api, kit, "Hi, I'm Yan, yan@example.org", visitor="y")
    _assert_agree(kit.tenant, True)


def test_writes_that_roll_back_leave_no_counts(kit):
    with pytest.raises(RuntimeError), clock(DAY1):
        from django.db import transaction

        with transaction.atomic():
            make_lead(kit, status="qualified")
            record_widget_visit(tenant=kit.tenant, visitor_id="v")
            raise RuntimeError
    assert not LeadDailyStat.objects.exclude(created=0, qualified=0).exists()
    assert not ChannelDailyStat.objects.exclude(uncaptured_visitors=0).exists()
    assert not VisitorDay.objects.exists()


def test_widget_visits_count_once_a_day_per_visitor(kit):
    with clock(DAY1):
        assert record_widget_visit(tenant=kit.tenant, visitor_id="v") is True
        assert record_widget_visit(tenant=kit.tenant, visitor_id="v") is False
        assert record_widget_visit(tenant=kit.tenant, visitor_id="v", livemode=False) is True
        assert record_widget_visit(tenant=kit.tenant, visitor_id="") is False
        assert record_widget_visit(tenant=kit.tenant, visitor_id="w", channel="fax") is False
        assert record_widget_visit(tenant=kit.tenant, visitor_id="x" * 201) is False
    with clock(DAY1 + timedelta(days=1)):
        assert record_widget_visit(tenant=kit.tenant, visitor_id="v") is True
        # Once a day on each channel.
        assert record_widget_visit(tenant=kit.tenant, visitor_id="v", channel="whatsapp") is True
    assert rollup_channel_stats(kit.tenant, True) == raw_channel_stats(kit.tenant, True)
    assert sum(c["uncaptured_visitors"] for c in raw_channel_stats(kit.tenant, True).values()) == 3
    assert rollup_visitor_days(kit.tenant, True)[(DAY1.date(), "web_chat", "v")] == {"loads": 2}
