"""The full-text index of the chunks: one interface, two backends chosen by the connection.

- PostgreSQL: ``knowledge_chunk.search`` (tsvector, GIN index), written with each document's
  text-search configuration (ISO 639-1 mapped to a configuration such as ``english``;
  ``simple`` when there is none) and ranked with ``ts_rank_cd``.
- SQLite: the FTS5 table ``knowledge_chunk_fts`` (Porter stemmer), ranked with ``bm25``.

Both are written only here, by the services, in the transaction that writes the chunks.

A visitor's message becomes a query in the same way on both: its words minus stopwords and
chat filler, at most ``MAX_TERMS`` of them. One or two terms match any chunk containing one of
them; three or more need at least two in the same chunk, so that a single common word ("team",
"use") does not pull in an unrelated passage that the agent would then quote.
"""

from __future__ import annotations

import re
import unicodedata
import uuid
from dataclasses import dataclass
from functools import lru_cache
from itertools import combinations

from django.db import connection

from tenants.models import Tenant

from .models import Document, DocumentStatus
from .stopwords import STOPWORDS

MAX_TERMS = 8
MAX_QUERY_CHARS = 1_000

# ISO 639-1 -> PostgreSQL text-search configuration (those PostgreSQL ships; a configuration
# that the server lacks falls back to "simple").
PG_CONFIGS = {
    "ar": "arabic", "hy": "armenian", "eu": "basque", "ca": "catalan", "da": "danish",
    "nl": "dutch", "en": "english", "fi": "finnish", "fr": "french", "de": "german",
    "el": "greek", "hi": "hindi", "hu": "hungarian", "id": "indonesian", "ga": "irish",
    "it": "italian", "lt": "lithuanian", "ne": "nepali", "no": "norwegian", "nb": "norwegian",
    "nn": "norwegian", "pt": "portuguese", "ro": "romanian", "ru": "russian", "sr": "serbian",
    "es": "spanish", "sv": "swedish", "ta": "tamil", "tr": "turkish", "yi": "yiddish",
}
SIMPLE = "simple"


@dataclass(frozen=True)
class Hit:
    chunk_id: int
    document_id: uuid.UUID
    title: str
    url: str
    heading: str
    text: str
    score: float  # higher is better on both backends


# --- configuration --------------------------------------------------------------------------

