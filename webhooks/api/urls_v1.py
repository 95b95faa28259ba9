"""The webhooks' v1 routes, under ``/api/v1/``."""

from django.urls import path

from .v1 import WebhookDeliveryViewSet, WebhookViewSet

urlpatterns = [
    path("webhooks", WebhookViewSet.as_view({"get": "list", "post": "create"}),
         name="v1-webhooks"),
    path("webhooks/deliveries/<str:id>/retry",
         WebhookDeliveryViewSet.as_view({"post": "retry"}), name="v1-webhook-delivery-retry"),
    path("webhooks/<str:id>",
         WebhookViewSet.as_view({"get": "retrieve", "patch": "partial_update",
                                 "delete": "destroy"}), name="v1-webhook"),
    path("webhooks/<str:id>/deliveries", WebhookViewSet.as_view({"get": "deliveries"}),
         name="v1-webhook-deliveries"),
]
