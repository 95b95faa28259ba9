"""Dense retrieval: the chunks whose embedding is nearest a question's (docs/knowledge.md,
"Hybrid retrieval").

Vectors are rows of ``ChunkVector``, written in the transaction that makes a document ready and
deleted with its chunks. A process compares a question with a tenant's vectors in memory: one
float32 matrix per tenant, mode and model, read from the database once and kept while its
``VectorSet`` version stays the same (one primary-key read per search tells). The matrices of
all tenants together stay under ``KNOWLEDGE_VECTOR_CACHE_MB``; the least recently used go first,
so a process serving many tenants does not hold every tenant's vectors. A matrix costs 2 KiB a
chunk: 20 MB per 10,000 chunks.

A tenant on its provider's embeddings (``knowledge.provider_embeddings``) has a second set of
vectors, under the provider's model id, as long as the provider makes them (1,536 dimensions:
6 KiB a chunk in memory, 3 KiB in the table). The local model's are stored all the same.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter, OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from uuid import UUID

import numpy as np
from django.conf import settings
from django.db import transaction
from django.db.models import F, FilteredRelation, Q

from core import embeddings
from tenants.models import AgentProvider, EmbeddingsSource, Tenant

from . import provider_embeddings
from .models import Chunk, ChunkVector, Document, DocumentStatus, VectorSet

logger = logging.getLogger("salesagent.knowledge")


@dataclass(frozen=True)
class DenseHit:
    chunk_id: int
    similarity: float


def embed_text(*, title: str, heading: str, text: str) -> str:
    """What a chunk is embedded as: its document's title and heading say what it is about."""
    head = " — ".join(part for part in (title, heading) if part)
    return f"{head}: {text}" if head else text


# Indexing a document asks its tenant's provider for this long at most; the re-embedding
# completes what is left (a document is not kept from ``ready`` by a slow provider).
PROVIDER_INDEXING_SECONDS = 60


def embed_document(*, tenant: Tenant, title: str, chunks: Sequence) -> dict[str, list[np.ndarray]]:
    """The vectors of a document's chunks (``heading`` and ``text`` each), per model id: the
    local model's, and the tenant's provider's when it uses them. Runs outside any transaction.
    A model that cannot run leaves its set out or short, and says why in the log: the chunks
    are still found by their words, the other set still serves, and the re-embedding
    (``reembed_batch``) completes them later."""
    texts = [embed_text(title=title, heading=c.heading, text=c.text) for c in chunks]
    made: dict[str, list[np.ndarray]] = {}
    try:
        made[embeddings.MODEL_ID] = list(embeddings.encode(texts))
    except Exception:  # the document is still worth indexing for full-text search
        logger.exception("embedding %d chunks of a document failed; the sweeper embeds them later",
                         len(texts))
    embedder = provider_embeddings.for_tenant(tenant)
    if embedder is not None and texts:
        by_provider = _embed_by_provider(embedder, texts)
        if by_provider:
            made[embedder.model_id] = by_provider
    return made


def _embed_by_provider(embedder: provider_embeddings.Embedder,
                       texts: list[str]) -> list[np.ndarray]:
    made: list[np.ndarray] = []
    deadline = time.monotonic() + PROVIDER_INDEXING_SECONDS
    step = provider_embeddings.BATCH
    try:
        for start in range(0, len(texts), step):
            if time.monotonic() > deadline:
                logger.info("embedding a document through %r took %d s for %d of %d chunks; the "
                            "re-embedding does the rest", embedder,
                            PROVIDER_INDEXING_SECONDS, start, len(texts))
                break
            made.extend(provider_embeddings.encode(
                embedder, texts[start:start + step],
                timeout=settings.KNOWLEDGE_PROVIDER_INDEX_TIMEOUT_SECONDS,
                max_retries=settings.AGENT_MAX_RETRIES))
    except provider_embeddings.EmbeddingFailed as failure:
        logger.warning("embedding the chunks of a document through %r failed: %s; retrieval "
                       "compares the local model's vectors until the re-embedding makes the "
                       "provider's", embedder, failure)
    if made and len({len(v) for v in made}) != 1:
        logger.warning("the provider's vectors for a document differ in length; not stored")
        return []
    return made


