"""The statements of one chat turn with the builtin agent (docs/performance.md, "Chat"): a fixed
number, whatever the conversation's length, so that the turn's time does not creep up with it."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from agent.phrases import phrase
from conversations.services.turn import HISTORY_LIMIT
from tests.chat_helpers import chat

# A continued turn of a visitor without a lead: the key; open (the conversation locked, the
# message, the conversation, the event and its rollup, the history, retrieval: the full-text
# search and the version of the tenant's vectors); apply (the conversation locked, saved); close
# (locked, the reply, the conversation, the event and its rollup): 16 statements, and a savepoint
# and its release around each of the three transactions inside the test's own. (Outside tests,
# the webhook fan-out's receiver lookup follows each of the two commits that emitted events:
# tests do not run on-commit hooks.)
CONTINUED_TURN = 22
# A first turn starts the conversation (its row, its event, the visitor's day) and has no
# history to read.
FIRST_TURN = 24
# On PostgreSQL, open and apply each say that their commit need not wait for the disk (``SET
# LOCAL synchronous_commit``: one round trip instead of a WAL flush; close's commit flushes all).
NO_WAIT = 2 if connection.vendor == "postgresql" else 0


def _turn(api, kit, message, session=None, *, visitor="visitor-1") -> tuple[dict, int]:
    with CaptureQueriesContext(connection) as captured:
        r = chat(api, kit, message, session=session, visitor=visitor)
    assert r.status_code == 200, r.content
    return r.json(), len(captured.captured_queries)


def test_a_turn_makes_a_fixed_number_of_statements(api, kit, django_assert_max_num_queries):
    with django_assert_max_num_queries(FIRST_TURN + NO_WAIT):
        first = chat(api, kit, "Hi")
    sid = first.json()["sessionId"]
    counts = []
    for message in ("Do you integrate with Salesforce?", "Is there a free trial?",
                    "We need it this quarter", "Do you have an API?"):
        counts.append(_turn(api, kit, message, sid)[1])
    assert max(counts) <= CONTINUED_TURN + NO_WAIT, counts


def test_past_the_history_the_turn_reads_what_was_asked(api, kit):
    """Longer than the history the turn reads, a conversation's earlier questions are read
    apart (one statement more): the email is still asked once."""
    ask = phrase("en", "ask_email")
    first, _ = _turn(api, kit, "How much does it cost?")
    sid = first["sessionId"]
    assert ask in first["content"]
    counts = []
    for i in range(HISTORY_LIMIT // 2 + 2):
        reply, count = _turn(api, kit, ("Do you have an API?", "Is there a free trial?")[i % 2], sid)
        assert ask not in reply["content"], i
        counts.append(count)
    # Once the history no longer holds the whole conversation, one more statement, no more.
    assert counts[-1] == counts[0] + 1 <= CONTINUED_TURN + NO_WAIT + 1, counts


def _no_wait_statements(api, kit, message, session=None) -> list[int]:
    """The positions, among the turn's statements, of those that let a commit skip the disk,
    and the number of statements (last)."""
    with CaptureQueriesContext(connection) as captured:
        r = chat(api, kit, message, session=session)
    assert r.status_code == 200, r.content
    sql = [q["sql"] for q in captured.captured_queries]
    return [i for i, s in enumerate(sql) if "synchronous_commit" in s] + [len(sql)]


@pytest.mark.skipif(connection.vendor != "postgresql", reason="a PostgreSQL setting (CI runs "
                    "the suite on PostgreSQL too)")
def test_only_the_last_commit_of_a_turn_waits_for_the_disk_unless_emails_follow(api, kit):
    sid = chat(api, kit, "Hi").json()["sessionId"]
    *positions, total = _no_wait_statements(api, kit, "Do you have an API?", sid)
    assert len(positions) == 2  # open and apply; close, the last transaction, waits
    assert positions[-1] < total - 5
    # A handoff enqueues emails when apply commits: apply waits for the disk too.
    *positions, _ = _no_wait_statements(api, kit, "Can I talk to a person?", sid)
    assert len(positions) == 1
