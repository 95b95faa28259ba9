# The event log's own table name, and its ``data`` column becomes ``facts`` (stored vocabulary;
# 0003 rewrites the rows written in the old, v1-shaped form).

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('analytics', '0003_event_to_core'),
        ('core', '0001_initial'),
    ]

    operations = [
        migrations.AlterModelTable(name='event', table=None),
        migrations.RenameField(model_name='event', old_name='data', new_name='facts'),
        migrations.AlterField(
            model_name='event',
            name='type',
            field=models.CharField(choices=[('lead.created', 'Lead Created'), ('lead.updated', 'Lead Updated'), ('lead.qualified', 'Lead Qualified'), ('lead.converted', 'Lead Converted'), ('lead.deleted', 'Lead Deleted'), ('lead.score_changed', 'Lead Score Changed'), ('conversion.completed', 'Conversion Completed'), ('conversation.started', 'Conversation Started'), ('conversation.completed', 'Conversation Completed'), ('conversation.handoff', 'Conversation Handoff'), ('message.received', 'Message Received'), ('message.sent', 'Message Sent'), ('intent.high_value', 'Intent High Value'), ('meeting.booked', 'Meeting Booked'), ('conversation.lead_linked', 'Conversation Lead Linked'), ('conversation.assigned', 'Conversation Assigned'), ('conversation.handed_back', 'Conversation Handed Back'), ('conversation.deleted', 'Conversation Deleted')], max_length=40),
        ),
    ]
