"""Django's admin app with the service's admin site (``dashboard.admin_site.AdminSite``), which
asks for the second factor like the dashboard's sign-in. Its own module, loaded while the app
registry is being built: it imports nothing of the project."""

from django.contrib.admin.apps import AdminConfig as DjangoAdminConfig


class AdminConfig(DjangoAdminConfig):
    default_site = "dashboard.admin_site.AdminSite"
