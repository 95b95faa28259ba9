"""While a person has the conversation the agent stays out of it (docs/conversations.md, "While a
person has the conversation"): before that person joins, the visitor is told once that someone
will reply (again only after ``NOTICE_REPEAT`` without a notice or a person's reply); once they
joined, nothing at all: no assistant message, no ``message.sent``. The visitor's messages are
stored and announced (``message.received``) all along, and every chat response stays valid for
the specification's schema (the ``api`` client checks each one), on both surfaces, whole and
streamed."""

from __future__ import annotations

import json

import pytest

from agent.phrases import phrase
from conversations.models import Conversation, Message
from conversations.services import conversation_reply_as_human, conversation_take_over
from conversations.services.turn import NOTICE_REPEAT
from tests.chat_helpers import chat, events
from tests.factories import UserFactory

NOTICE = phrase("en", "handoff_active")


@pytest.fixture
def handed_off(api, kit):
    """A conversation handed off to an available rep who has not joined it yet."""
    UserFactory(tenant=kit.tenant, available=True)
    sid = chat(api, kit, "I want to talk to a human").json()["sessionId"]
    conversation = Conversation.objects.get()
    assert conversation.status == "handed_off" and conversation.joined_at is None
    return conversation, sid


def _sent(kit) -> int:
    return len(events(kit, "message.sent"))


def _ago(conversation: Conversation, delta) -> None:
    """The last notice (or a person's reply) as if it was ``delta`` ago."""
    Conversation.objects.filter(pk=conversation.pk).update(
        handoff_notice_at=Conversation.objects.get(pk=conversation.pk).handoff_notice_at - delta)


def _stream(api, kit, message, *, session) -> list[tuple[str, dict]]:
    r = api.post("/api/v1/chat", json={"message": message, "visitorId": "visitor-1",
                                       "sessionId": session, "stream": True},
                 headers={**kit.auth("write"), "Accept": "text/event-stream"})
    assert r.status_code == 200, r.text
    frames, name = [], None
    for line in r.text.splitlines():
        if line.startswith("event: "):
            name = line[len("event: "):]
        elif line.startswith("data: "):
            frames.append((name, json.loads(line[len("data: "):])))
    return frames


def _silent(data: dict, conversation: Conversation, text: str, *, legacy: bool = False) -> None:
    """A response that says nothing: the visitor's own stored message is what it names."""
    stored = Message.objects.filter(conversation=conversation).order_by("sequence").last()
    assert stored.role == "user" and stored.content == text
    assert data["id"] == (str(stored.pk) if legacy else f"msg_{stored.pk.hex}")
    assert data["content"] == "" and data["suggestedActions"] == []
    assert data["role"] == "assistant" and data["intent"] and "handoff" not in data


def test_the_notice_is_given_once_then_again_only_after_a_long_silence(api, kit, handed_off):
    conversation, sid = handed_off
    sent = _sent(kit)
    first = chat(api, kit, "Hello? Anyone there?", session=sid).json()
    assert first["content"] == NOTICE and _sent(kit) == sent + 1

    for text in ("Still waiting", "Are you there?"):
        r = chat(api, kit, text, session=sid)
        assert r.status_code == 200, r.text
        _silent(r.json(), conversation, text)
    assert _sent(kit) == sent + 1  # no reply, no message.sent
    received = [e.facts["message"]["content"] for e in events(kit, "message.received")]
    assert received[-2:] == ["Still waiting", "Are you there?"]
    assert Message.objects.filter(conversation=conversation, role="assistant").count() == 2

    _ago(conversation, NOTICE_REPEAT - NOTICE_REPEAT / 10)
    _silent(chat(api, kit, "Hello?", session=sid).json(), conversation, "Hello?")
    _ago(conversation, NOTICE_REPEAT)
    assert chat(api, kit, "Hello??", session=sid).json()["content"] == NOTICE
    assert _sent(kit) == sent + 2


def test_once_the_person_joined_the_agent_says_nothing_at_all(api, kit, handed_off):
    conversation, sid = handed_off
    conversation_reply_as_human(conversation=conversation, author=conversation.assigned_to,
                                content="Hi, I'm here.")
    sent = _sent(kit)
    for text in ("Great, thanks", "One more question"):
        _silent(chat(api, kit, text, session=sid).json(), conversation, text)
    # Long after the person's last reply too: they have the conversation.
    _ago(conversation, NOTICE_REPEAT * 3)
    _silent(chat(api, kit, "Hello?", session=sid).json(), conversation, "Hello?")
    assert _sent(kit) == sent
    assert Message.objects.filter(conversation=conversation, role="assistant",
                                  author__isnull=True).count() == 1  # the handoff's reply

    frames = _stream(api, kit, "Streamed while you type", session=sid)
    assert [name for name, _ in frames] == ["message_start", "message_end"]
    stored = Message.objects.filter(conversation=conversation).order_by("sequence").last()
    assert frames[0][1]["id"] == f"msg_{stored.pk.hex}" and stored.role == "user"
    assert frames[1][1]["suggestedActions"] == [] and frames[1][1]["intent"]
    assert _sent(kit) == sent


def test_a_take_over_joins_at_once_and_the_widget_gets_no_reply(api, kit):
    rep = UserFactory(tenant=kit.tenant)
    r = api.post(f"/api/chat?tenant={kit.tenant.public_id}",
                 json={"message": "Hi", "visitorId": "w"})
    conversation = Conversation.objects.get()
    conversation_take_over(conversation=conversation, user=rep)
    sent = _sent(kit)
    r = api.post(f"/api/chat?tenant={kit.tenant.public_id}",
                 json={"message": "Is this a person now?", "visitorId": "w",
                       "sessionId": r.json()["sessionId"]})
    assert r.status_code == 200, r.text
    _silent(r.json(), conversation, "Is this a person now?", legacy=True)
    assert r.json()["events"] == []
    frames = []
    r = api.post(f"/api/chat?tenant={kit.tenant.public_id}",
                 json={"message": "And streamed?", "visitorId": "w", "stream": True,
                       "sessionId": str(conversation.pk)},
                 headers={"Accept": "text/event-stream"})
    frames = [line for line in r.text.splitlines() if line.startswith("event: ")]
    assert frames == ["event: message_start", "event: message_end"]
    assert _sent(kit) == sent