def store_vectors(*, document_id: UUID, tenant_id: UUID, livemode: bool,
                  vectors: Mapping[str, Sequence[np.ndarray]]) -> None:
    """Stores the vectors of a document's chunks, per model id, by position (``vectors[m][i]``
    is chunk ``i``'s by model ``m``; a set may stop short, and the re-embedding completes it),
    and bumps the tenant's version. Runs in the transaction that stores the chunks."""
    ids = dict(Chunk.objects.filter(document_id=document_id).values_list("position", "id"))
    ChunkVector.objects.bulk_create(
        [ChunkVector(chunk_id=ids[position], tenant_id=tenant_id, livemode=livemode,
                     model_id=model_id, vector=embeddings.to_bytes(vector))
         for model_id, made in vectors.items()
         for position, vector in enumerate(made) if position in ids],
        batch_size=500,
    )
    bump(tenant_id=tenant_id, livemode=livemode)


def bump(*, tenant_id: UUID, livemode: bool) -> None:
    """A new version of the tenant's vectors in this mode; in the caller's transaction."""
    updated = VectorSet.objects.filter(tenant_id=tenant_id, livemode=livemode).update(
        version=F("version") + 1)
    if not updated:
        VectorSet.objects.get_or_create(tenant_id=tenant_id, livemode=livemode,
                                        defaults={"version": 1})


def version(*, tenant_id: UUID, livemode: bool) -> int:
    return (VectorSet.objects.filter(tenant_id=tenant_id, livemode=livemode)
            .values_list("version", flat=True).first() or 0)


# --- the in-memory matrices ------------------------------------------------------------------

@dataclass(frozen=True)
class Matrix:
    """A tenant's vectors of one model in one mode, as of one version of its vectors."""

    version: int
    chunk_ids: np.ndarray  # int64, one per row, ascending
    vectors: np.ndarray  # float32, rows × dimensions
    # Whether every chunk of the tenant's ready documents in this mode has a row (read for a
    # provider's matrix only: the local model's is always the one compared last).
    complete: bool = True

    @property
    def dimensions(self) -> int:
        return self.vectors.shape[1]

    @property
    def nbytes(self) -> int:
        return self.chunk_ids.nbytes + self.vectors.nbytes


class _Cache:
    """Least-recently-used matrices under a byte budget; safe across request threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: OrderedDict[tuple, Matrix] = OrderedDict()

    def get(self, key: tuple, version: int) -> Matrix | None:
        with self._lock:
            matrix = self._items.get(key)
            if matrix is None or matrix.version != version:
                return None
            self._items.move_to_end(key)
            return matrix

    def put(self, key: tuple, matrix: Matrix) -> None:
        budget = settings.KNOWLEDGE_VECTOR_CACHE_MB * 1024 * 1024
        with self._lock:
            self._items.pop(key, None)
            if matrix.nbytes > budget:
                return  # searched from this copy once, never kept
            self._items[key] = matrix
            while sum(m.nbytes for m in self._items.values()) > budget:
                self._items.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()

    @property
    def nbytes(self) -> int:
        with self._lock:
            return sum(m.nbytes for m in self._items.values())


cache = _Cache()


_EMPTY = Matrix(version=0, chunk_ids=np.zeros(0, dtype=np.int64),
                vectors=np.zeros((0, embeddings.DIMENSIONS), dtype=np.float32))


def matrix(*, tenant_id: UUID, livemode: bool, model_id: str = embeddings.MODEL_ID,
           current: int | None = None) -> Matrix:
    """The tenant's vectors of one model (the local one unless said) in this mode, as one
    matrix: from this process's cache while the version is current (one statement, none when
    the caller read the version: ``current``), else read anew (one more).

    The number of dimensions is the stored vectors' (their byte length): the local model's 512,
    or whatever the tenant's provider returns."""
    if current is None:
        current = version(tenant_id=tenant_id, livemode=livemode)
    if not current:
        return _EMPTY  # the tenant never had a vector in this mode
    key = (tenant_id, livemode, model_id)
    matrix = cache.get(key, current)
    if matrix is not None:
        return matrix
    if provider_embeddings.is_provider_model(model_id):
        matrix = _provider_matrix(tenant_id=tenant_id, livemode=livemode, model_id=model_id,
                                  current=current)
    else:
        rows = list(ChunkVector.objects.filter(
            tenant_id=tenant_id, livemode=livemode, model_id=model_id,
            chunk__document__status=DocumentStatus.READY,
        ).order_by("chunk_id").values_list("chunk_id", "vector"))
        matrix = _assemble(rows, current=current, model_id=model_id,
                           dimensions=embeddings.DIMENSIONS)
    cache.put(key, matrix)
    return matrix


