"""The legacy admin sign-in, under ``/api/``."""

from django.urls import path

from .legacy import AdminAuthView

urlpatterns = [
    path("admin/auth", AdminAuthView.as_view(), name="legacy-admin-auth"),
]
