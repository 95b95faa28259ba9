"""The v1 surface: everything under ``/api/v1/``. An unknown path there is a v1 404."""

from django.urls import path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from config.api.views import V1NotFoundView
from leads.api.v1 import LeadViewSet
from tenants.api.v1 import UserViewSet

# The documented API; the OpenAPI schema is generated from exactly these.
routes = [
    path("api/v1/users", UserViewSet.as_view({"get": "list"}), name="v1-users"),
    path("api/v1/users/<str:id>", UserViewSet.as_view({"get": "retrieve"}), name="v1-user"),
    path("api/v1/leads", LeadViewSet.as_view({"get": "list", "post": "create"}),
         name="v1-leads"),
    # Before leads/<id>: "search" is not a lead id.
    path("api/v1/leads/search", LeadViewSet.as_view({"get": "search"}), name="v1-leads-search"),
    path("api/v1/leads/<str:id>",
         LeadViewSet.as_view({"get": "retrieve", "patch": "partial_update", "delete": "destroy"}),
         name="v1-lead"),
]

urlpatterns = [
    *routes,
    path(
        "api/v1/schema",
        SpectacularAPIView.as_view(
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
