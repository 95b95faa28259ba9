from django.apps import AppConfig


class TenantsConfig(AppConfig):
    name = "tenants"
    verbose_name = "Tenants and users"
    default_auto_field = "django.db.models.BigAutoField"
