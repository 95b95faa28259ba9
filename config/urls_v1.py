"""The v1 surface: everything under ``/api/v1/``. An unknown path there is a v1 404."""

from django.urls import path, re_path
from drf_spectacular.views import SpectacularJSONAPIView, SpectacularSwaggerView

from config.api.views import V1NotFoundView
from tenants.api.v1 import UserViewSet

# The documented API; the OpenAPI schema is generated from exactly these.
routes = [
    path("api/v1/users", UserViewSet.as_view({"get": "list"}), name="v1-users"),
    path("api/v1/users/<str:id>", UserViewSet.as_view({"get": "retrieve"}), name="v1-user"),
]

urlpatterns = [
    *routes,
    path(
        "api/v1/schema",
        SpectacularJSONAPIView.as_view(
            patterns=routes,
            custom_settings={
                "TITLE": "Sales Agent Service API (v1)",
                "SERVERS": [{"url": "/", "description": "This server"}],
            },
        ),
        name="v1-schema",
    ),
    path("api/v1/docs", SpectacularSwaggerView.as_view(url_name="v1-schema"), name="v1-docs"),
    re_path(r"^api/v1(?:/.*)?$", V1NotFoundView.as_view(), name="v1-not-found"),
]
