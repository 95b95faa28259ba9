from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True
    dependencies: list = []
    operations = [
        migrations.CreateModel("Thing", fields=[
            ("id", models.BigAutoField(primary_key=True)),
            ("name", models.CharField(max_length=50)),
            ("legacy", models.CharField(max_length=50, null=True)),
        ]),
    ]
