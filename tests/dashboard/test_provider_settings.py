"""The agent's provider in the dashboard (docs/agent.md, "When the provider fails"): saving an
OpenAI-compatible provider asks it for one token first and refuses, saying why beside the field,
settings it does not answer with; "Test connection" asks without saving; the home page shows how
the provider answered lately. Against the fake OpenAI-compatible server."""

from __future__ import annotations

from tenants.models import ProviderHealth
from tests.chat_helpers import chat
from tests.dashboard.client import signed_in
from tests.dashboard.html import errors_beside

UNREACHABLE = "http://127.0.0.1:9/v1"  # nothing listens on the discard port


def _agent(base_url, **extra) -> dict:
    return {"provider": "openai", "model": "fake-model", "base_url": base_url,
            "api_key": "sk-provider-secret", "embeddings": "local", **extra}


def test_an_unreachable_provider_is_not_saved_and_the_form_says_why(kit, manager, fake_server):
    client = signed_in(manager)
    r = client.post("/dashboard/settings/agent/", _agent(UNREACHABLE))
    assert r.status_code == 400
    page = r.content.decode()
    assert "Not saved: the provider does not answer." in page
    assert errors_beside(r.content, "id_base_url") == [
        f"{UNREACHABLE} could not be reached (ConnectError)."]
    assert f'value="{UNREACHABLE}"' in page  # what was typed stays in the form
    kit.tenant.refresh_from_db()
    assert kit.tenant.agent_provider == "builtin" and not kit.tenant.has_agent_api_key


def test_a_refused_key_or_a_missing_model_is_named(kit, manager, fake_server):
    fake_server.reset()
    client = signed_in(manager)
    fake_server.fail_status = 401
    r = client.post("/dashboard/settings/agent/", _agent(fake_server.base_url))
    assert errors_beside(r.content, "id_api_key") == [
        f"{fake_server.base_url} refused the API key (HTTP 401)."]
    fake_server.fail_status = 404
    r = client.post("/dashboard/settings/agent/", _agent(fake_server.base_url))
    assert "has no model 'fake-model'" in errors_beside(r.content, "id_model")[0]
    fake_server.reset()
    r = client.post("/dashboard/settings/agent/", _agent(fake_server.base_url, api_key=""))
    assert errors_beside(r.content, "id_api_key")[0].startswith("The provider needs an API key")
    kit.tenant.refresh_from_db()
    assert kit.tenant.agent_provider == "builtin"


def test_test_connection_asks_without_saving(kit, manager, fake_server):
    fake_server.reset()
    client = signed_in(manager)
    r = client.post("/dashboard/settings/agent/", {**_agent(UNREACHABLE), "test": "1"})
    assert r.status_code == 400 and "The provider does not answer" in r.content.decode()
    r = client.post("/dashboard/settings/agent/", {**_agent(fake_server.base_url), "test": "1"})
    assert r.status_code == 200
    assert "Connection tested: the provider answered" in r.content.decode()
    asked = fake_server.requests[-1]
    assert asked["model"] == "fake-model" and asked["max_tokens"] == 1
    assert fake_server.headers[-1]["authorization"] == "Bearer sk-provider-secret"
    kit.tenant.refresh_from_db()
    assert kit.tenant.agent_provider == "builtin"  # nothing saved
    assert 'name="test"' in client.get("/dashboard/settings/").content.decode()


def test_a_provider_that_answers_is_saved_and_its_health_shows_on_the_home_page(
        api, kit, manager, fake_server, settings):
    settings.AGENT_MAX_RETRIES = 0
    fake_server.reset()
    client = signed_in(manager)
    r = client.post("/dashboard/settings/agent/", _agent(fake_server.base_url), follow=True)
    assert "Agent settings saved: the provider answered." in r.content.decode()
    kit.tenant.refresh_from_db()
    assert kit.tenant.agent_provider == "openai" and kit.tenant.agent_api_key == "sk-provider-secret"
    assert ProviderHealth.objects.get(tenant=kit.tenant).last_ok_at is not None
    home = client.get("/dashboard/").content.decode()
    assert 'id="provider-health"' in home and "answering" in home

    fake_server.fail_status = 500
    assert chat(api, kit, "Hi").status_code == 200  # the builtin agent answered
    home = client.get("/dashboard/").content.decode()
    section = home.split('id="provider-health"', 1)[1].split("</section>", 1)[0]
    assert "failing" in section and "Last failure" in section
    assert "The language-model provider answered with an error (HTTP 500)." in section
    assert "Visitors get the built-in agent's replies meanwhile." in section
    fake_server.reset()


def test_the_builtin_agent_has_no_health_to_show(kit, manager):
    assert 'id="provider-health"' not in signed_in(manager).get("/dashboard/").content.decode()
