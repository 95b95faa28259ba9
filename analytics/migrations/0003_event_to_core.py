# The event log now belongs to core (core 0001); its table is untouched here.

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('analytics', '0002_rollups'),
        ('core', '0001_initial'),
        ('webhooks', '0002_event_in_core'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.DeleteModel(name='Event')],
            database_operations=[],
        ),
    ]
