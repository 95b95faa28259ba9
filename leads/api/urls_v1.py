"""The leads' v1 routes, under ``/api/v1/``."""

from django.urls import path

from .v1 import LeadViewSet

urlpatterns = [
    path("leads", LeadViewSet.as_view({"get": "list", "post": "create"}), name="v1-leads"),
    # Before leads/<id>: "search" is not a lead id.
    path("leads/search", LeadViewSet.as_view({"get": "search"}), name="v1-leads-search"),
    path("leads/<str:id>",
         LeadViewSet.as_view({"get": "retrieve", "patch": "partial_update", "delete": "destroy"}),
         name="v1-lead"),
]
