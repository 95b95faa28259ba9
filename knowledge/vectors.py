"""Dense retrieval: the chunks whose embedding is nearest a question's (docs/knowledge.md,
"Hybrid retrieval").

Vectors are rows of ``ChunkVector``, written in the transaction that makes a document ready and
deleted with its chunks. A process compares a question with a tenant's vectors in memory: one
float32 matrix per tenant, mode and model, read from the database once and kept while its
``VectorSet`` version stays the same (one primary-key read per search tells). The matrices of
all tenants together stay under ``KNOWLEDGE_VECTOR_CACHE_MB``; the least recently used go first,
so a process serving many tenants does not hold every tenant's vectors. A matrix costs 2 KiB a
chunk: 20 MB per 10,000 chunks.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from uuid import UUID

import numpy as np
from django.conf import settings
from django.db import transaction
from django.db.models import F

from core import embeddings

from .models import Chunk, ChunkVector, Document, DocumentStatus, VectorSet


@dataclass(frozen=True)
class DenseHit:
    chunk_id: int
    similarity: float


def embed_text(*, title: str, heading: str, text: str) -> str:
    """What a chunk is embedded as: its document's title and heading say what it is about."""
    head = " — ".join(part for part in (title, heading) if part)
    return f"{head}: {text}" if head else text


def store_vectors(*, document_id: UUID, tenant_id: UUID, livemode: bool,
                  vectors: Sequence[np.ndarray]) -> None:
    """Stores the vectors of a document's chunks, by position (``vectors[i]`` is chunk ``i``'s),
    and bumps the tenant's version. Runs in the transaction that stores the chunks."""
    ids = dict(Chunk.objects.filter(document_id=document_id).values_list("position", "id"))
    ChunkVector.objects.bulk_create(
        [ChunkVector(chunk_id=ids[position], tenant_id=tenant_id, livemode=livemode,
                     model_id=embeddings.MODEL_ID, vector=embeddings.to_bytes(vector))
         for position, vector in enumerate(vectors) if position in ids],
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
class _Matrix:
    version: int
    chunk_ids: np.ndarray  # int64, one per row, ascending
    vectors: np.ndarray  # float32, rows × dimensions

    @property
    def nbytes(self) -> int:
        return self.chunk_ids.nbytes + self.vectors.nbytes


class _Cache:
    """Least-recently-used matrices under a byte budget; safe across request threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: OrderedDict[tuple, _Matrix] = OrderedDict()

    def get(self, key: tuple, version: int) -> _Matrix | None:
        with self._lock:
            matrix = self._items.get(key)
            if matrix is None or matrix.version != version:
                return None
            self._items.move_to_end(key)
            return matrix

    def put(self, key: tuple, matrix: _Matrix) -> None:
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


_EMPTY = _Matrix(version=0, chunk_ids=np.zeros(0, dtype=np.int64),
                 vectors=np.zeros((0, embeddings.DIMENSIONS), dtype=np.float32))


def matrix(*, tenant_id: UUID, livemode: bool) -> _Matrix:
    """The tenant's vectors of the current model in this mode, as one matrix: from this
    process's cache while the version is current (one statement), else read anew (two)."""
    current = version(tenant_id=tenant_id, livemode=livemode)
    if not current:
        return _EMPTY  # the tenant never had a vector in this mode
    key = (tenant_id, livemode, embeddings.MODEL_ID)
    matrix = cache.get(key, current)
    if matrix is not None:
        return matrix
    rows = list(ChunkVector.objects.filter(
        tenant_id=tenant_id, livemode=livemode, model_id=embeddings.MODEL_ID,
        chunk__document__status=DocumentStatus.READY,
    ).order_by("chunk_id").values_list("chunk_id", "vector"))
    if rows:
        ids = np.fromiter((row[0] for row in rows), dtype=np.int64, count=len(rows))
        vectors = np.frombuffer(b"".join(bytes(row[1]) for row in rows), dtype="<f2")
        vectors = vectors.reshape(len(rows), embeddings.DIMENSIONS).astype(np.float32)
    else:
        ids = np.zeros(0, dtype=np.int64)
        vectors = np.zeros((0, embeddings.DIMENSIONS), dtype=np.float32)
    matrix = _Matrix(version=current, chunk_ids=ids, vectors=vectors)
    cache.put(key, matrix)
    return matrix


def search(matrix: _Matrix, *, query_vector: np.ndarray, limit: int) -> list[DenseHit]:
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


def similarities(matrix: _Matrix, *, query_vector: np.ndarray,
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

def reembed_batch(*, batch: int = 256) -> int:
    """Embeds, with the current model, up to ``batch`` chunks of ready documents that have no
    vector of it (a model change, or a document indexed while embedding failed), and deletes the
    vectors of other models of the chunks it embeds. Returns how many it embedded; the beat task
    calls it until none are left. Two runs at once write the same rows, which the (chunk, model)
    constraint keeps single."""
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
            model_id=embeddings.MODEL_ID).delete()
        ChunkVector.objects.bulk_create(
            [ChunkVector(chunk_id=c[0], tenant_id=c[1], livemode=c[2],
                         model_id=embeddings.MODEL_ID, vector=embeddings.to_bytes(v))
             for c, v in zip(chunks, vectors, strict=True)],
            ignore_conflicts=True,
        )
        for tenant_id, livemode in sorted({(c[1], c[2]) for c in chunks}, key=str):
            bump(tenant_id=tenant_id, livemode=livemode)
    return len(chunks)


def document_vector_count(document: Document) -> int:
    return ChunkVector.objects.filter(chunk__document=document).count()
