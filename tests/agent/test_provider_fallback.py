"""A language-model provider that fails leaves no visitor without a reply (docs/agent.md, "When
the provider fails"): the builtin agent answers the turn instead, on both surfaces, whole and
streamed; the assistant message records why, and the tenant's provider health (the dashboard's
home) keeps the last failure and the last answer. Against the fake OpenAI-compatible server."""

from __future__ import annotations

import json

from agent.phrases import phrase
from conversations.models import Message
from tenants.models import ProviderHealth
from tenants.services import tenant_set_agent
from tests.chat_helpers import chat

GREETING = phrase("en", "greeting", tenant="Acme Inc")
ERROR_500 = "The language-model provider answered with an error (HTTP 500)."


def _reply() -> Message:
    return Message.objects.filter(role="assistant").latest("created_at")


def _health(kit) -> ProviderHealth:
    return ProviderHealth.objects.get(tenant=kit.tenant)


def _streamed(api, url, body, headers) -> list[tuple[str, dict]]:
    r = api.post(url, json={**body, "stream": True},
                 headers={**headers, "Accept": "text/event-stream"})
    assert r.status_code == 200, r.text
    frames, name = [], None
    for line in r.text.splitlines():
        if line.startswith("event: "):
            name = line[len("event: "):]
        elif line.startswith("data: "):
            frames.append((name, json.loads(line[len("data: "):])))
    return frames


def test_a_failing_provider_is_answered_by_the_builtin_agent_and_recorded(api, kit, fake):
    fake.fail_status = 500
    r = chat(api, kit, "Hi")
    assert r.status_code == 200, r.text
    assert r.json()["content"] == GREETING and r.json()["intent"] == "greeting"
    turn = _reply().turn
    assert turn["analysis"] == "fallback (provider failed)"
    assert turn["reply"] == "builtin (provider failed)"
    assert turn["provider_failure"] == ERROR_500
    assert len(fake.requests) == 1  # the analysis failed: the reply asks no failing provider
    health = _health(kit)
    assert health.failing and health.last_failure == ERROR_500 and health.last_ok_at is None

    # The widget's surface, whole and streamed.
    url = f"/api/chat?tenant={kit.tenant.public_id}"
    r = api.post(url, json={"message": "Hi", "visitorId": "w"})
    assert r.status_code == 200 and r.json()["content"] == GREETING
    frames = _streamed(api, url, {"message": "Hi", "visitorId": "w2"}, {})
    assert [n for n, _ in frames if n != "content_delta"] == ["message_start", "message_end"]
    assert "".join(d["delta"] for n, d in frames if n == "content_delta") == GREETING

    # It answers again: the health says so.
    fake.fail_status = None
    r = chat(api, kit, "Hi", visitor="later")
    assert _reply().turn["reply"] == "openai" and "provider_failure" not in _reply().turn
    health = _health(kit)
    assert not health.failing and health.last_ok_at > health.last_failure_at


def test_an_unreachable_base_url_is_answered_at_once(api, kit, fake):
    tenant_set_agent(tenant=kit.tenant, base_url="http://127.0.0.1:9/v1")  # nothing listens
    frames = _streamed(api, "/api/v1/chat", {"message": "Hi", "visitorId": "v"},
                       kit.auth("write"))
    assert frames[-1][0] == "message_end"
    assert "".join(d["delta"] for n, d in frames if n == "content_delta") == GREETING
    assert _health(kit).last_failure == "The language-model provider could not be reached."


def test_a_reply_that_fails_before_a_word_is_the_builtin_agents(api, kit, fake):
    fake.analysis = {"intent": "greeting", "confidence": 0.9}
    fake.break_stream_after = 0  # the analysis answers; the reply's stream breaks at once
    for stream in (False, True):
        if stream:
            frames = _streamed(api, "/api/v1/chat", {"message": "Hello", "visitorId": "s"},
                               kit.auth("write"))
            assert frames[-1][0] == "message_end"
            content = "".join(d["delta"] for n, d in frames if n == "content_delta")
        else:
            content = chat(api, kit, "Hello").json()["content"]
        assert content == GREETING
        turn = _reply().turn
        assert turn["analysis"] == "model" and turn["reply"] == "builtin (provider failed)"
        assert turn["provider_failure"] == "The language-model provider could not be reached."
    assert _health(kit).failing


def test_the_health_is_written_only_when_it_has_news(api, kit, fake,
                                                     django_assert_num_queries):
    from datetime import timedelta

    from django.utils import timezone

    from tenants.services import provider_health_record

    now = timezone.now()
    provider_health_record(tenant_id=kit.tenant.pk, at=now)
    # Answered again a moment later: an UPDATE that writes nothing, and an INSERT that does
    # nothing; no read.
    with django_assert_num_queries(2):
        provider_health_record(tenant_id=kit.tenant.pk, at=now)
    assert _health(kit).last_ok_at == now
    provider_health_record(tenant_id=kit.tenant.pk, at=now + timedelta(seconds=1),
                           failure="down")
    assert _health(kit).failing
    # A new provider setting starts afresh.
    tenant_set_agent(tenant=kit.tenant, model="another-model")
    assert not ProviderHealth.objects.filter(tenant=kit.tenant).exists()
