"""Whose embeddings a tenant's knowledge retrieval compares (docs/knowledge.md, "The provider's
embeddings"): set with ``manage.py configure_agent`` and in the dashboard's agent settings, the
local model by default, the provider's only with a model named and on the openai provider."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from tests.dashboard.client import signed_in
from tests.dashboard.html import errors_beside, value_of


def _configure(kit, *args) -> dict:
    out = StringIO()
    call_command("configure_agent", kit.tenant.public_id, *args, "--json", stdout=out)
    return json.loads(out.getvalue())


def test_the_local_model_is_the_default(kit):
    summary = _configure(kit)
    assert (summary["embeddings"], summary["embeddingModel"], summary["providerEmbeddings"]) == (
        "local", None, False)


def test_configure_agent_sets_the_providers_embeddings(kit):
    summary = _configure(kit, "--provider", "openai", "--api-key", "sk-provider-secret",
                         "--embeddings", "provider", "--embedding-model", "text-embedding-3-small")
    assert summary["embeddings"] == "provider" and summary["providerEmbeddings"] is True
    assert summary["embeddingModel"] == "text-embedding-3-small"
    kit.tenant.refresh_from_db()
    assert kit.tenant.uses_provider_embeddings
    # Back on the builtin agent the choice is kept but unused, and the summary says so.
    out = StringIO()
    call_command("configure_agent", kit.tenant.public_id, "--provider", "builtin", stdout=out)
    assert "(unused: needs the openai provider and a key)" in out.getvalue()
    kit.tenant.refresh_from_db()
    assert kit.tenant.agent_embeddings == "provider" and not kit.tenant.uses_provider_embeddings
    summary = _configure(kit, "--embeddings", "local")
    assert summary["embeddings"] == "local" and summary["providerEmbeddings"] is False


def test_the_providers_embeddings_need_a_model(kit):
    with pytest.raises(CommandError, match="embedding_model"):
        _configure(kit, "--provider", "openai", "--embeddings", "provider")
    kit.tenant.refresh_from_db()
    assert kit.tenant.agent_embeddings == "local"


def test_the_dashboard_sets_them_and_refuses_a_choice_without_a_model(kit, manager, fake_server):
    fake_server.reset()
    client = signed_in(manager)
    r = client.post("/dashboard/settings/agent/", {
        "provider": "openai", "model": "gpt-4o-mini", "base_url": "", "embeddings": "provider",
        "embedding_model": ""})
    assert r.status_code == 400
    assert errors_beside(r.content, "id_embedding_model") == [
        "The model the provider's /v1/embeddings takes, e.g. text-embedding-3-small."]
    kit.tenant.refresh_from_db()
    assert kit.tenant.agent_embeddings == "local"

    r = client.post("/dashboard/settings/agent/", {
        "provider": "openai", "model": "gpt-4o-mini", "base_url": fake_server.base_url,
        "api_key": "sk-x", "embeddings": "provider", "embedding_model": "text-embedding-3-small"})
    assert r.status_code == 302
    kit.tenant.refresh_from_db()
    assert kit.tenant.uses_provider_embeddings
    assert kit.tenant.agent_embedding_model == "text-embedding-3-small"
    page = client.get("/dashboard/settings/").content
    assert value_of(page, "id_embedding_model") == "text-embedding-3-small"
    assert b'<option value="provider" selected>' in page
