"""The full-text index of the chunks: one interface, two backends chosen by the connection.

- PostgreSQL: ``knowledge_chunk.search`` (tsvector, GIN index), written with each document's
  text-search configuration (ISO 639-1 mapped to a configuration such as ``english``;
  ``simple`` when there is none), and ``TermFrequency``, how many chunks hold each lexeme.
  A query gathers at most ``CANDIDATES`` chunks, from its most selective terms first, and
  ranks them by the inverse document frequency of the terms they hold plus ``ts_rank_cd``.
- SQLite: the FTS5 table ``knowledge_chunk_fts`` (Porter stemmer), ranked with ``bm25``.

Both are written only here (``store_chunks``, ``unindex_document_chunks``), by the services,
in the transactions that write and delete the chunks.

A visitor's message becomes a query in the same way on both: its words minus stopwords and
chat filler, at most ``MAX_TERMS`` of them. One or two terms match any chunk containing one of
them; three or more need at least two in the same chunk, so that a single common word ("team",
"use") does not pull in an unrelated passage that the agent would then quote.
"""

from __future__ import annotations

import math
import re
import unicodedata
import uuid
from dataclasses import dataclass
from functools import lru_cache
from itertools import combinations

from django.db import connection

from tenants.models import Tenant

from .chunking import ChunkText
from .models import Chunk, Document, DocumentStatus
from .stopwords import STOPWORDS

MAX_TERMS = 8
MAX_QUERY_CHARS = 1_000
# PostgreSQL: the rarest terms that take part, and the most chunks ranked for one query.
RARE_TERMS = 6
CANDIDATES = 100

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


def _lock_tenant_terms(cursor, tenant_id: uuid.UUID, livemode: bool) -> None:
    """Serialises the term-count writes of one tenant and mode until the transaction ends, so
    that two documents indexed or deleted at once cannot deadlock on the same lexemes."""
    cursor.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
                   [f"knowledge-terms:{tenant_id}:{int(livemode)}"])


def store_chunks(*, document_id: uuid.UUID, tenant_id: uuid.UUID, livemode: bool, config: str,
                 chunks: list[ChunkText]) -> None:
    """Stores a document's chunks and indexes them. Runs in the transaction that makes the
    document ready."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            # One INSERT that computes each tsvector as the row is written: no second write of
            # every row (and of its index entries) to add the tsvector afterwards.
            for start in range(0, len(chunks), 1000):
                batch = chunks[start:start + 1000]
                cursor.execute(
                    "INSERT INTO knowledge_chunk "
                    "(document_id, tenant_id, livemode, position, heading, text, search_config, search) "
                    "SELECT %s, %s, %s, x.position, x.heading, x.text, %s, "
                    "setweight(to_tsvector(%s::regconfig, x.heading), 'A') || "
                    "setweight(to_tsvector(%s::regconfig, x.text), 'B') "
                    "FROM unnest(%s::integer[], %s::text[], %s::text[]) AS x(position, heading, text)",
                    [document_id, tenant_id, livemode, config, config, config,
                     [c.position for c in batch], [c.heading for c in batch], [c.text for c in batch]],
                )
            _lock_tenant_terms(cursor, tenant_id, livemode)
            cursor.execute(
                "INSERT INTO knowledge_termfrequency (tenant_id, livemode, lexeme, chunks) "
                "SELECT %s, %s, u.lexeme, count(*) FROM knowledge_chunk c, unnest(c.search) u "
                "WHERE c.document_id = %s GROUP BY u.lexeme ORDER BY u.lexeme "
                "ON CONFLICT (tenant_id, livemode, lexeme) "
                "DO UPDATE SET chunks = knowledge_termfrequency.chunks + EXCLUDED.chunks",
                [tenant_id, livemode, document_id],
            )
        return
    Chunk.objects.bulk_create(
        [Chunk(document_id=document_id, tenant_id=tenant_id, livemode=livemode,
               position=c.position, heading=c.heading, text=c.text, search_config=config)
         for c in chunks],
        batch_size=500,
    )
    if connection.vendor == "sqlite":
        with connection.cursor() as cursor:
            # OR REPLACE: a rowid left behind by a table flush (tests) must not block a new chunk.
            cursor.execute(
                "INSERT OR REPLACE INTO knowledge_chunk_fts (rowid, heading, text) "
                "SELECT id, heading, text FROM knowledge_chunk WHERE document_id = %s",
                [_db(Document, document_id)],
            )


def unindex_document_chunks(*, document_id: uuid.UUID, tenant_id: uuid.UUID,
                            livemode: bool) -> None:
    """Removes the document's chunks from the index; call before deleting the chunks."""
    if connection.vendor == "postgresql":
        # The tsvector is a column of the chunk row and goes with it; the term counts stay.
        with connection.cursor() as cursor:
            _lock_tenant_terms(cursor, tenant_id, livemode)
            cursor.execute(
                "UPDATE knowledge_termfrequency f SET chunks = f.chunks - d.n "
                "FROM (SELECT u.lexeme, count(*) AS n FROM knowledge_chunk c, unnest(c.search) u "
                "      WHERE c.document_id = %s GROUP BY u.lexeme) d "
                "WHERE f.tenant_id = %s AND f.livemode = %s AND f.lexeme = d.lexeme",
                [document_id, tenant_id, livemode],
            )
            cursor.execute(
                "DELETE FROM knowledge_termfrequency "
                "WHERE tenant_id = %s AND livemode = %s AND chunks <= 0",
                [tenant_id, livemode],
            )
    elif connection.vendor == "sqlite":
        with connection.cursor() as cursor:
            cursor.execute(
                "DELETE FROM knowledge_chunk_fts WHERE rowid IN "
                "(SELECT id FROM knowledge_chunk WHERE document_id = %s)",
                [_db(Document, document_id)],
            )


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
    # The settings admit PostgreSQL and SQLite only (DATABASE_URL's schemes).
    return _search_sqlite(tenant=tenant, livemode=livemode, terms=terms, limit=limit)


