"""Legacy surface of analytics: ``/api/analytics/overview``, ``/funnel`` and ``/activity``.

All-time figures in the caller's mode (the admin cookie acts on live data). The overview comes
wrapped as ``{overview: {...}}``, like the legacy surface's other objects (docs/analytics.md).
"""

from __future__ import annotations

from django.utils import timezone
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response

from config.api.schema import legacy_errors
from config.api.views import LegacyViewSet
from core.models import Event

from .. import selectors

_Overview = inline_serializer(name="LegacyAnalyticsOverview", fields={
    "overview": inline_serializer(name="LegacyAnalyticsOverviewFigures", fields={
        "totalLeads": serializers.IntegerField(help_text="Leads captured, all time"),
        "totalConversations": serializers.IntegerField(help_text="Conversations, all time"),
        "avgMessagesPerConversation": serializers.FloatField(),
        "conversionRate": serializers.FloatField(
            help_text="Percentage (0-100) of leads that reached qualified or booked"),
    }),
})
_Funnel = inline_serializer(name="LegacyAnalyticsFunnel", fields={
    "funnel": inline_serializer(name="LegacyAnalyticsFunnelCounts", fields={
        status: serializers.IntegerField()
        for status in ("new", "qualifying", "qualified", "booked", "disqualified", "nurturing")
    }),
})
_Activity = inline_serializer(name="LegacyAnalyticsActivity", fields={
    "activity": inline_serializer(name="LegacyAnalyticsActivityDay", many=True, fields={
        "date": serializers.DateField(help_text="UTC day"),
        "count": serializers.IntegerField(help_text="Leads created that day"),
    }),
})


class LegacyAnalyticsViewSet(LegacyViewSet):
    queryset = Event.objects.all()

    @extend_schema(operation_id="legacy_analytics_overview", responses={200: _Overview,
                                                                        **legacy_errors()})
    def overview(self, request):
        return Response({"overview": selectors.legacy_overview(**self.owner())})

    @extend_schema(operation_id="legacy_analytics_funnel", responses={200: _Funnel,
                                                                      **legacy_errors()})
    def funnel(self, request):
        return Response({"funnel": selectors.legacy_funnel(**self.owner())})

    @extend_schema(operation_id="legacy_analytics_activity", responses={200: _Activity,
                                                                        **legacy_errors()})
    def activity(self, request):
        return Response({"activity": selectors.legacy_activity(
            **self.owner(), today=timezone.now().date())})
