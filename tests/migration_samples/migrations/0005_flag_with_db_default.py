# Safe: the default stays in the database, for the previous release's INSERTs.
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("migration_samples", "0004_required_flag")]
    operations = [migrations.AddField("thing", "active", models.BooleanField(db_default=True))]
