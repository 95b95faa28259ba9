"""The OpenAI provider keeps its client per event loop: under daphne (one long-lived loop) every
turn reuses the open connection to the model's API, and its TLS session, instead of a new
handshake per turn."""

from __future__ import annotations

import pytest

from tenants.services import tenant_set_agent
from tests.factories import make_tenant
from tests.fakes.openai_server import FakeOpenAI
from tests.loop_client import LoopClient

pytestmark = pytest.mark.live  # the fake model server


@pytest.fixture
def server():
    fake = FakeOpenAI()
    yield fake
    fake.close()


def _chat(client: LoopClient, kit, i: int) -> None:
    r = client.post("/api/v1/chat", json={"message": "Hi", "visitorId": f"v{i}"},
                    headers=kit.auth("write"))
    assert r.status_code == 200, r.text


def test_turns_on_one_event_loop_share_one_connection(transactional_db, server, settings):
    settings.AGENT_MAX_RETRIES = 0
    kit = make_tenant("Keepalive Inc", plan="enterprise")
    tenant_set_agent(tenant=kit.tenant, provider="openai", model="m", api_key="sk-one",
                     base_url=server.base_url)
    with LoopClient() as client:
        for i in range(3):
            _chat(client, kit, i)
    assert len(server.requests) == 6  # an analysis and a reply per turn
    assert len(set(server.peers)) == 1


def test_another_key_gets_a_client_of_its_own(transactional_db, server, settings):
    settings.AGENT_MAX_RETRIES = 0
    kit = make_tenant("Keepalive Inc", plan="enterprise")
    with LoopClient() as client:
        for i, key in enumerate(["sk-one", "sk-two"]):
            tenant_set_agent(tenant=kit.tenant, provider="openai", model="m", api_key=key,
                             base_url=server.base_url)
            _chat(client, kit, i)
    assert [h["authorization"] for h in server.headers] == ["Bearer sk-one"] * 2 + [
        "Bearer sk-two"] * 2
    assert len(set(server.peers)) == 2
