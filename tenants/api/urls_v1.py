"""The tenants' v1 routes, under ``/api/v1/``."""

from django.urls import path

from .v1 import ConsentSettingsView, PhrasingsView, PhrasingView, UserViewSet

urlpatterns = [
    path("users", UserViewSet.as_view({"get": "list"}), name="v1-users"),
    path("users/<str:id>", UserViewSet.as_view({"get": "retrieve"}), name="v1-user"),
    path("agent/phrasings", PhrasingsView.as_view(), name="v1-agent-phrasings"),
    path("agent/phrasings/<str:id>", PhrasingView.as_view(), name="v1-agent-phrasing"),
    path("settings/consent", ConsentSettingsView.as_view(), name="v1-settings-consent"),
]
