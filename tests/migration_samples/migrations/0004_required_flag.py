# Refused: Django drops the default after filling the rows, so the previous release's INSERTs,
# which do not name the column, fail on NOT NULL.
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("migration_samples", "0003_index_name")]
    operations = [migrations.AddField("thing", "flag", models.BooleanField(default=False))]
