# The funnel's stages become subsets of one another (docs/analytics.md, "GET
# /api/v1/analytics/funnel"): widget visits become visitor-days (loads, chats and leads of a
# visitor on a channel and a day), the channel rollup counts the visitor-days that produced no
# lead, the lead journey remembers its capturing visitor, and the lead rollup counts how far the
# leads created each day went.
#
# The new counters start at zero (the old widget visits keep their load, and count as visitors
# until then): run `manage.py rebuild_counts --all-tenants` once after this migration, which
# recomputes every rollup from the raw rows (docs/analytics.md, "Rollups").

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('analytics', '0003_event_to_core'),
        ('tenants', '0002_tenant_allowed_origins_tenant_booking_url_and_more'),
    ]

    operations = [
        migrations.RenameModel(old_name='WidgetVisit', new_name='VisitorDay'),
        migrations.RemoveConstraint(model_name='visitorday', name='widget_visit_once_a_day'),
        # Every row so far was one widget load.
        migrations.AddField(model_name='visitorday', name='loads',
                            field=models.IntegerField(default=1)),
        migrations.AlterField(model_name='visitorday', name='loads',
                              field=models.IntegerField(default=0)),
        migrations.AddField(model_name='visitorday', name='chats',
                            field=models.IntegerField(default=0)),
        migrations.AddField(model_name='visitorday', name='leads',
                            field=models.IntegerField(default=0)),
        migrations.AddConstraint(
            model_name='visitorday',
            constraint=models.UniqueConstraint(
                fields=('tenant', 'livemode', 'day', 'channel', 'visitor_id'),
                name='visitor_day_key'),
        ),
        migrations.RenameField(model_name='channeldailystat', old_name='visitors',
                               new_name='uncaptured_visitors'),
        migrations.AddField(model_name='channeldailystat', name='uncaptured_engaged',
                            field=models.IntegerField(default=0)),
        migrations.AddField(model_name='leadjourney', name='visitor_id',
                            field=models.CharField(blank=True, max_length=200)),
        migrations.AddField(model_name='leaddailystat', name='cohort_qualified',
                            field=models.IntegerField(default=0)),
        migrations.AddField(model_name='leaddailystat', name='cohort_booked',
                            field=models.IntegerField(default=0)),
        migrations.AddField(model_name='leaddailystat', name='cohort_converted',
                            field=models.IntegerField(default=0)),
    ]
