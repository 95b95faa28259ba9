"""A message is inserted with as few index entries as its reads need: lookups by conversation
(the history, the cascade of a deleted conversation) go through ``message_sequence``, and there is
no second index on the conversation alone (docs/performance.md, "Chat")."""

from __future__ import annotations

from django.db import connection
from django.test.utils import CaptureQueriesContext

from conversations.models import Conversation, Message
from tests.chat_helpers import chat


def _indexes() -> dict[str, list[str]]:
    with connection.cursor() as cursor:
        constraints = connection.introspection.get_constraints(cursor, Message._meta.db_table)
    return {name: info["columns"] for name, info in constraints.items()
            if (info["index"] or info["unique"]) and not info["primary_key"]}


def _plan(sql: str, params) -> str:
    with connection.cursor() as cursor:
        # A test table is tiny: without this the planner would rather scan it.
        if connection.vendor == "postgresql":
            cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute(("EXPLAIN " if connection.vendor == "postgresql" else "EXPLAIN QUERY PLAN ")
                       + sql, params)
        return "\n".join(str(row) for row in cursor.fetchall())


def test_one_index_serves_the_conversation(api, kit):
    assert ["conversation_id"] not in _indexes().values()
    assert ["conversation_id", "sequence"] in _indexes().values()
    sid = chat(api, kit, "Hi").json()["sessionId"]
    conversation = Conversation.objects.get()
    with CaptureQueriesContext(connection) as captured:
        chat(api, kit, "How much does it cost?", session=sid)
    history = next(q["sql"] for q in captured.captured_queries
                   if 'FROM "conversations_message"' in q["sql"] and "ORDER BY" in q["sql"])
    assert "message_sequence" in _plan(history, None) or "autoindex" in _plan(history, None)
    deletion = Message.objects.filter(conversation=conversation).values("id").query
    sql, params = deletion.sql_with_params()
    plan = _plan(sql, params)
    assert "message_sequence" in plan or "autoindex" in plan, plan
