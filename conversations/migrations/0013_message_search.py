"""Full-text search of messages, on PostgreSQL only (``conversations.search``).

A stored generated column holds each message's words (``to_tsvector('simple', content)``: no
stemming and no stop words, as messages come in any language), and a GIN index starts with the
tenant (``btree_gin``, as the lead search's indexes do), so a tenant's search reads its own
entries. The database computes the column at every insert and update: no service can forget it,
and messages written around the services (a bulk load) are searchable too. Adding the column
rewrites the table once.

SQLite has neither: there search matches the words with ``LIKE`` over the tenant's messages.
The column and the index stay out of the model state, which must describe every database the
project runs on (leads/migrations/0002 and 0005 do the same).
"""

from django.db import migrations

COLUMN = ("ALTER TABLE conversations_message ADD COLUMN IF NOT EXISTS search_vector tsvector "
          "GENERATED ALWAYS AS (to_tsvector('simple'::regconfig, content)) STORED")
# fastupdate off: GIN would otherwise queue new entries in a pending list (up to 4 MB) that every
# search reads whole until a vacuum merges it.
INDEX = ('CREATE INDEX IF NOT EXISTS "message_search" ON "conversations_message" '
         'USING gin ("tenant_id", "search_vector") WITH (fastupdate = off)')


def add_search(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute("CREATE EXTENSION IF NOT EXISTS btree_gin")
    schema_editor.execute(COLUMN)
    schema_editor.execute(INDEX)
    schema_editor.execute('ANALYZE "conversations_message"')


def remove_search(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute('DROP INDEX IF EXISTS "message_search"')
    schema_editor.execute("ALTER TABLE conversations_message DROP COLUMN IF EXISTS search_vector")


class Migration(migrations.Migration):

    dependencies = [("conversations", "0012_inbox_tags_notes_replies_reads")]

    operations = [migrations.RunPython(add_search, remove_search, elidable=False)]
