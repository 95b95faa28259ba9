"""The analytics' legacy routes, under ``/api/``."""

from django.urls import path

from .legacy import LegacyAnalyticsViewSet

urlpatterns = [
    path("analytics/overview", LegacyAnalyticsViewSet.as_view({"get": "overview"}),
         name="legacy-analytics-overview"),
    path("analytics/funnel", LegacyAnalyticsViewSet.as_view({"get": "funnel"}),
         name="legacy-analytics-funnel"),
    path("analytics/activity", LegacyAnalyticsViewSet.as_view({"get": "activity"}),
         name="legacy-analytics-activity"),
]
