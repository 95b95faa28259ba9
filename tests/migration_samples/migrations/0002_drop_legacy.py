# Refused: the previous release still reads the column.
from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("migration_samples", "0001_initial")]
    operations = [migrations.RemoveField("thing", "legacy")]
