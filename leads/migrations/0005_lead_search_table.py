"""Lead search reads its own tables (``LeadSearch``, ``LeadSearchWord``; docs/decisions.md): one
narrow row per lead with its searched values upper-cased once, and per tenant and mode how many
leads have each word. Both are filled here from the leads there are.

On PostgreSQL, GIN indexes that start with the tenant (``btree_gin``) replace the four
trigram indexes of migration 0002, which knew no tenant: trigrams of the text, its bigrams
through ``lead_search_bigrams`` (pg_trgm finds no term shorter than three characters), and
trigrams of the words. SQLite has neither: there search reads the tenant's rows. The GIN
indexes and the function stay out of the model state, which must describe every database the
project runs on.
"""

import re
from collections import Counter

import django.db.models.deletion
from django.db import migrations, models

OLD_INDEXES = {
    "lead_search_name": "name",
    "lead_search_email": "email",
    "lead_search_company": "company",
    "lead_search_custom": "custom_fields_text",
}

# The characters of a text, two by two; GIN keeps each distinct pair once per row.
BIGRAMS_FUNCTION = r"""
CREATE OR REPLACE FUNCTION lead_search_bigrams(value text) RETURNS text[]
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
  chars text[] := regexp_split_to_array(value, '');
  found text[] := '{}';
BEGIN
  FOR i IN 1 .. coalesce(array_length(chars, 1), 0) - 1 LOOP
    found[i] := chars[i] || chars[i + 1];
  END LOOP;
  RETURN found;
END
$$
"""

# The tenant first (btree_gin): a tenant's search reads its own entries only. Not the mode: the
# planner turns "livemode = true" into the bare column, which no GIN operator class matches.
NEW_INDEXES = {
    "lead_search_text_trigrams": ("leads_leadsearch", '"tenant_id", "text" gin_trgm_ops'),
    "lead_search_text_bigrams": ("leads_leadsearch", '"tenant_id", lead_search_bigrams("text")'),
    "lead_search_word_trigrams": ("leads_leadsearchword", '"tenant_id", "word" gin_trgm_ops'),
}

# leads.search's text: the values upper-cased and joined by the unit separator (name, email,
# company, custom field values), and the length of the first three.
FILL = """
INSERT INTO "leads_leadsearch" ("lead_id", "tenant_id", "livemode", "status", "source",
    "created_at", "last_active_at", "text", "custom_at")
SELECT "id", "tenant_id", "livemode", "status", "source", "created_at", "last_active_at",
    UPPER("name" || %s || "email" || %s || "company" || %s || "custom_fields_text"),
    LENGTH(UPPER("name" || %s || "email" || %s || "company"))
FROM "leads_lead"
"""
WORD = re.compile(r"[0-9A-Za-z\u0080-\U0010ffff]+")  # as leads.search._WORD


def fill_words(apps):
    search, word = apps.get_model("leads", "LeadSearch"), apps.get_model("leads", "LeadSearchWord")
    counts, base_counts = Counter(), Counter()
    rows = search.objects.values_list("tenant_id", "livemode", "text", "custom_at")
    for tenant_id, livemode, text, custom_at in rows.iterator(chunk_size=10_000):
        counts.update((tenant_id, livemode, w) for w in set(WORD.findall(text)))
        base_counts.update((tenant_id, livemode, w) for w in set(WORD.findall(text[:custom_at])))
    word.objects.bulk_create(
        (word(tenant_id=key[0], livemode=key[1], word=key[2], count=n, base_count=base_counts[key])
         for key, n in counts.items()), batch_size=5000)


def fill_and_index(apps, schema_editor):
    schema_editor.execute(FILL, ["\x1f"] * 5)
    fill_words(apps)
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
    schema_editor.execute("CREATE EXTENSION IF NOT EXISTS btree_gin")
    schema_editor.execute(BIGRAMS_FUNCTION)
    # fastupdate off: GIN would otherwise queue new entries in a pending list (up to 4 MB) that
    # every search reads whole until a vacuum merges it; lead writes add a handful of entries.
    for name, (table, columns) in NEW_INDEXES.items():
        schema_editor.execute(f'CREATE INDEX "{name}" ON "{table}" USING gin ({columns}) '
                              "WITH (fastupdate = off)")
    for name in OLD_INDEXES:
        schema_editor.execute(f'DROP INDEX IF EXISTS "{name}"')
    schema_editor.execute('ANALYZE "leads_leadsearch"')
    schema_editor.execute('ANALYZE "leads_leadsearchword"')


def unindex(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for name, column in OLD_INDEXES.items():
        schema_editor.execute(
            f'CREATE INDEX IF NOT EXISTS "{name}" ON "leads_lead" '
            f'USING gin ((UPPER("{column}"::text)) gin_trgm_ops)'
        )
    for name in NEW_INDEXES:
        schema_editor.execute(f'DROP INDEX IF EXISTS "{name}"')
    schema_editor.execute("DROP FUNCTION IF EXISTS lead_search_bigrams(text)")


class Migration(migrations.Migration):

    dependencies = [
        ('leads', '0004_sort_counts'),
        ('tenants', '0004_meetings_and_email'),
    ]

    operations = [
        migrations.CreateModel(
            name='LeadSearch',
            fields=[
                ('lead', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, primary_key=True, related_name='+', serialize=False, to='leads.lead')),
                ('livemode', models.BooleanField()),
                ('status', models.CharField(choices=[('new', 'New'), ('qualifying', 'Qualifying'), ('qualified', 'Qualified'), ('booked', 'Meeting booked'), ('contacted', 'Contacted'), ('nurturing', 'Nurturing'), ('converted', 'Converted'), ('lost', 'Lost')], max_length=12)),
                ('source', models.CharField(choices=[('chat', 'Chat'), ('api', 'API'), ('import', 'Import'), ('form', 'Form')], max_length=10)),
                ('created_at', models.DateTimeField()),
                ('last_active_at', models.DateTimeField()),
                ('text', models.TextField()),
                ('custom_at', models.PositiveIntegerField()),
                ('tenant', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='tenants.tenant')),
            ],
            options={
                'indexes': [models.Index(fields=['tenant', 'livemode', 'last_active_at', 'lead'], name='lead_search_active'), models.Index(fields=['tenant', 'livemode', 'created_at', 'lead'], name='lead_search_created')],
            },
        ),
        migrations.CreateModel(
            name='LeadSearchWord',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('livemode', models.BooleanField()),
                ('word', models.TextField()),
                ('count', models.IntegerField(default=0)),
                ('base_count', models.IntegerField(default=0)),
                ('tenant', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='tenants.tenant')),
            ],
            options={
                'constraints': [models.UniqueConstraint(fields=('tenant', 'livemode', 'word'), name='lead_search_word_key')],
            },
        ),
        migrations.RunPython(fill_and_index, unindex, elidable=False),
    ]
