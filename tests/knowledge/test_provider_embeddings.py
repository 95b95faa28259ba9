"""A tenant on its provider's embeddings (docs/knowledge.md, "The provider's embeddings"), against
the fake OpenAI-compatible server through the real openai client: indexing stores the local
model's vectors and the provider's, a question is embedded by the provider and compared with the
provider's vectors, and when the provider fails the local model's answer; a document indexed
while it was down gets the provider's vectors from the re-embedding."""

from __future__ import annotations

import logging
from collections import Counter

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from conversations.models import Message
from core import embeddings
from knowledge import provider_embeddings, retrieval, vectors
from knowledge.models import Chunk, ChunkVector
from knowledge.retrieval import retrieve
from knowledge.tasks import reembed_chunks
from tenants.services import tenant_set_agent
from tests.chat_helpers import chat
from tests.fakes.openai_server import EMBEDDING_DIMENSIONS, fake_embedding
from tests.knowledge_helpers import add_document

GUIDE = ("# Install\n\nPaste the script tag before the closing body tag.\n\n# Billing\n\n"
         "Invoices are sent on the first day of every month, in euros or dollars.")
RETENTION = ("# Cancellation\n\nAfter you cancel, your workspace stays readable for 90 days; "
             "then every conversation and lead is deleted for good.")
EMBEDDING_MODEL = "fake-embed-small"


@pytest.fixture
def on_provider(fake, kit):
    """``kit``'s tenant on the fake provider, with its embeddings for knowledge retrieval."""
    tenant_set_agent(tenant=kit.tenant, embeddings="provider", embedding_model=EMBEDDING_MODEL)
    vectors.cache.clear()
    return fake


def _provider_model_id(fake) -> str:
    return provider_embeddings.model_id(base_url=fake.base_url, model=EMBEDDING_MODEL)


def _models(document) -> Counter:
    return Counter(ChunkVector.objects.filter(chunk__document=document)
                   .values_list("model_id", flat=True))


def _last_turn() -> dict:
    return Message.objects.filter(role="assistant").order_by("-created_at", "-sequence").first().turn


def test_indexing_stores_the_local_and_the_providers_vectors(api, kit, on_provider):
    document = add_document(api, kit, "Guide", GUIDE)
    model_id = _provider_model_id(on_provider)
    assert _models(document) == {embeddings.MODEL_ID: document.chunk_count,
                                 model_id: document.chunk_count}
    # The provider's vectors as it returned them: its dimensions, by the byte length.
    rows = ChunkVector.objects.filter(chunk__document=document, model_id=model_id)
    assert {len(bytes(row.vector)) for row in rows} == {EMBEDDING_DIMENSIONS * 2}
    [request] = on_provider.embedding_requests()
    assert request["model"] == EMBEDDING_MODEL
    assert request["input"] == [vectors.embed_text(title="Guide", heading=c.heading, text=c.text)
                                for c in Chunk.objects.filter(document=document)]
    assert on_provider.headers[-1]["authorization"] == "Bearer sk-provider-secret"
    # The id says which server and model, never the key.
    assert model_id.startswith("provider:") and len(model_id) == len("provider:") + 16
    assert model_id != provider_embeddings.model_id(base_url=on_provider.base_url, model="other")


def test_a_question_is_compared_with_the_providers_vectors(api, kit, on_provider):
    add_document(api, kit, "Guide", GUIDE)
    question = "On which day of every month are invoices sent?"
    on_provider.requests.clear()
    [best, *_] = retrieve(tenant=kit.tenant, livemode=True, query=question)
    assert on_provider.embedded_texts() == [question]
    assert best.retrieval == retrieval.BY_PROVIDER and "Invoices are sent" in best.text
    # The cosine is the provider's (a hashed bag of words), not the local model's.
    chunk = vectors.embed_text(title="Guide", heading=best.heading, text=best.text)
    expected = float(fake_embedding(question) @ fake_embedding(chunk))
    assert best.similarity == pytest.approx(expected, abs=0.005)
    local = float(embeddings.encode_one(question) @ embeddings.encode_one(chunk))
    assert abs(local - expected) > 0.05


