"""The search rows of leads (``LeadSearch``) and their word counts (``LeadSearchWord``): written
beside every lead write, rebuilt on demand, and the SQL that finds a term in them.

A search used to test ``UPPER(column) LIKE`` on four columns of the lead itself, through four
trigram indexes that knew no tenant: every match (and every other tenant's match) sent
PostgreSQL to a wide lead row to upper-case and recheck four values, and a term of two
characters read every lead of the tenant. A search row holds the values upper-cased once, on
write, in one ``text`` column beside the few columns a search filters and sorts on; GIN
indexes that start with the tenant find its trigrams and bigrams. The word counts
give the exact total of a term that lies inside a single word without visiting its matches
(docs/decisions.md, "Lead search reads its own tables").
"""

from __future__ import annotations

import re
import uuid
from collections import Counter
from typing import Any

from django.db import connection, transaction

from core.sql import add_to_counters
from core.sql import quote as _q

from .models import Lead, LeadDailyCount, LeadSearch, LeadSearchWord

# Between the values in ``LeadSearch.text``: the ASCII unit separator, which no term a user types
# contains. A term that does contain it could match across two values, so it is searched in the
# leads themselves (``needs_lead_columns``).
SEPARATOR = "\x1f"
# A word: a run of ASCII letters and digits and of any character beyond ASCII. Every other ASCII
# character separates words, so a term made only of word characters that occurs in a text
# occurs inside one of its words.
_WORD = re.compile(r"[0-9A-Za-z\u0080-\U0010ffff]+")
# pg_trgm finds a LIKE term by its trigrams only when it has three letters or digits in a row;
# other terms (two characters, "a b") are found by their bigrams.
_TRIGRAM = re.compile(r"[^\W_]{3}")

_TABLE = _q(LeadSearch._meta.db_table)
_LEADS = _q(Lead._meta.db_table)
_COLUMNS = ("lead_id", "tenant_id", "livemode", "status", "source", "created_at",
            "last_active_at", "text", "custom_at")
# The lead's searched values, upper-cased by the database (as the old ``icontains`` was), and
# the length of the part legacy search reads (name, email, company).
_SELECT = ('SELECT "id", "tenant_id", "livemode", "status", "source", "created_at", '
           '"last_active_at", UPPER("name" || %s || "email" || %s || "company" || %s || '
           '"custom_fields_text"), LENGTH(UPPER("name" || %s || "email" || %s || "company")) '
           f"FROM {_LEADS}")
_SELECT_PARAMS = [SEPARATOR] * 5
_INSERT = f"INSERT INTO {_TABLE} ({', '.join(_q(c) for c in _COLUMNS)}) "
_UPSERT = (f'{_INSERT}{_SELECT} WHERE "id" = %s ON CONFLICT ("lead_id") DO UPDATE SET '
           + ", ".join(f"{_q(c)} = excluded.{_q(c)}" for c in _COLUMNS[1:])
           + ' RETURNING "text", "custom_at"')

Words = tuple[frozenset[str], frozenset[str]]  # of the whole text, of name, email and company
_NO_WORDS: Words = (frozenset(), frozenset())


def _words(text: str, custom_at: int) -> Words:
    return frozenset(_WORD.findall(text)), frozenset(_WORD.findall(text[:custom_at]))


def _db_id(lead_id: uuid.UUID) -> Any:
    return Lead._meta.pk.get_db_prep_value(lead_id, connection)


def _stored_words(lead_id: uuid.UUID) -> Words:
    with connection.cursor() as cursor:
        cursor.execute(f'SELECT "text", "custom_at" FROM {_TABLE} WHERE "lead_id" = %s',
                       [_db_id(lead_id)])
        found = cursor.fetchone()
    return _words(*found) if found else _NO_WORDS


def _count_words(lead: Lead, *, before: Words, after: Words) -> None:
    deltas: dict[tuple[Any, ...], Counter[str]] = {}
    for index, counter in enumerate(("count", "base_count")):
        for word in after[index] - before[index]:
            deltas.setdefault((lead.tenant_id, lead.livemode, word), Counter())[counter] += 1
        for word in before[index] - after[index]:
            deltas.setdefault((lead.tenant_id, lead.livemode, word), Counter())[counter] -= 1
    add_to_counters(LeadSearchWord, key=("tenant", "livemode", "word"),
                    counters=("count", "base_count"),
                    deltas={key: dict(change) for key, change in deltas.items()})


def lead_search_write(lead: Lead, *, created: bool = False) -> None:
    """Writes the lead's search row from its saved values, and moves its word counts: called by
    every lead service after it saved the lead, inside its transaction."""
    before = _NO_WORDS if created else _stored_words(lead.pk)
    with connection.cursor() as cursor:
        cursor.execute(_UPSERT, [*_SELECT_PARAMS, _db_id(lead.pk)])
        after = _words(*cursor.fetchone())
    if after != before:
        _count_words(lead, before=before, after=after)


def lead_search_forget(lead: Lead) -> None:
    """Takes the lead's words out of the counts; its row goes with the lead (a cascade)."""
    _count_words(lead, before=_stored_words(lead.pk), after=_NO_WORDS)