def _provider_matrix(*, tenant_id: UUID, livemode: bool, model_id: str, current: int) -> Matrix:
    """A provider's matrix, and whether it covers every chunk of the tenant's ready documents
    (one statement: the chunks, each with its vector of this model if it has one)."""
    rows = list(Chunk.objects.filter(
        tenant_id=tenant_id, livemode=livemode, document__status=DocumentStatus.READY,
    ).annotate(by_model=FilteredRelation("vectors", condition=Q(vectors__model_id=model_id)))
        .order_by("id").values_list("id", "by_model__vector"))
    found = [row for row in rows if row[1] is not None]
    matrix = _assemble(found, current=current, model_id=model_id, dimensions=0)
    return Matrix(version=matrix.version, chunk_ids=matrix.chunk_ids, vectors=matrix.vectors,
                  complete=len(matrix.chunk_ids) == len(rows))


def _assemble(rows: list, *, current: int, model_id: str, dimensions: int) -> Matrix:
    """``(chunk id, vector bytes)`` rows, in chunk order, as a float32 matrix. Every vector of
    one model has one length; rows of another (a server that changed the model behind a name)
    are left out and said in the log."""
    if not rows:
        return Matrix(version=current, chunk_ids=np.zeros(0, dtype=np.int64),
                      vectors=np.zeros((0, dimensions), dtype=np.float32))
    size, _ = Counter(len(row[1]) for row in rows).most_common(1)[0]
    kept = [row for row in rows if len(row[1]) == size]
    if len(kept) < len(rows):
        logger.warning("%d vectors of %s are of another length than the %d others; not compared",
                       len(rows) - len(kept), model_id, len(kept))
    ids = np.fromiter((row[0] for row in kept), dtype=np.int64, count=len(kept))
    vectors = np.frombuffer(b"".join(bytes(row[1]) for row in kept), dtype="<f2")
    vectors = vectors.reshape(len(kept), size // 2).astype(np.float32)
    return Matrix(version=current, chunk_ids=ids, vectors=vectors)


def search(matrix: Matrix, *, query_vector: np.ndarray, limit: int) -> list[DenseHit]:
    """The ``limit`` chunks of ``matrix`` nearest the query's vector (cosine), nearest first."""
    if not len(matrix.chunk_ids) or limit <= 0:
        return []
    similarities = matrix.vectors @ np.asarray(query_vector, dtype=np.float32)
    if len(similarities) > limit:
        best = np.argpartition(-similarities, limit - 1)[:limit]
    else:
        best = np.arange(len(similarities))
    best = best[np.argsort(-similarities[best], kind="stable")]
    return [DenseHit(chunk_id=int(matrix.chunk_ids[i]), similarity=float(similarities[i]))
            for i in best]


def similarities(matrix: Matrix, *, query_vector: np.ndarray,
                 chunk_ids: Sequence[int]) -> dict[int, float]:
    """The cosine of the query's vector with each of these chunks' (those that have one)."""
    if not len(matrix.chunk_ids) or not chunk_ids:
        return {}
    wanted = np.asarray(chunk_ids, dtype=np.int64)
    rows = np.searchsorted(matrix.chunk_ids, wanted)
    rows = np.minimum(rows, len(matrix.chunk_ids) - 1)
    found = matrix.chunk_ids[rows] == wanted
    values = matrix.vectors[rows[found]] @ np.asarray(query_vector, dtype=np.float32)
    return {int(c): float(v) for c, v in zip(wanted[found], values, strict=True)}


# --- re-embedding ----------------------------------------------------------------------------

# Tenants on provider embeddings looked at in one call of ``reembed_batch``, at most.
PROVIDER_TENANTS_PER_CALL = 50


def reembed_batch(*, batch: int = 256, provider_skip: set[UUID] | None = None) -> int:
    """Embeds, with the current model, up to ``batch`` chunks of ready documents that have no
    vector of it (a model change, or a document indexed while embedding failed), and deletes the
    vectors of other local models of the chunks it embeds; then one batch of a tenant on its
    provider's embeddings whose chunks lack the provider's vectors (``reembed_provider_batch``).
    Returns how many it embedded; the beat task calls it until none are left, with one
    ``provider_skip`` for the run. Two runs at once write the same rows, which the (chunk,
    model) constraint keeps single."""
    done = _reembed_local(batch=batch)
    return done + reembed_provider_batch(skip=set() if provider_skip is None else provider_skip)


def _reembed_local(*, batch: int) -> int:
    chunks = list(
        Chunk.objects.filter(document__status=DocumentStatus.READY)
        .exclude(vectors__model_id=embeddings.MODEL_ID)
        .order_by("id")
        .values_list("id", "tenant_id", "livemode", "document__title", "heading", "text")[:batch]
    )
    if not chunks:
        return 0
    vectors = embeddings.encode([embed_text(title=t, heading=h, text=x)
                                 for _, _, _, t, h, x in chunks])
    with transaction.atomic():
        ChunkVector.objects.filter(chunk_id__in=[c[0] for c in chunks]).exclude(
            model_id=embeddings.MODEL_ID).exclude(
            model_id__startswith=provider_embeddings.PREFIX).delete()
        ChunkVector.objects.bulk_create(
            [ChunkVector(chunk_id=c[0], tenant_id=c[1], livemode=c[2],
                         model_id=embeddings.MODEL_ID, vector=embeddings.to_bytes(v))
             for c, v in zip(chunks, vectors, strict=True)],
            ignore_conflicts=True,
        )
        for tenant_id, livemode in sorted({(c[1], c[2]) for c in chunks}, key=str):
            bump(tenant_id=tenant_id, livemode=livemode)
    return len(chunks)


def reembed_provider_batch(*, skip: set[UUID], batch: int = provider_embeddings.BATCH) -> int:
    """Embeds through its provider up to ``batch`` chunks of one tenant on provider embeddings
    that have no vector of the provider's current model (a document indexed while the provider
    failed, a tenant that just chose them, or another base URL or model), and deletes the
    vectors of the tenant's earlier provider models of those chunks. A tenant with nothing left,
    or whose provider fails (said in the log), joins ``skip``: one run asks each failing
    provider once. Returns how many it embedded."""
    tenants = (Tenant.objects.filter(agent_provider=AgentProvider.OPENAI,
                                     agent_embeddings=EmbeddingsSource.PROVIDER)
               .exclude(agent_embedding_model="").exclude(pk__in=skip)
               .order_by("pk")[:PROVIDER_TENANTS_PER_CALL])
    for tenant in tenants:
        embedder = provider_embeddings.for_tenant(tenant)
        chunks = [] if embedder is None else list(
            Chunk.objects.filter(tenant=tenant, document__status=DocumentStatus.READY)
            .exclude(vectors__model_id=embedder.model_id).order_by("id")
            .values_list("id", "livemode", "document__title", "heading", "text")[:batch])
        if not chunks:
            skip.add(tenant.pk)
            continue
        try:
            made = provider_embeddings.encode(
                embedder, [embed_text(title=t, heading=h, text=x) for _, _, t, h, x in chunks],
                timeout=settings.KNOWLEDGE_PROVIDER_INDEX_TIMEOUT_SECONDS,
                max_retries=settings.AGENT_MAX_RETRIES)
        except provider_embeddings.EmbeddingFailed as failure:
            logger.warning("re-embedding %d chunks of tenant %s through %r failed: %s; the next "
                           "run tries again", len(chunks), tenant.pk, embedder, failure)
            skip.add(tenant.pk)
            continue
        _store_provider_vectors(tenant_id=tenant.pk, model_id=embedder.model_id,
                                chunks=[(c[0], c[1]) for c in chunks], made=made)
        return len(chunks)
    return 0


def _store_provider_vectors(*, tenant_id: UUID, model_id: str, chunks: list[tuple[int, bool]],
                            made: np.ndarray) -> None:
    with transaction.atomic():
        ChunkVector.objects.filter(chunk_id__in=[c[0] for c in chunks],
                                   model_id__startswith=provider_embeddings.PREFIX).exclude(
            model_id=model_id).delete()
        # Only chunks that still exist: a document deleted meanwhile took its chunks along.
        alive = set(Chunk.objects.filter(pk__in=[c[0] for c in chunks]).values_list("pk", flat=True))
        ChunkVector.objects.bulk_create(
            [ChunkVector(chunk_id=chunk_id, tenant_id=tenant_id, livemode=livemode,
                         model_id=model_id, vector=embeddings.to_bytes(vector))
             for (chunk_id, livemode), vector in zip(chunks, made, strict=True) if chunk_id in alive],
            ignore_conflicts=True,
        )
        for livemode in sorted({c[1] for c in chunks}):
            bump(tenant_id=tenant_id, livemode=livemode)


def document_vector_count(document: Document) -> int:
    return ChunkVector.objects.filter(chunk__document=document).count()