def test_a_chat_turn_retrieves_through_the_provider_and_records_it(api, kit, on_provider):
    add_document(api, kit, "Guide", GUIDE)
    on_provider.requests.clear()
    r = chat(api, kit, "When are invoices sent?")
    assert r.status_code == 200, r.content
    assert on_provider.embedded_texts() == ["When are invoices sent?"]
    [analysis] = on_provider.analysis_requests()
    assert "Invoices are sent on the first day" in analysis["messages"][1]["content"]
    assert _last_turn()["retrieval"] == "provider"


def test_the_provider_is_asked_before_the_turns_transaction(api, kit, on_provider, monkeypatch):
    """No lock of the turn is held while the provider embeds the question: the call is made
    outside the turn's transaction (here, inside only the test's own)."""
    add_document(api, kit, "Guide", GUIDE)
    depths = []
    encode = provider_embeddings.encode

    def observed(*args, **kwargs):
        depths.append(len(connection.atomic_blocks))
        return encode(*args, **kwargs)

    monkeypatch.setattr(provider_embeddings, "encode", observed)
    outside = len(connection.atomic_blocks)
    assert chat(api, kit, "When are invoices sent?").status_code == 200
    assert depths == [outside]


def test_a_turn_on_the_providers_embeddings_makes_as_many_statements(api, kit, on_provider):
    """The provider's matrix is read once and kept as the local model's is: a continued turn
    reads the tenant's vector version, and nothing more, whichever embeddings it compares."""
    add_document(api, kit, "Guide", GUIDE)

    def statements(message, session) -> int:
        with CaptureQueriesContext(connection) as captured:
            assert chat(api, kit, message, session=session).status_code == 200
        assert _last_turn().get("retrieval") == (
            "provider" if kit.tenant.agent_embeddings == "provider" else None)
        return len(captured.captured_queries)

    session = chat(api, kit, "Hi").json()["sessionId"]
    statements("When are invoices sent?", session)  # the matrix read into memory
    provider = statements("Are invoices sent in euros or dollars?", session)
    tenant_set_agent(tenant=kit.tenant, embeddings="local")
    statements("When are invoices sent?", session)
    assert statements("Are invoices sent in euros or dollars?", session) == provider


def test_the_provider_down_the_local_vectors_answer(api, kit, on_provider, caplog):
    add_document(api, kit, "Guide", GUIDE)
    on_provider.embeddings_fail_status = 503
    caplog.set_level(logging.WARNING)
    r = chat(api, kit, "When are invoices sent?")
    assert r.status_code == 200, r.content
    [analysis] = on_provider.analysis_requests()
    assert "Invoices are sent on the first day" in analysis["messages"][1]["content"]
    assert _last_turn()["retrieval"] == "local (provider failed)"
    [best, *_] = retrieve(tenant=kit.tenant, livemode=True, query="When are invoices sent?")
    assert best.retrieval == "local (provider failed)" and best.similarity is not None
    assert "HTTP 503" in caplog.text and "sk-provider-secret" not in caplog.text


def test_a_slow_provider_is_not_waited_for(api, kit, on_provider, settings):
    add_document(api, kit, "Guide", GUIDE)
    settings.KNOWLEDGE_PROVIDER_QUESTION_TIMEOUT_SECONDS = 0.3
    on_provider.embeddings_delay = 3
    [best, *_] = retrieve(tenant=kit.tenant, livemode=True, query="When are invoices sent?")
    assert best.retrieval == "local (provider failed)" and "Invoices" in best.text