def lead_search_touch(*, lead_id: uuid.UUID, last_active_at: Any) -> None:
    """The lead's last activity moved and nothing else (``lead_seen``)."""
    LeadSearch.objects.filter(lead_id=lead_id).update(last_active_at=last_active_at)


@transaction.atomic
def lead_search_rebuild(*, tenant_id: Any, livemode: bool) -> int:
    """Recomputes the search rows and word counts of a tenant and mode from its leads (for leads
    written around the services: bulk loads, repairs); returns how many rows."""
    tenant = LeadSearch._meta.get_field("tenant").get_db_prep_value(tenant_id, connection)
    with connection.cursor() as cursor:
        cursor.execute(f'DELETE FROM {_TABLE} WHERE "tenant_id" = %s AND "livemode" = %s',
                       [tenant, livemode])
        cursor.execute(f'{_INSERT}{_SELECT} WHERE "tenant_id" = %s AND "livemode" = %s',
                       [*_SELECT_PARAMS, tenant, livemode])
        rows = cursor.rowcount
    LeadSearchWord.objects.filter(tenant_id=tenant_id, livemode=livemode).delete()
    counts: Counter[str] = Counter()
    base_counts: Counter[str] = Counter()
    texts = (LeadSearch.objects.filter(tenant_id=tenant_id, livemode=livemode)
             .values_list("text", "custom_at").iterator(chunk_size=10_000))
    for text, custom_at in texts:
        words, base_words = _words(text, custom_at)
        counts.update(words)
        base_counts.update(base_words)
    LeadSearchWord.objects.bulk_create(
        (LeadSearchWord(tenant_id=tenant_id, livemode=livemode, word=word, count=n,
                        base_count=base_counts[word]) for word, n in counts.items()),
        batch_size=5000)
    return rows


def needs_lead_columns(q: str) -> bool:
    """A term with the separator in it: only the leads' own columns can tell a match inside one
    value from one across two."""
    return SEPARATOR in q


def _like(q: str) -> tuple[str, str]:
    """The ``LIKE`` pattern of ``q`` (wildcards literal) and the clause that follows it."""
    escape = " ESCAPE '\\'" if connection.vendor == "sqlite" else ""  # PostgreSQL's default
    return f"%{connection.ops.prep_for_like_query(q)}%", escape


def match_condition(q: str, *, with_custom_fields: bool) -> tuple[str, list[Any]]:
    """SQL (on ``LeadSearch`` columns) true for the rows whose values contain ``q``,
    case-insensitively, ``%`` and ``_`` literal; custom field values only if
    ``with_custom_fields``. On PostgreSQL a term without a trigram also tests its bigrams, which
    the bigram index answers (and which the ``LIKE`` then confirms)."""
    pattern, escape = _like(q)
    sql = f'"text" LIKE UPPER(%s){escape}'
    params: list[Any] = [pattern]
    if not with_custom_fields:
        sql += f' AND SUBSTR("text", 1, "custom_at") LIKE UPPER(%s){escape}'
        params.append(pattern)
    if connection.vendor == "postgresql" and not _TRIGRAM.search(q):
        sql += ' AND lead_search_bigrams("text") @> lead_search_bigrams(UPPER(%s))'
        params.append(q)
    return sql, params


def word_total(*, tenant_id: Any, livemode: bool, q: str,
               with_custom_fields: bool) -> tuple[int, int] | None:
    """The exact number of the tenant's leads in this mode that contain ``q``, and how many
    leads the tenant has in this mode, when the word counts can tell (``q`` is made of word
    characters, has a trigram to find its words by, and lies inside one word only); else None.
    One statement."""
    if not _TRIGRAM.search(q) or _WORD.fullmatch(q) is None:
        return None
    counter = "count" if with_custom_fields else "base_count"
    pattern, escape = _like(q)
    tenant = LeadSearch._meta.get_field("tenant").get_db_prep_value(tenant_id, connection)
    # The words in a fence: planned for all of them, as they are few, the words' trigrams are
    # read; planned for the first two, PostgreSQL would rather read the words in turn.
    fence = "MATERIALIZED " if connection.vendor == "postgresql" else ""
    sql = (f"WITH words AS {fence}(SELECT {_q(counter)} AS n "
           f'FROM {_q(LeadSearchWord._meta.db_table)} WHERE "tenant_id" = %s AND "livemode" = %s '
           f'AND "word" LIKE UPPER(%s){escape} AND {_q(counter)} > 0) '
           f'SELECT n, (SELECT SUM("count") FROM {_q(LeadDailyCount._meta.db_table)} '
           f'WHERE "tenant_id" = %s AND "livemode" = %s) FROM words LIMIT 2')
    with connection.cursor() as cursor:
        cursor.execute(sql, [tenant, livemode, pattern, tenant, livemode])
        found = cursor.fetchall()
    if len(found) > 1:
        return None
    return (found[0][0], int(found[0][1] or 0)) if found else (0, 0)
