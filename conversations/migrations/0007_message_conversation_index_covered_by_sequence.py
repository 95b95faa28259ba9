"""Messages lose their index on ``conversation_id`` alone: the unique ``message_sequence``
(conversation, sequence) serves every lookup by conversation, and each message paid one more
index insert for it (docs/performance.md, "Chat").

Only the index is dropped: Django's own operation for ``db_index=False`` would also drop the
foreign key and add it again, which validates every row of a table that holds millions."""

import django.db.models.deletion
from django.db import migrations, models

INDEX = "conversations_message_conversation_id_f1a2d5e9"


class Migration(migrations.Migration):

    dependencies = [
        ("conversations", "0006_staff_invitation_email"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="message",
                    name="conversation",
                    field=models.ForeignKey(db_index=False,
                                            on_delete=django.db.models.deletion.CASCADE,
                                            related_name="messages",
                                            to="conversations.conversation"),
                ),
            ],
            database_operations=[
                migrations.RunSQL(
                    f'DROP INDEX IF EXISTS "{INDEX}"',
                    reverse_sql=f'CREATE INDEX IF NOT EXISTS "{INDEX}" ON "conversations_message" '
                                '("conversation_id")',
                ),
            ],
        ),
    ]
