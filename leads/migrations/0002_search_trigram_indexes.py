"""Trigram indexes for lead search, on PostgreSQL only.

Search uses Django's ``icontains``, which PostgreSQL runs as ``UPPER(col::text) LIKE
UPPER('%term%')``; a GIN ``gin_trgm_ops`` index on exactly that expression serves it. SQLite has
neither pg_trgm nor GIN, so there the operation does nothing and search scans the tenant's rows.
The indexes stay out of the model state (they are not in ``Lead.Meta.indexes``) because the
state must describe every database the project runs on.
"""

from django.db import migrations

SEARCH_COLUMNS = {
    "lead_search_name": "name",
    "lead_search_email": "email",
    "lead_search_company": "company",
    "lead_search_custom": "custom_fields_text",
}


def create_indexes(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
    for name, column in SEARCH_COLUMNS.items():
        schema_editor.execute(
            f'CREATE INDEX IF NOT EXISTS "{name}" ON "leads_lead" '
            f'USING gin ((UPPER("{column}"::text)) gin_trgm_ops)'
        )


def drop_indexes(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for name in SEARCH_COLUMNS:
        schema_editor.execute(f'DROP INDEX IF EXISTS "{name}"')


class Migration(migrations.Migration):

    dependencies = [("leads", "0001_initial")]

    operations = [migrations.RunPython(create_indexes, drop_indexes, elidable=False)]
