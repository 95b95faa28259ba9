"""The knowledge base's v1 routes, under ``/api/v1/``."""

from django.urls import path

from .v1 import DocumentViewSet

urlpatterns = [
    path("knowledge-base", DocumentViewSet.as_view({"get": "list", "post": "create"}),
         name="v1-knowledge-base"),
    path("knowledge-base/<str:id>",
         DocumentViewSet.as_view({"get": "retrieve", "delete": "destroy"}),
         name="v1-knowledge-base-document"),
]
