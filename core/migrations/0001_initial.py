# The event log moves from the analytics app to core. The table stays as it is: this migration
# only tells Django's state that core now owns it (analytics 0003 forgets it there).

import django.db.models.deletion
import django.utils.timezone
import uuid
from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('analytics', '0002_rollups'),
        ('leads', '0002_search_trigram_indexes'),
        ('tenants', '0001_initial'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name='Event',
                    fields=[
                        ('id', models.UUIDField(default=uuid.uuid4, editable=False, primary_key=True, serialize=False)),
                        ('livemode', models.BooleanField()),
                        ('type', models.CharField(max_length=40)),
                        ('conversation_id', models.UUIDField(blank=True, null=True)),
                        ('description', models.CharField(max_length=500)),
                        ('data', models.JSONField(default=dict)),
                        ('occurred_at', models.DateTimeField(default=django.utils.timezone.now)),
                        ('lead', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='events', to='leads.lead')),
                        ('tenant', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='events', to='tenants.tenant')),
                    ],
                    options={
                        'db_table': 'analytics_event',
                        'ordering': ['-occurred_at', '-id'],
                        'indexes': [models.Index(fields=['tenant', 'livemode', 'occurred_at', 'id'], name='event_feed'), models.Index(fields=['tenant', 'livemode', 'type', 'occurred_at', 'id'], name='event_feed_type'), models.Index(condition=models.Q(('conversation_id__isnull', False)), fields=['conversation_id'], name='event_conversation')],
                    },
                ),
            ],
            database_operations=[],
        ),
    ]
