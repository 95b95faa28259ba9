"""Privacy's v1 routes, under ``/api/v1/``."""

from django.urls import path

from .v1 import ErasureViewSet, ExportViewSet, RetentionSettingsView

urlpatterns = [
    path("privacy/erasures", ErasureViewSet.as_view({"get": "list", "post": "create"}),
         name="v1-privacy-erasures"),
    path("privacy/erasures/<str:id>", ErasureViewSet.as_view({"get": "retrieve"}),
         name="v1-privacy-erasure"),
    path("privacy/exports", ExportViewSet.as_view({"get": "export"}), name="v1-privacy-exports"),
    path("settings/retention", RetentionSettingsView.as_view(), name="v1-settings-retention"),
]
