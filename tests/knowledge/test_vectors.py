"""The knowledge base's vectors (docs/knowledge.md, "Hybrid retrieval"): written with the chunks,
gone with the document, re-embedded after a change of model, and the model loaded with no
network at all."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from core import embeddings
from knowledge import services, vectors
from knowledge.models import ChunkVector, VectorSet
from knowledge.retrieval import retrieve
from knowledge.tasks import reembed_chunks
from tests.knowledge_helpers import V1, add_document

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ("# Install\n\nPaste the script tag before the closing body tag.\n\n# Billing\n\n"
         "Invoices are sent on the first day of every month, in euros or dollars.")


def test_indexing_stores_one_vector_per_chunk_by_the_current_model(api, kit):
    document = add_document(api, kit, "Guide", GUIDE)
    rows = list(ChunkVector.objects.filter(chunk__document=document))
    assert len(rows) == document.chunk_count >= 1
    assert {row.model_id for row in rows} == {embeddings.MODEL_ID}
    assert {(row.tenant_id, row.livemode) for row in rows} == {(kit.tenant.pk, True)}
    assert all(len(bytes(row.vector)) == embeddings.DIMENSIONS * 2 for row in rows)
    assert VectorSet.objects.get(tenant=kit.tenant, livemode=True).version >= 1


def test_deleting_a_document_removes_its_vectors_at_once(api, kit):
    document = add_document(api, kit, "Guide", GUIDE)
    assert retrieve(tenant=kit.tenant, livemode=True, query="when do invoices arrive?")
    before = vectors.version(tenant_id=kit.tenant.pk, livemode=True)
    r = api.delete(f"{V1}/doc_{document.pk.hex}", headers=kit.auth("admin"))
    assert r.status_code in (200, 204), r.text
    assert not ChunkVector.objects.filter(tenant=kit.tenant).exists()
    # The process's copy in memory is stale from this commit on, and is not used.
    assert vectors.version(tenant_id=kit.tenant.pk, livemode=True) > before
    assert retrieve(tenant=kit.tenant, livemode=True, query="when do invoices arrive?") == []


def test_another_tenant_and_the_other_mode_never_see_the_vectors(api, kit, stranger):
    add_document(api, kit, "Guide", GUIDE)
    question = "when do invoices arrive?"
    assert retrieve(tenant=kit.tenant, livemode=True, query=question)
    assert retrieve(tenant=stranger.tenant, livemode=True, query=question) == []
    assert retrieve(tenant=kit.tenant, livemode=False, query=question) == []


def test_a_change_of_model_re_embeds_in_the_background_and_never_mixes_spaces(api, kit, monkeypatch):
    document = add_document(api, kit, "Guide", GUIDE)
    # As a release with another model finds the table: every vector made by the old one.
    ChunkVector.objects.update(model_id="an-older-model/1")
    vectors.cache.clear()
    [passage] = retrieve(tenant=kit.tenant, livemode=True, query="monthly invoices")[:1]
    assert passage.similarity is None  # the old vectors are not compared with the new model's
    assert reembed_chunks() == document.chunk_count
    assert set(ChunkVector.objects.values_list("model_id", flat=True)) == {embeddings.MODEL_ID}
    assert ChunkVector.objects.count() == document.chunk_count
    [passage] = retrieve(tenant=kit.tenant, livemode=True, query="monthly invoices")[:1]
    assert passage.similarity is not None and passage.title == "Guide"
    assert reembed_chunks() == 0  # nothing left: the beat task's next run is a no-op


def test_a_document_indexed_while_the_model_failed_is_embedded_later(api, kit, monkeypatch):
    def broken(texts):
        raise RuntimeError("model file unreadable")

    monkeypatch.setattr(embeddings, "encode", broken)
    document = add_document(api, kit, "Guide", GUIDE)
    assert document.status == "ready" and not ChunkVector.objects.exists()
    monkeypatch.undo()
    assert reembed_chunks() == document.chunk_count


def test_the_cache_of_matrices_stays_under_its_budget(api, kit, stranger, settings):
    add_document(api, kit, "Guide", GUIDE)
    services.document_create(tenant=stranger.tenant, livemode=True, title="Other", type="text",
                             data=GUIDE.encode())
    from tests.knowledge_helpers import index_pending
    index_pending()
    vectors.cache.clear()
    one_tenant = vectors.matrix(tenant_id=kit.tenant.pk, livemode=True).nbytes
    settings.KNOWLEDGE_VECTOR_CACHE_MB = one_tenant * 1.5 / (1024 * 1024)
    vectors.cache.clear()
    retrieve(tenant=kit.tenant, livemode=True, query="invoices")
    retrieve(tenant=stranger.tenant, livemode=True, query="invoices")
    # Only the most recently used tenant's matrix is kept.
    assert vectors.cache.nbytes <= settings.KNOWLEDGE_VECTOR_CACHE_MB * 1024 * 1024
    assert vectors.cache.get((stranger.tenant.pk, True, embeddings.MODEL_ID),
                             vectors.version(tenant_id=stranger.tenant.pk, livemode=True))
    assert vectors.cache.get((kit.tenant.pk, True, embeddings.MODEL_ID),
                             vectors.version(tenant_id=kit.tenant.pk, livemode=True)) is None


OFFLINE = """
from core import embeddings, languages
v = embeddings.encode(["Where is our data stored?", "Wo werden unsere Daten gespeichert?"])
assert v.shape == (2, embeddings.DIMENSIONS)
assert float(v[0] @ v[1]) > 0.5, float(v[0] @ v[1])
assert languages.detect_language("Wo werden unsere Daten gespeichert?") == "de"
print("offline ok")
"""


@pytest.mark.live
@pytest.mark.skipif(not shutil.which("unshare"), reason="needs util-linux's unshare")
def test_the_models_load_with_no_network_at_all():
    """In a network namespace of its own (no interface but a down loopback), with the hub's
    offline switch on: both models are files inside their packages."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "PYTHONPATH": str(ROOT)}
    probe = subprocess.run(["unshare", "--net", "--map-root-user", sys.executable, "-c", OFFLINE],
                           env=env, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert probe.returncode == 0, probe.stderr[-2000:]
    assert "offline ok" in probe.stdout
