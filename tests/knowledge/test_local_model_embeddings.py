"""A tenant on its provider's embeddings with a real server: llama.cpp's OpenAI-compatible server
(tests/local_model.py) started with ``--embedding``, serving SmolLM2-135M's mean-pooled
embeddings and its chat from one process. The passages' provider vectors are the server's, and a
chat turn's retrieval compares them (docs/knowledge.md, "The provider's embeddings")."""

from __future__ import annotations

import numpy as np
import openai
import pytest

from conversations.models import Message
from core import embeddings
from knowledge import provider_embeddings, vectors
from knowledge.models import Chunk, ChunkVector
from knowledge.retrieval import retrieve
from tenants.services import tenant_set_agent, tenant_set_agent_limits
from tests.chat_helpers import chat
from tests.knowledge_helpers import add_document
from tests.local_model import MODEL

pytestmark = [pytest.mark.live, pytest.mark.local_model]

INVOICES = "Invoices are sent on the first day of every month, in euros or dollars."
INSTALL = "Paste the script tag before the closing body tag of every page of your site."


@pytest.fixture
def smol(local_embedding_model, kit, settings):
    """``kit``'s tenant on the OpenAI provider and its embeddings, both served by llama.cpp."""
    settings.AGENT_MAX_RETRIES = 0
    settings.AGENT_TIMEOUT_SECONDS = 300  # the turn's own deadline governs
    settings.KNOWLEDGE_PROVIDER_QUESTION_TIMEOUT_SECONDS = 60  # a busy test machine
    tenant_set_agent(tenant=kit.tenant, provider="openai", model=MODEL, api_key="sk-local-model",
                     base_url=local_embedding_model, embeddings="provider", embedding_model=MODEL)
    tenant_set_agent_limits(tenant=kit.tenant, max_reply_tokens=32, max_reply_chars=200,
                            turn_seconds=120)
    vectors.cache.clear()
    return local_embedding_model


def test_the_providers_vectors_are_the_servers_and_rank_the_passages(api, kit, smol):
    billing = add_document(api, kit, "Billing", INVOICES)
    add_document(api, kit, "Installing", INSTALL)
    model_id = provider_embeddings.model_id(base_url=smol, model=MODEL)
    [chunk] = Chunk.objects.filter(document=billing)
    stored = embeddings.from_bytes(
        ChunkVector.objects.get(chunk=chunk, model_id=model_id).vector).astype(np.float32)
    # What the server itself answers for the passage, asked apart.
    client = openai.OpenAI(api_key="sk-local-model", base_url=smol)
    [item] = client.embeddings.create(
        model=MODEL, input=[vectors.embed_text(title="Billing", heading=chunk.heading,
                                               text=chunk.text)]).data
    served = np.asarray(item.embedding, dtype=np.float32)
    assert stored.shape == served.shape and len(served) != embeddings.DIMENSIONS  # 576, SmolLM2's
    assert float(stored @ (served / np.linalg.norm(served))) > 0.999
    assert ChunkVector.objects.filter(model_id=model_id).count() == 2

    [best, *_] = retrieve(tenant=kit.tenant, livemode=True, query="When are invoices sent?")
    assert best.retrieval == "provider" and best.title == "Billing"
    question = client.embeddings.create(model=MODEL, input=["When are invoices sent?"]).data[0]
    question_vector = np.asarray(question.embedding, dtype=np.float32)
    assert best.similarity == pytest.approx(
        float(stored @ question_vector / np.linalg.norm(question_vector)), abs=0.01)

    r = chat(api, kit, "When are invoices sent?")
    assert r.status_code == 200, r.content
    turn = Message.objects.filter(role="assistant").order_by("-created_at").first().turn
    assert turn["retrieval"] == "provider"
