"""The knowledge base's legacy routes, under ``/api/``."""

from django.urls import path

from .legacy import LegacyDocumentViewSet

urlpatterns = [
    path("admin/knowledge-base",
         LegacyDocumentViewSet.as_view({"get": "list", "post": "create"}),
         name="legacy-knowledge-base"),
    path("admin/knowledge-base/<str:id>",
         LegacyDocumentViewSet.as_view({"get": "retrieve", "delete": "destroy"}),
         name="legacy-knowledge-base-document"),
]
