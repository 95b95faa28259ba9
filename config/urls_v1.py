"""The v1 surface: everything under ``/api/v1/``, one include per app. An unknown path there is
a v1 404."""

from django.urls import include, path, re_path

from config.api.views import SchemaView, SwaggerView, V1NotFoundView

# The documented API; the OpenAPI schema is generated from exactly these.
routes = [
    path("api/v1/", include(f"{app}.api.urls_v1"))
    for app in ("tenants", "leads", "conversations", "webhooks", "analytics", "knowledge", "privacy")
]

urlpatterns = [
    *routes,
    path(
        "api/v1/schema",
        SchemaView.as_view(
            patterns=routes,
            custom_settings={
                "TITLE": "Sales Agent Service API (v1)",
                "SERVERS": [{"url": "/", "description": "This server"}],
            },
        ),
        name="v1-schema",
    ),
    path("api/v1/docs", SwaggerView.as_view(url_name="v1-schema"), name="v1-docs"),
    re_path(r"^api/v1(?:/.*)?$", V1NotFoundView.as_view(), name="v1-not-found"),
]