def test_a_document_indexed_while_the_provider_was_down_is_completed_by_the_reembedding(
        api, kit, on_provider):
    first = add_document(api, kit, "Guide", GUIDE)
    on_provider.embeddings_fail_status = 500
    second = add_document(api, kit, "Retention", RETENTION)
    model_id = _provider_model_id(on_provider)
    assert second.status == "ready"
    assert _models(second) == {embeddings.MODEL_ID: second.chunk_count}
    on_provider.embeddings_fail_status = None
    question = "How long can I still read my workspace after I cancel?"
    # Until every chunk has the provider's vector, the local model's rank them all.
    [best, *_] = retrieve(tenant=kit.tenant, livemode=True, query=question)
    assert best.retrieval == "local (provider vectors pending)" and best.title == "Retention"

    assert reembed_chunks() == second.chunk_count
    assert _models(second) == {embeddings.MODEL_ID: second.chunk_count,
                               model_id: second.chunk_count}
    assert _models(first)[model_id] == first.chunk_count
    [best, *_] = retrieve(tenant=kit.tenant, livemode=True, query=question)
    assert best.retrieval == "provider" and best.title == "Retention"
    assert reembed_chunks() == 0


def test_a_failing_provider_is_asked_once_a_reembedding_run(api, kit, on_provider):
    on_provider.embeddings_fail_status = 500
    add_document(api, kit, "Guide", GUIDE)
    on_provider.requests.clear()
    assert reembed_chunks() == 0
    assert len(on_provider.embedding_requests()) == 1


def test_a_change_of_local_model_keeps_the_providers_vectors(api, kit, on_provider):
    document = add_document(api, kit, "Guide", GUIDE)
    ChunkVector.objects.filter(model_id=embeddings.MODEL_ID).update(model_id="an-older-model/1")
    assert reembed_chunks() == document.chunk_count
    assert _models(document) == {embeddings.MODEL_ID: document.chunk_count,
                                 _provider_model_id(on_provider): document.chunk_count}


def test_another_embedding_model_re_embeds_and_replaces_the_old_vectors(api, kit, on_provider):
    document = add_document(api, kit, "Guide", GUIDE)
    tenant_set_agent(tenant=kit.tenant, embedding_model="fake-embed-large")
    new_id = provider_embeddings.model_id(base_url=on_provider.base_url, model="fake-embed-large")
    [best, *_] = retrieve(tenant=kit.tenant, livemode=True, query="When are invoices sent?")
    assert best.retrieval == "local (provider vectors pending)"
    assert reembed_chunks() == document.chunk_count
    assert _models(document) == {embeddings.MODEL_ID: document.chunk_count,
                                 new_id: document.chunk_count}
    [best, *_] = retrieve(tenant=kit.tenant, livemode=True, query="When are invoices sent?")
    assert best.retrieval == "provider"


def test_the_builtin_agent_and_other_tenants_stay_on_the_local_model(api, kit, stranger,
                                                                    on_provider):
    # Provider embeddings need the openai provider: on builtin the choice waits, unused.
    tenant_set_agent(tenant=stranger.tenant, embeddings="provider", embedding_model=EMBEDDING_MODEL)
    add_document(api, stranger, "Guide", GUIDE)
    [best, *_] = retrieve(tenant=stranger.tenant, livemode=True, query="When are invoices sent?")
    assert best.retrieval is None and best.similarity is not None
    assert on_provider.embedding_requests() == []
    assert set(ChunkVector.objects.values_list("model_id", flat=True)) == {embeddings.MODEL_ID}


def test_the_providers_vectors_go_with_the_document(api, kit, on_provider):
    document = add_document(api, kit, "Guide", GUIDE)
    r = api.delete(f"/api/v1/knowledge-base/doc_{document.pk.hex}", headers=kit.auth("admin"))
    assert r.status_code in (200, 204), r.text
    assert not ChunkVector.objects.exists()
    assert retrieve(tenant=kit.tenant, livemode=True, query="When are invoices sent?") == []
