"""The analytics rollups agree with the raw rows: kept by the services through chats, lead
writes, meetings, handoffs, visits and deletions, and recomputed by the rebuild."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.core.management import call_command

from analytics.models import ChannelDailyStat, LeadDailyStat, LeadJourney
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
    rollup_channel_stats,
    rollup_lead_stats,
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


def _assert_agree(tenant, livemode):
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
    assert raw[(DAY1.date(), "web_chat")]["visitors"] == 3
    day3 = raw[((DAY1 + timedelta(days=2)).date(), "api")]
    assert day3["handed_off"] == 1  # the takeover
    assert day3["messages"] == 3 * 2 + 1  # three turns, and the person's reply
    leads = raw_lead_stats(kit.tenant, True)
    assert sum(c["booked"] for c in leads.values()) == 1
    assert sum(c["qualified"] for c in leads.values()) >= 2
    assert sum(c["converted"] for c in leads.values()) == 2


def test_the_rebuild_recomputes_the_same_numbers(api, kit):
    _story(api, kit)
    kept = (rollup_channel_stats(kit.tenant, True), rollup_lead_stats(kit.tenant, True))
    ChannelDailyStat.objects.all().delete()
    LeadDailyStat.objects.all().delete()
    LeadJourney.objects.all().delete()
    call_command("rebuild_counts", kit.tenant.public_id, "--mode", "live")
    assert (rollup_channel_stats(kit.tenant, True), rollup_lead_stats(kit.tenant, True)) == kept
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
    assert not ChannelDailyStat.objects.exclude(visitors=0).exists()


def test_widget_visits_count_once_a_day_per_visitor(kit):
    with clock(DAY1):
        assert record_widget_visit(tenant=kit.tenant, visitor_id="v") is True
        assert record_widget_visit(tenant=kit.tenant, visitor_id="v") is False
        assert record_widget_visit(tenant=kit.tenant, visitor_id="v", livemode=False) is True
        assert record_widget_visit(tenant=kit.tenant, visitor_id="") is False
        assert record_widget_visit(tenant=kit.tenant, visitor_id="w", channel="fax") is False
    with clock(DAY1 + timedelta(days=1)):
        assert record_widget_visit(tenant=kit.tenant, visitor_id="v") is True
    assert rollup_channel_stats(kit.tenant, True) == raw_channel_stats(kit.tenant, True)
    assert sum(c["visitors"] for c in raw_channel_stats(kit.tenant, True).values()) == 2
