"""Retrieval: the knowledge passages that may answer a visitor's message.

This is the one interface the agent uses (the chat turn calls ``retrieve`` on every turn). It is
hybrid (docs/knowledge.md, "Hybrid retrieval"): the full-text index of ``knowledge.index``
(PostgreSQL full-text search or SQLite FTS5, whichever the connection is) finds the chunks that
share the question's words, the embeddings of ``knowledge.vectors`` find those that share its
meaning, in any of the model's languages, and reciprocal rank fusion merges the two rankings.
Both read only the tenant's ``ready`` documents in the caller's mode. The best come back as
passages: document id, title, an excerpt around the words that matched, the fused score, the
cosine of the question with the chunk, and the document's public URL if it has one (replies
that use the passage carry it as a ``link`` action; docs/knowledge.md, "Citations").

A tenant on its provider's embeddings (docs/knowledge.md, "The provider's embeddings") has its
question embedded by the provider (``embed_question``, which the chat turn calls before its
transaction: no lock waits on a network call) and compared with the provider's vectors; when
the provider fails, or has not embedded every chunk yet, the local model's serve that turn, and
the passages say which (``Passage.retrieval``).
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from uuid import UUID

import numpy as np
from django.conf import settings

from core import embeddings
from tenants.models import Tenant

from . import index, provider_embeddings, vectors
from .models import Chunk, DocumentStatus

logger = logging.getLogger(__name__)

EXCERPT_CHARS = 600
# A document may give at most this many of the passages: two overlapping chunks of one document
# would tell the agent the same thing twice.
PER_DOCUMENT = 2
# Reciprocal rank fusion: a chunk's score is the sum of 1 / (RRF_K + rank) over the rankings it
# is in. 60 is the constant of the original paper (Cormack et al., 2009), and what Dify and
# Chatwoot's Captain use; it keeps one ranking's first place from drowning the other's.
RRF_K = 60
CANDIDATES = 20  # taken from each ranking before fusing
# The dense half offers only chunks at least this close to the question: the nearest chunk of a
# tenant exists for every question, and one that is this far answers nothing.
DENSE_FLOOR = 0.05
_SENTENCE = re.compile(r"(?<=[.!?…])\s+|\n+")

# Which vectors ranked a tenant's passages, when it uses its provider's embeddings.
BY_PROVIDER = "provider"
LOCAL_PROVIDER_FAILED = "local (provider failed)"
LOCAL_PROVIDER_PENDING = "local (provider vectors pending)"  # the re-embedding has not done all


@dataclass(frozen=True)
class Passage:
    """A piece of a knowledge-base document that may answer the visitor."""

    document_id: UUID
    title: str
    excerpt: str
    score: float = 0.0
    url: str | None = None
    # The cosine of the question's embedding with the chunk's (None when either has none): how
    # the agent tells a passage that answers from one that only shares words.
    similarity: float | None = None
    text: str = ""  # the whole chunk, for the agent's choice of sentences
    heading: str = ""  # the chunk's section heading, which tells what its sentences are about
    # For a tenant on its provider's embeddings, whose vectors ranked it (``BY_PROVIDER``, or
    # the local model's and why); None for a tenant on the local model.
    retrieval: str | None = None


@dataclass(frozen=True)
class Question:
    """A question as the tenant's provider embedded it (``embed_question``): the provider's
    model id, and its vector, or None when the provider failed."""

    model_id: str
    vector: np.ndarray | None = None


def embed_question(*, tenant: Tenant, query: str) -> Question | None:
    """The question embedded by the tenant's provider, within
    ``KNOWLEDGE_PROVIDER_QUESTION_TIMEOUT_SECONDS`` and without retries (a visitor waits); None
    for a tenant on the local model. Touches no database: the chat turn calls it before its
    transaction."""
    embedder = provider_embeddings.for_tenant(tenant)
    if embedder is None or not query or not query.strip():
        return None
    try:
        [vector] = provider_embeddings.encode(
            embedder, [query], timeout=settings.KNOWLEDGE_PROVIDER_QUESTION_TIMEOUT_SECONDS)
    except provider_embeddings.EmbeddingFailed as failure:
        logger.warning("embedding a question of tenant %s through %r failed: %s; the local "
                       "model's vectors answer it", tenant.pk, embedder, failure)
        return Question(model_id=embedder.model_id)
    return Question(model_id=embedder.model_id, vector=vector)


def retrieve(*, tenant: Tenant, livemode: bool, query: str, limit: int = 3,
             excerpt_chars: int = EXCERPT_CHARS,
             query_vector: np.ndarray | None = None,
             question: Question | None = None) -> list[Passage]:
    """The best passages of the tenant's ready documents in this mode, best first.

    ``query_vector`` is the question's embedding by the local model when the caller has it
    already (the turn embeds the visitor's message once for its decisions too); ``question``
    its embedding by the tenant's provider (``embed_question``), made here when not given."""
    if limit <= 0 or not query or not query.strip() or not index.query_terms(query):
        return []  # nothing but filler ("ok thanks", "Hi! Can you tell me something?")
    lexical = index.search(tenant=tenant, livemode=livemode, query=query, limit=CANDIDATES)
    if question is None:
        question = embed_question(tenant=tenant, query=query)
    matrix, query_vector, record = _dense_space(tenant=tenant, livemode=livemode, query=query,
                                                query_vector=query_vector, question=question)
    dense: list[vectors.DenseHit] = []
    cosines: dict[int, float] = {}
    if matrix is not None and query_vector is not None:
        dense = [hit for hit in vectors.search(matrix, query_vector=query_vector, limit=CANDIDATES)
                 if hit.similarity >= DENSE_FLOOR]
        cosines = {hit.chunk_id: hit.similarity for hit in dense}
        cosines |= vectors.similarities(
            matrix, query_vector=query_vector,
            chunk_ids=[hit.chunk_id for hit in lexical if hit.chunk_id not in cosines])
    fused: dict[int, float] = {}
    for ranking in ([hit.chunk_id for hit in lexical], [hit.chunk_id for hit in dense]):
        for rank, chunk_id in enumerate(ranking, start=1):
            fused[chunk_id] = fused.get(chunk_id, 0.0) + 1.0 / (RRF_K + rank)
    hits = {hit.chunk_id: hit for hit in lexical}
    hits |= _hits(tenant=tenant, livemode=livemode,
                  chunk_ids=[chunk_id for chunk_id in fused if chunk_id not in hits])
    terms = index.query_terms(query)
    passages: list[Passage] = []
    per_document: dict = {}
    for chunk_id in sorted(fused, key=lambda c: (-fused[c], c)):
        hit = hits.get(chunk_id)
        if hit is None:
            continue
        if per_document.get(hit.document_id, 0) >= PER_DOCUMENT:
            continue
        per_document[hit.document_id] = per_document.get(hit.document_id, 0) + 1
        similarity = cosines.get(chunk_id)
        passages.append(Passage(
            document_id=hit.document_id, title=hit.title,
            excerpt=excerpt(hit.text, terms, limit=excerpt_chars),
            score=round(fused[chunk_id], 6), url=hit.url or None,
            similarity=None if similarity is None else round(similarity, 4), text=hit.text,
            heading=hit.heading, retrieval=record,
        ))
        if len(passages) == limit:
            break
    return passages


def _dense_space(*, tenant: Tenant, livemode: bool, query: str, query_vector: np.ndarray | None,
                 question: Question | None) -> tuple[vectors.Matrix | None, np.ndarray | None,
                                                      str | None]:
    """The matrix the question is compared with, the question's vector in its space, and which
    it is for a tenant on its provider's embeddings (None for one on the local model). The
    tenant's vector version is read once, whichever matrices are looked at."""
    current = None
    record = None
    if question is not None:
        if question.vector is None:
            record = LOCAL_PROVIDER_FAILED
        else:
            current = vectors.version(tenant_id=tenant.pk, livemode=livemode)
            provider = vectors.matrix(tenant_id=tenant.pk, livemode=livemode,
                                      model_id=question.model_id, current=current)
            if not provider.complete or not len(provider.chunk_ids):
                record = LOCAL_PROVIDER_PENDING
            elif provider.dimensions != len(question.vector):
                logger.warning("tenant %s's provider embedded a question in %d dimensions, its "
                               "chunks in %d; the local model's vectors answer it", tenant.pk,
                               len(question.vector), provider.dimensions)
                record = LOCAL_PROVIDER_FAILED
            else:
                return provider, question.vector, BY_PROVIDER
    if current is None:
        current = vectors.version(tenant_id=tenant.pk, livemode=livemode)
    if not current:
        # The tenant never had a vector in this mode: nothing to compare the question with, so
        # it is not embedded (the model's few milliseconds stay out of such a tenant's turns).
        return None, None, record
    if query_vector is None:
        query_vector = _embed(query)
    if query_vector is None:
        return None, None, record
    return (vectors.matrix(tenant_id=tenant.pk, livemode=livemode, current=current), query_vector,
            record)


def _embed(query: str) -> np.ndarray | None:
    try:
        return embeddings.encode_one(query)
    except Exception:  # the full-text half still answers
        logger.exception("embedding a question failed; retrieval is full-text only")
        return None


def _hits(*, tenant: Tenant, livemode: bool, chunk_ids: list[int]) -> dict[int, index.Hit]:
    """The dense half's chunks as the full-text half returns its own (one query)."""
    if not chunk_ids:
        return {}
    rows = (Chunk.objects.filter(pk__in=chunk_ids, tenant=tenant, livemode=livemode,
                                 document__status=DocumentStatus.READY)
            .values_list("id", "document_id", "document__title", "document__url", "heading", "text"))
    return {row[0]: index.Hit(chunk_id=row[0], document_id=row[1], title=row[2], url=row[3] or "",
                              heading=row[4], text=row[5], score=0.0)
            for row in rows}


def excerpt(text: str, terms: list[str], *, limit: int = EXCERPT_CHARS) -> str:
    """The part of a chunk worth quoting: all of it when short, else the run of whole sentences
    of at most ``limit`` characters that holds the most query words (compared by their first
    five letters, which is as much stemming as a quote needs)."""
    text = text.strip()
    if len(text) <= limit:
        return text
    sentences = [s for s in _SENTENCE.split(text) if s.strip()]
    stems = {t[:5] for t in terms}
    windows = (_window(sentences[start:], limit) for start in range(len(sentences)))
    # max() keeps the first of equally good windows.
    return max(windows, key=lambda window: _stems_in(window, stems), default="")


def _window(sentences: list[str], limit: int) -> str:
    """The first sentences that fit in ``limit`` characters together; the first sentence cut
    at a word when it alone is longer."""
    window = ""
    for sentence in sentences:
        candidate = f"{window} {sentence}".strip()
        if len(candidate) > limit:
            break
        window = candidate
    if not window:
        window = sentences[0][:limit].rsplit(" ", 1)[0] + "…"
    return window


def _stems_in(window: str, stems: set[str]) -> int:
    lowered = window.lower()
    return sum(1 for stem in stems if stem in lowered)
