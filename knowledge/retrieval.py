"""Retrieval: the knowledge passages that may answer a visitor's message.

This is the one interface the agent uses (the chat turn calls ``retrieve`` on every turn). It
reads the full-text index of ``knowledge.index`` (PostgreSQL full-text search or SQLite FTS5,
whichever the connection is) over the chunks of the tenant's ``ready`` documents in the
caller's mode, and returns the best as passages: document id, title, an excerpt around the
words that matched, the score, and the document's public URL if it has one (replies that use
the passage carry it as a ``link`` action; docs/knowledge.md, "Citations").
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from uuid import UUID

from tenants.models import Tenant

from . import index

EXCERPT_CHARS = 600
# A document may give at most this many of the passages: two overlapping chunks of one document
# would tell the agent the same thing twice.
PER_DOCUMENT = 2
_SENTENCE = re.compile(r"(?<=[.!?…])\s+|\n+")


@dataclass(frozen=True)
class Passage:
    """A piece of a knowledge-base document that may answer the visitor."""

    document_id: UUID
    title: str
    excerpt: str
    score: float = 0.0
    url: str | None = None


def retrieve(*, tenant: Tenant, livemode: bool, query: str, limit: int = 3,
             excerpt_chars: int = EXCERPT_CHARS) -> list[Passage]:
    """The best passages of the tenant's ready documents in this mode, best first."""
    if limit <= 0 or not query or not query.strip():
        return []
    hits = index.search(tenant=tenant, livemode=livemode, query=query, limit=limit * 3)
    terms = index.query_terms(query)
    passages: list[Passage] = []
    per_document: dict = {}
    for hit in hits:
        if per_document.get(hit.document_id, 0) >= PER_DOCUMENT:
            continue
        per_document[hit.document_id] = per_document.get(hit.document_id, 0) + 1
        passages.append(Passage(
            document_id=hit.document_id, title=hit.title,
            excerpt=excerpt(hit.text, terms, limit=excerpt_chars),
            score=round(hit.score, 6), url=hit.url or None,
        ))
        if len(passages) == limit:
            break
    return passages


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
