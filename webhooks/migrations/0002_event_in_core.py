# Deliveries point at the event log in its new app (core); the column and its constraint stay.

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('core', '0001_initial'),
        ('webhooks', '0001_initial'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name='delivery',
                    name='event',
                    field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='core.event'),
                ),
            ],
            database_operations=[],
        ),
    ]
