# Safe: the index is built without a lock on writes (outside a transaction).
from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations, models


class Migration(migrations.Migration):
    atomic = False
    dependencies = [("migration_samples", "0005_flag_with_db_default")]
    operations = [AddIndexConcurrently("thing", models.Index(fields=["active"],
                                                             name="thing_active"))]
