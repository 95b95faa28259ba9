"""Two handoffs at once never exceed a rep's capacity (docs/dashboard.md, "Availability and
routing"): routing locks the rows of the people it may choose before it counts their open
handoffs, so the second waits for the first to commit and then counts it. Two real transactions
on two connections, on PostgreSQL (SQLite takes one lock for the whole database)."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connection, transaction
from django.utils import timezone

from agent.types import Handoff
from conversations.models import Conversation
from conversations.services import lifecycle
from tests.factories import UserFactory, make_tenant

pytestmark = pytest.mark.skipif(connection.vendor != "postgresql",
                                reason="PostgreSQL only: row locks (CI runs it)")


def test_two_handoffs_at_once_give_a_rep_of_capacity_one_only_one(transactional_db, monkeypatch):
    kit = make_tenant("Race Inc")
    rep = UserFactory(tenant=kit.tenant, available=True, capacity=1)
    waiting = [Conversation.objects.create(tenant=kit.tenant, livemode=True, visitor_id=f"v{i}")
               for i in range(2)]
    first_chose, outcome = threading.Event(), {}
    real = lifecycle.rep_for_handoff

    def slow(**kwargs):
        chosen = real(**kwargs)
        if threading.current_thread().name == "first":
            first_chose.set()  # the rep's row is locked, the handoff not yet committed
            time.sleep(0.5)  # the second handoff routes now
        return chosen

    monkeypatch.setattr(lifecycle, "rep_for_handoff", slow)

    def hand_off(name, conversation):
        try:
            with transaction.atomic():
                current = (Conversation.objects.select_for_update(of=("self",))
                           .select_related("tenant").get(pk=conversation.pk))
                outcome[name] = lifecycle.hand_off(
                    current, Handoff(reason="Asked for a person", priority="normal",
                                     suggested_team="sales"), now=timezone.now())
                current.save()
        except Exception as exc:
            outcome[name] = exc
        finally:
            connection.close()

    first = threading.Thread(name="first", target=hand_off, args=("first", waiting[0]))
    first.start()
    assert first_chose.wait(10)
    second = threading.Thread(name="second", target=hand_off, args=("second", waiting[1]))
    second.start()
    first.join(30)
    second.join(30)
    assert outcome == {"first": rep, "second": None}, outcome
    assert Conversation.objects.filter(assigned_to=rep, status="handed_off").count() == 1
    assert Conversation.objects.filter(assigned_to__isnull=True, status="handed_off").count() == 1
