"""The analytics' v1 routes, under ``/api/v1/``."""

from django.urls import path

from .v1 import AnalyticsViewSet

urlpatterns = [
    path("analytics/overview", AnalyticsViewSet.as_view({"get": "overview"}),
         name="v1-analytics-overview"),
    path("analytics/funnel", AnalyticsViewSet.as_view({"get": "funnel"}),
         name="v1-analytics-funnel"),
    path("analytics/activity", AnalyticsViewSet.as_view({"get": "activity"}),
         name="v1-analytics-activity"),
]
