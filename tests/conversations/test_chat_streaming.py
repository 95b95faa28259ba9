"""Streaming chat through a real daphne process, with the OpenAI provider talking to a fake
OpenAI-compatible server: deltas arrive as the model produces them, errors midway become an
``error`` event, and a client that goes away stops generation with the partial reply kept."""

from __future__ import annotations

import json
import time

import httpx
import pytest

from tests.fakes.openai_server import FakeOpenAI
from tests.live import daphne, manage

pytestmark = pytest.mark.live  # daphne

EMBEDDED = {"DATABASE_URL": None, "REDIS_URL": None, "DEBUG": "1", "SECRET_KEY": None,
            "ALLOWED_HOSTS": None, "V1_REQUIRE_HTTPS": "0"}


@pytest.fixture(scope="module")
def fake():
    server = FakeOpenAI()
    yield server
    server.close()


@pytest.fixture(scope="module")
def stack(fake, tmp_path_factory):
    """A migrated embedded-default service with one OpenAI-provider tenant, served by daphne."""
    env = {**EMBEDDED, "VAR_DIR": str(tmp_path_factory.mktemp("var")), "AGENT_MAX_RETRIES": "0",
           "AGENT_TIMEOUT_SECONDS": "5"}
    manage("migrate", "--noinput", env=env)
    created = json.loads(manage("create_tenant", "Streamers", "--agent", "openai", "--json", env=env))
    manage("configure_agent", created["tenant"]["id"], "--api-key", "sk-fake-provider-key",
           "--base-url", fake.base_url, "--model", "fake-model", env=env)
    with daphne(env) as base:
        yield {"base": base, "key": created["keys"]["live"]["write"],
               "public_id": created["tenant"]["publicId"]}


@pytest.fixture(autouse=True)
def _fresh(fake):
    fake.reset()


def read_events(response: httpx.Response, started: float):
    """(event, data, seconds since start) for each SSE frame, as they arrive."""
    name = None
    for line in response.iter_lines():
        if line.startswith("event: "):
            name = line[len("event: "):]
        elif line.startswith("data: "):
            yield name, json.loads(line[len("data: "):]), time.monotonic() - started


def stream(stack, message, accept: str = "text/event-stream", **extra):
    return httpx.stream(
        "POST", f"{stack['base']}/api/v1/chat", timeout=30,
        headers={"Authorization": f"Bearer {stack['key']}", "Accept": accept},
        json={"message": message, "visitorId": "streamer", "stream": True, **extra},
    )


def test_deltas_arrive_before_the_model_finishes(stack, fake):
    fake.analysis = {"intent": "product_question", "confidence": 0.8}
    fake.reply = "Our widget installs with one script tag and answers in real time."
    fake.chunk_size, fake.chunk_delay = 6, 0.25  # ~11 chunks, ~2.7 s in all
    started = time.monotonic()
    with stream(stack, "How does the widget work?") as r:
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("text/event-stream")
        assert r.headers["x-accel-buffering"] == "no"
        assert "no-cache" in r.headers["cache-control"]
        frames = list(read_events(r, started))
    names = [f[0] for f in frames]
    assert names[0] == "message_start" and names[-1] == "message_end"
    assert set(names[1:-1]) == {"content_delta"} and len(names) > 5
    start = frames[0][1]
    assert start["id"].startswith("msg_") and start["sessionId"].startswith("sess_")
    first_delta_at = frames[1][2]
    end_at = frames[-1][2]
    assert end_at - first_delta_at > 1.5, "the deltas were buffered"
    assert "".join(f[1]["delta"] for f in frames if f[0] == "content_delta") == fake.reply
    end = frames[-1][1]
    assert end["intent"] == "product_question" and end["confidence"] == 0.8
    assert isinstance(end["leadScore"], int)

    # The streamed reply is stored whole.
    session = httpx.get(f"{stack['base']}/api/v1/chat/sessions/{start['sessionId']}",
                        headers={"Authorization": f"Bearer {stack['key']}"}).json()
    assert session["messages"][-1]["content"] == fake.reply
    assert session["messages"][-1]["id"] == start["id"]


def test_a_failure_midway_is_an_error_event_and_the_partial_reply_is_kept(stack, fake):
    fake.reply = "This reply will be cut short by a broken connection to the provider."
    fake.chunk_size, fake.break_stream_after = 5, 3
    with stream(stack, "Tell me more") as r:
        frames = list(read_events(r, time.monotonic()))
    names = [f[0] for f in frames]
    assert names[0] == "message_start" and names[-1] == "error"
    assert frames[-1][1]["code"] == "bad_gateway" and frames[-1][1]["message"]
    partial = "".join(f[1]["delta"] for f in frames if f[0] == "content_delta")
    session = httpx.get(f"{stack['base']}/api/v1/chat/sessions/{frames[0][1]['sessionId']}",
                        headers={"Authorization": f"Bearer {stack['key']}"}).json()
    stored = session["messages"][-1]
    assert stored["role"] == "assistant" and stored["content"] == partial != fake.reply


# ``stream: true`` alone asks for a stream; the server takes another path for requests that
# also say ``Accept: text/event-stream`` (config/handlers.py): both must notice a departure.
@pytest.mark.parametrize("accept", ["text/event-stream", "*/*"])
def test_a_client_that_disconnects_stops_generation_and_keeps_what_was_produced(stack, fake,
                                                                                accept):
    fake.reply = "word " * 200
    fake.chunk_size, fake.chunk_delay = 5, 0.05  # ~10 s if read to the end
    started = time.monotonic()
    with stream(stack, "Write me a long answer", accept=accept) as r:
        frames = []
        for frame in read_events(r, started):
            frames.append(frame)
            if sum(f[0] == "content_delta" for f in frames) >= 3:
                break
    session_id = frames[0][1]["sessionId"]
    # The provider's stream is abandoned: far fewer chunks than the whole reply were sent.
    deadline = time.monotonic() + 5
    stored = None
    while time.monotonic() < deadline:
        session = httpx.get(f"{stack['base']}/api/v1/chat/sessions/{session_id}",
                            headers={"Authorization": f"Bearer {stack['key']}"}).json()
        if session["messages"][-1]["role"] == "assistant":
            stored = session["messages"][-1]
            break
        time.sleep(0.2)
    assert stored is not None, "the partial reply was not saved"
    assert 0 < len(stored["content"]) < len(fake.reply)
    assert time.monotonic() - started < 8


def test_the_legacy_public_chat_streams_the_same_events(stack, fake):
    fake.reply = "Hello from the widget."
    with httpx.stream("POST", f"{stack['base']}/api/chat?tenant={stack['public_id']}", timeout=30,
                      headers={"Accept": "text/event-stream"},
                      json={"message": "Hi", "visitorId": "w1", "stream": True}) as r:
        frames = list(read_events(r, time.monotonic()))
    names = [f[0] for f in frames]
    assert names[0] == "message_start" and names[-1] == "message_end"
    assert len(frames[0][1]["sessionId"]) == 36  # the legacy surface shows UUIDs
    assert frames[-1][1]["events"] == []


def test_a_bad_session_is_a_json_error_before_any_stream(stack, fake):
    with stream(stack, "Hi", sessionId="sess_" + "0" * 32) as r:
        r.read()
    assert r.status_code == 404
    assert r.headers["content-type"].startswith("application/json")
    assert r.json()["error"]["code"] == "not_found"
    assert fake.requests == []
