from django.apps import AppConfig


class TenantsConfig(AppConfig):
    name = "tenants"
    verbose_name = "Tenants and users"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from corsheaders.signals import check_request_enabled

        from .cors import allow_tenant_origins

        check_request_enabled.connect(allow_tenant_origins, dispatch_uid="tenant-widget-origins")