def _tsquery_literal(lexeme: str) -> str:
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"


def _idf(chunks: int, total: int) -> float:
    """Inverse document frequency as bm25 has it: rare terms weigh more, ubiquitous ones ~0."""
    return math.log(1 + (total - chunks + 0.5) / (chunks + 0.5))


@dataclass(frozen=True)
class _Clause:
    estimate: float  # chunks expected to match
    config: str
    tsquery: str


def _plan(config: str, lexemes: list[tuple[str, int]], total: int,
          ) -> tuple[list[_Clause], list[tuple[str, str, float]], str]:
    """For one configuration: the match clauses (most selective first), each term's weight, and
    the query that ``ts_rank_cd`` scores proximity with."""
    # A chunk needs two of the message's terms when it has three or more, counting those that
    # no chunk contains: they make the question more specific, not less.
    needed = _min_matches(len(lexemes))
    known = sorted(((lex, df) for lex, df in lexemes if df > 0), key=lambda t: t[1])[:RARE_TERMS]
    if len(known) < needed:
        return [], [], ""
    total = max(total, known[-1][1])
    quoted = {lex: _tsquery_literal(lex) for lex, _ in known}
    clauses = _clauses(config, known, quoted, needed=needed, total=total)
    weights = [(config, quoted[lex], _idf(df, total)) for lex, df in known]
    return clauses, weights, " | ".join(quoted.values())


def _clauses(config: str, known: list[tuple[str, int]], quoted: dict[str, str], *, needed: int,
             total: int) -> list[_Clause]:
    """All the known terms together (when there are two or more), then each term alone when
    one term is enough, else each pair of terms; with the chunks each is expected to match."""
    clauses = []
    if len(known) >= 2:
        estimate = float(total)
        for _, df in known:
            estimate *= df / total
        clauses.append(_Clause(estimate, config, " & ".join(quoted[lex] for lex, _ in known)))
    if needed == 1:
        clauses += [_Clause(df, config, quoted[lex]) for lex, df in known]
    else:
        clauses += [_Clause(a[1] * b[1] / total, config, f"{quoted[a[0]]} & {quoted[b[0]]}")
                    for a, b in combinations(known, 2)]
    return clauses


def _search_postgres(*, tenant: Tenant, livemode: bool, terms: list[str], limit: int) -> list[Hit]:
    with connection.cursor() as cursor:
        total, by_config = _term_frequencies(cursor, tenant=tenant, livemode=livemode, terms=terms)
        clauses, weights, rank_queries = _plan_configs(by_config, total)
        if not clauses:
            return []
        several = len(rank_queries) > 1
        score, score_params = _score_sql(weights, rank_queries, several=several)
        candidates, candidate_params = _candidates_sql(clauses, tenant=tenant, livemode=livemode,
                                                       several=several)
        sql = (
            f"WITH cand AS MATERIALIZED (SELECT * FROM ({candidates}) u LIMIT %s) "
            f"SELECT c.id, c.document_id, d.title, d.url, c.heading, c.text, {score} AS score "
            "FROM cand c JOIN knowledge_document d ON d.id = c.document_id AND d.status = %s "
            "ORDER BY score DESC, c.id LIMIT %s"
        )
        # A chunk found by two clauses comes twice: room for the repeats, dropped below.
        cursor.execute(sql, [*candidate_params, CANDIDATES, *score_params,
                             DocumentStatus.READY, limit * 2])
        found = _first_of_each(cursor.fetchall())[:limit]
    return [Hit(chunk_id=r[0], document_id=r[1], title=r[2], url=r[3], heading=r[4], text=r[5],
                score=float(r[6])) for r in found]