@lru_cache(maxsize=1)
def _pg_available_configs() -> frozenset[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT cfgname FROM pg_ts_config")
        return frozenset(row[0] for row in cursor.fetchall())


def search_config(language: str) -> str:
    """The text-search configuration of a language (ISO 639-1), ``simple`` if none."""
    name = PG_CONFIGS.get((language or "").lower(), SIMPLE)
    if connection.vendor == "postgresql" and name not in _pg_available_configs():
        return SIMPLE
    return name


# --- writing --------------------------------------------------------------------------------

def _db(field_owner, value):
    """A UUID as this database stores it (SQLite keeps 32 hex characters)."""
    return field_owner._meta.pk.get_db_prep_value(value, connection)


def index_document_chunks(*, document_id: uuid.UUID, config: str) -> None:
    """Indexes the document's freshly stored chunks. Runs in the storing transaction."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(
                "UPDATE knowledge_chunk SET search = "
                "setweight(to_tsvector(%s::regconfig, heading), 'A') || "
                "setweight(to_tsvector(%s::regconfig, text), 'B') "
                "WHERE document_id = %s",
                [config, config, document_id],
            )
    elif connection.vendor == "sqlite":
        with connection.cursor() as cursor:
            # OR REPLACE: a rowid left behind by a table flush (tests) must not block a new chunk.
            cursor.execute(
                "INSERT OR REPLACE INTO knowledge_chunk_fts (rowid, heading, text) "
                "SELECT id, heading, text FROM knowledge_chunk WHERE document_id = %s",
                [_db(Document, document_id)],
            )


def unindex_document_chunks(*, document_id: uuid.UUID) -> None:
    """Removes the document's chunks from the index; call before deleting the chunks."""
    if connection.vendor == "sqlite":
        with connection.cursor() as cursor:
            cursor.execute(
                "DELETE FROM knowledge_chunk_fts WHERE rowid IN "
                "(SELECT id FROM knowledge_chunk WHERE document_id = %s)",
                [_db(Document, document_id)],
            )
    # PostgreSQL: the tsvector is a column of the chunk row and goes with it.


# --- querying -------------------------------------------------------------------------------

_WORD = re.compile(r"\w+")


def query_terms(query: str) -> list[str]:
    """The words of a message that can match: lower-cased, no stopwords or filler, no single
    letters, each once, in the order they appear; at most ``MAX_TERMS``."""
    text = unicodedata.normalize("NFKC", query[:MAX_QUERY_CHARS]).lower()
    terms: list[str] = []
    for word in _WORD.findall(text):
        word = word.strip("_")
        if len(word) < 2 or word in STOPWORDS or word in terms:
            continue
        terms.append(word)
        if len(terms) == MAX_TERMS:
            break
    return terms


def _min_matches(count: int) -> int:
    return 1 if count <= 2 else 2


def search(*, tenant: Tenant, livemode: bool, query: str, limit: int) -> list[Hit]:
    """The best chunks of the tenant's ready documents in this mode, best first."""
    terms = query_terms(query)
    if not terms or limit <= 0:
        return []
    if connection.vendor == "postgresql":
        return _search_postgres(tenant=tenant, livemode=livemode, terms=terms, limit=limit)
    if connection.vendor == "sqlite":
        return _search_sqlite(tenant=tenant, livemode=livemode, terms=terms, limit=limit)
    raise NotImplementedError(f"No knowledge index for {connection.vendor}")


def _tsquery_literal(lexeme: str) -> str:
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"


def _tsquery(lexemes: list[str]) -> str:
    quoted = [_tsquery_literal(lex) for lex in lexemes]
    if _min_matches(len(quoted)) == 1:
        return " | ".join(quoted)
    return " | ".join(f"({a} & {b})" for a, b in combinations(quoted, 2))


def _search_postgres(*, tenant: Tenant, livemode: bool, terms: list[str], limit: int) -> list[Hit]:
    text = " ".join(terms)
    with connection.cursor() as cursor:
        # The configurations in use among the tenant's ready documents (usually one), each with
        # the query's lexemes in it, in the order of the message.
        cursor.execute(
            "SELECT s.cfg, ARRAY(SELECT t.lexeme FROM unnest(to_tsvector(s.cfg::regconfig, %s)) t "
            "ORDER BY t.positions[1]) "
            "FROM (SELECT DISTINCT search_config AS cfg FROM knowledge_document "
            "WHERE tenant_id = %s AND livemode = %s AND status = %s) s",
            [text, tenant.pk, livemode, DocumentStatus.READY],
        )
        queries = [(cfg, _tsquery(list(dict.fromkeys(lexemes))))
                   for cfg, lexemes in cursor.fetchall() if lexemes]
        if not queries:
            return []
        if len(queries) == 1:
            match, rank = "c.search @@ %s::tsquery", "ts_rank_cd(c.search, %s::tsquery)"
            match_params = rank_params = [queries[0][1]]
        else:
            match = " OR ".join("(c.search_config = %s AND c.search @@ %s::tsquery)" for _ in queries)
            rank = ("ts_rank_cd(c.search, CASE c.search_config "
                    + " ".join("WHEN %s THEN %s::tsquery" for _ in queries) + " END)")
            match_params = rank_params = [p for q in queries for p in q]
        cursor.execute(
            f"SELECT c.id, c.document_id, d.title, d.url, c.heading, c.text, {rank} AS rank "
            "FROM knowledge_chunk c JOIN knowledge_document d ON d.id = c.document_id "
            f"WHERE c.tenant_id = %s AND c.livemode = %s AND ({match}) AND d.status = %s "
            "ORDER BY rank DESC, c.id LIMIT %s",
            [*rank_params, tenant.pk, livemode, *match_params, DocumentStatus.READY, limit],
        )
        rows = cursor.fetchall()
    return [Hit(chunk_id=r[0], document_id=r[1], title=r[2], url=r[3], heading=r[4], text=r[5],
                score=float(r[6])) for r in rows]


def _fts_literal(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


def _fts_query(terms: list[str]) -> str:
    quoted = [_fts_literal(t) for t in terms]
    if _min_matches(len(quoted)) == 1:
        return " OR ".join(quoted)
    return " OR ".join(f"({a} AND {b})" for a, b in combinations(quoted, 2))


def _search_sqlite(*, tenant: Tenant, livemode: bool, terms: list[str], limit: int) -> list[Hit]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.id, c.document_id, d.title, d.url, c.heading, c.text, "
            "bm25(knowledge_chunk_fts, 2.0, 1.0) AS rank "
            "FROM knowledge_chunk_fts "
            "JOIN knowledge_chunk c ON c.id = knowledge_chunk_fts.rowid "
            "JOIN knowledge_document d ON d.id = c.document_id "
            "WHERE knowledge_chunk_fts MATCH %s AND c.tenant_id = %s AND c.livemode = %s "
            "AND d.status = %s "
            "ORDER BY rank, c.id LIMIT %s",
            [_fts_query(terms), _db(Tenant, tenant.pk), livemode, DocumentStatus.READY, limit],
        )
        rows = cursor.fetchall()
    # bm25 is lower-is-better and negative; the passage score is higher-is-better.
    return [Hit(chunk_id=r[0], document_id=uuid.UUID(str(r[1])), title=r[2], url=r[3],
                heading=r[4], text=r[5], score=-float(r[6])) for r in rows]
