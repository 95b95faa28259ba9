"""Searching the messages of a tenant's conversations (docs/conversations.md, "Search").

A query is up to ``MAX_TERMS`` terms separated by spaces; a message matches when it holds every
term, in any case: each one as a whole word, but the last one, which may be the start of a word
(as it is typed: "pric" finds "Pricing", "order 42" finds "order 4242"). On PostgreSQL the words
are the database's own (``to_tsvector('simple', content)``, a stored column with a GIN index
that starts with the tenant: migration 0010); the query is read by the same parser
(``plainto_tsquery``), so an address or a hyphenated word is found as it was written, and its
last word becomes a prefix (``'pric':*``). A prefix only at the end keeps a rare search fast:
the index finds a whole word's messages by skipping through them beside the rarer word's, but
must collect every message of a prefix. SQLite, the embedded default, has no such index: there
each term is a case-insensitive ``LIKE '%term%'`` over the tenant's messages (a term then also
matches inside a word); it need not be fast at a million messages.

Results come newest first: the index on (tenant, mode, time) lets a common word be found by
walking back from the newest message until a page is full, and the words' index finds a rare
one.

What a result shows of its message is ``excerpt``: a window of the text around the first match,
cut into plain and matching pieces, which the page escapes as it renders them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from django.db import connection
from django.db.models import BooleanField, QuerySet
from django.db.models.expressions import RawSQL

MAX_QUERY = 200  # characters of the search box that count
MAX_TERMS = 8
EXCERPT = 180  # characters of a message shown around its first match

# The query's words as the message column's words, the last one a prefix: the text of a
# tsquery is "'word' & 'other'", and its final quote closes the last word.
PREFIX_QUERY = ("regexp_replace(plainto_tsquery('simple'::regconfig, %s)::text, "
                "'''$', ''':*')::tsquery")
MATCH_SQL = f'"conversations_message"."search_vector" @@ {PREFIX_QUERY}'


def search_terms(query: str | None) -> list[str]:
    """The terms of a search box's text: at most ``MAX_TERMS``, none without a letter or a
    digit (they would match nothing on PostgreSQL, everything on SQLite)."""
    words = (query or "")[:MAX_QUERY].split()
    return [w for w in words if any(c.isalnum() for c in w)][:MAX_TERMS]


def full_text() -> bool:
    """Whether the database has the message search index (PostgreSQL)."""
    return connection.vendor == "postgresql"


def matching(queryset: QuerySet, terms: list[str]) -> QuerySet:
    """``queryset`` (of messages) narrowed to those that hold every term."""
    if full_text():
        return queryset.filter(RawSQL(MATCH_SQL, [" ".join(terms)], output_field=BooleanField()))
    for term in terms:
        queryset = queryset.filter(content__icontains=term)
    return queryset


@dataclass(frozen=True)
class Piece:
    text: str
    hit: bool


def _pattern(terms: list[str], *, words: bool) -> re.Pattern[str]:
    """The terms as the search matches them: with ``words`` whole words but the last, a word's
    start (PostgreSQL); else anywhere (``LIKE``)."""
    if words:
        alternatives = [rf"(?<!\w){re.escape(t)}(?!\w)" for t in terms[:-1]]
        alternatives.append(rf"(?<!\w){re.escape(terms[-1])}")
    else:
        alternatives = [re.escape(t) for t in terms]
    return re.compile("|".join(sorted(alternatives, key=len, reverse=True)), re.IGNORECASE)


def excerpt(text: str, terms: list[str], *, size: int = EXCERPT) -> list[Piece]:
    """The part of ``text`` around its first match, as pieces: the matches (as the words'
    search found them; anywhere when none is there, as ``LIKE`` found them) and the text
    between. ``…`` marks text left out at either end."""
    if not terms:
        return [Piece(text[:size], False)]
    pattern = _pattern(terms, words=True)
    first = pattern.search(text)
    if first is None:
        pattern = _pattern(terms, words=False)
        first = pattern.search(text)
    start = 0
    if first is not None and first.start() > size // 3:
        start = first.start() - size // 3
        space = text.rfind(" ", 0, start + 1)
        start = space + 1 if space > start - 20 else start
    end = min(len(text), start + size)
    window = text[start:end]
    pieces: list[Piece] = [Piece("…", False)] if start > 0 else []
    at = 0
    for match in pattern.finditer(window):
        if match.start() > at:
            pieces.append(Piece(window[at:match.start()], False))
        pieces.append(Piece(match.group(0), True))
        at = match.end()
    if at < len(window):
        pieces.append(Piece(window[at:], False))
    if end < len(text):
        pieces.append(Piece("…", False))
    return pieces
