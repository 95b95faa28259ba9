# Refused: CREATE INDEX without CONCURRENTLY stops writes to the table while it builds.
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("migration_samples", "0002_drop_legacy")]
    operations = [migrations.AddIndex("thing", models.Index(fields=["name"], name="thing_name"))]