def _term_frequencies(cursor, *, tenant: Tenant, livemode: bool, terms: list[str],
                      ) -> tuple[int, dict[str, list[tuple[str, int]]]]:
    """The chunks of the tenant's ready documents, and per configuration in use among them
    (usually one) the message's lexemes, in message order, with how many chunks contain each."""
    cursor.execute(
        "WITH s AS (SELECT search_config AS cfg, sum(chunk_count) AS total "
        "  FROM knowledge_document WHERE tenant_id = %s AND livemode = %s AND status = %s "
        "  GROUP BY search_config), "
        "l AS (SELECT s.cfg, t.lexeme, min(t.positions[1]) AS pos "
        "  FROM s CROSS JOIN LATERAL unnest(to_tsvector(s.cfg::regconfig, %s)) t "
        "  GROUP BY s.cfg, t.lexeme) "
        "SELECT l.cfg, (SELECT sum(total) FROM s)::bigint, l.lexeme, coalesce(f.chunks, 0) "
        "FROM l LEFT JOIN knowledge_termfrequency f "
        "  ON f.tenant_id = %s AND f.livemode = %s AND f.lexeme = l.lexeme "
        "ORDER BY l.cfg, l.pos",
        [tenant.pk, livemode, DocumentStatus.READY, " ".join(terms), tenant.pk, livemode],
    )
    rows = cursor.fetchall()
    if not rows:
        return 0, {}
    by_config: dict[str, list[tuple[str, int]]] = {}
    for cfg, _, lexeme, chunks in rows:
        by_config.setdefault(cfg, []).append((lexeme, int(chunks)))
    return int(rows[0][1] or 0), by_config


def _plan_configs(by_config: dict[str, list[tuple[str, int]]], total: int,
                  ) -> tuple[list[_Clause], list[tuple[str, str, float]], list[tuple[str, str]]]:
    """The plans of all configurations together: every clause, most selective first; every
    term's weight; each configuration's ranking query."""
    clauses: list[_Clause] = []
    weights: list[tuple[str, str, float]] = []
    rank_queries: list[tuple[str, str]] = []
    for cfg, lexemes in by_config.items():
        cfg_clauses, cfg_weights, rank_query = _plan(cfg, lexemes, total)
        clauses += cfg_clauses
        weights += cfg_weights
        if rank_query:
            rank_queries.append((cfg, rank_query))
    clauses.sort(key=lambda c: c.estimate)
    return clauses, weights, rank_queries


def _score_sql(weights: list[tuple[str, str, float]], rank_queries: list[tuple[str, str]], *,
               several: bool) -> tuple[str, list]:
    """The score of a candidate and its parameters: the inverse document frequencies of the
    terms it contains, plus ts_rank_cd for how often and how close together they occur."""
    config_test = "c.search_config = %s AND " if several else ""
    score_parts, params = [], []
    for cfg, quoted, weight in weights:
        score_parts.append(f"CASE WHEN {config_test}c.search @@ %s::tsquery THEN %s ELSE 0 END")
        params += [*([cfg] if several else []), quoted, weight]
    if several:
        rank = ("ts_rank_cd(c.search, CASE c.search_config "
                + " ".join("WHEN %s THEN %s::tsquery" for _ in rank_queries) + " END, 32)")
        params += [p for q in rank_queries for p in q]
    else:
        rank = "ts_rank_cd(c.search, %s::tsquery, 32)"
        params.append(rank_queries[0][1])
    # ts_rank_cd scaled into [0, 0.5) (normalisation 32: rank / (rank + 1)), so that it orders
    # chunks that hold the same terms but never outweighs a rarer term.
    return f"{' + '.join(score_parts)} + 0.5 * {rank}", params


def _candidates_sql(clauses: list[_Clause], *, tenant: Tenant, livemode: bool, several: bool,
                    ) -> tuple[str, list]:
    """Candidates: chunks matching the most selective clauses first, at most CANDIDATES each.

    PostgreSQL runs the branches in order and stops once it has enough, so a common word costs
    no more than a rare one. The candidates carry their tsvector, so that scoring them reads no
    row twice.
    """
    config_test = "c.search_config = %s AND " if several else ""
    branches, params = [], []
    for clause in clauses:
        branches.append(
            "(SELECT c.id, c.document_id, c.heading, c.text, c.search_config, c.search "
            "FROM knowledge_chunk c WHERE c.tenant_id = %s AND c.livemode = %s AND "
            f"{config_test}c.search @@ %s::tsquery LIMIT %s)")
        params += [tenant.pk, livemode, *([clause.config] if several else []), clause.tsquery,
                   CANDIDATES]
    return " UNION ALL ".join(branches), params


def _first_of_each(rows: list[tuple]) -> list[tuple]:
    """The rows without the repeats of a chunk, in their order."""
    found, seen = [], set()
    for row in rows:
        if row[0] not in seen:
            seen.add(row[0])
            found.append(row)
    return found


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
