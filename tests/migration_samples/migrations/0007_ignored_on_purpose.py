# Refused but for its IgnoreMigration: a reviewed exception (docs/deploy.md).
from django.db import migrations
from django_migration_linter import IgnoreMigration


class Migration(migrations.Migration):
    dependencies = [("migration_samples", "0006_concurrent_index")]
    operations = [IgnoreMigration(), migrations.RemoveField("thing", "name")]
