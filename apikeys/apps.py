from django.apps import AppConfig


class ApikeysConfig(AppConfig):
    name = "apikeys"
    verbose_name = "API keys"
    default_auto_field = "django.db.models.BigAutoField"
