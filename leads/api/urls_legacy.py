"""The leads' legacy routes, under ``/api/``."""

from django.urls import path

from .legacy import LegacyAdminLeadViewSet, LegacyLeadViewSet

urlpatterns = [
    path("admin/leads", LegacyAdminLeadViewSet.as_view({"post": "create"}),
         name="legacy-admin-leads"),
    path("leads", LegacyLeadViewSet.as_view({"get": "list"}), name="legacy-leads"),
    path("leads/<str:id>",
         LegacyLeadViewSet.as_view({"get": "retrieve", "patch": "partial_update"}),
         name="legacy-lead"),
]
