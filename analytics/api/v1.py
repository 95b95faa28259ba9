"""v1 surface of analytics: ``/api/v1/analytics/overview``, ``/funnel`` and ``/activity``.

Query parameters are validated by the serializers below (400 with field details: a malformed
date is ``invalid_format``, an unknown enum value ``invalid_enum``); a well-formed range that
runs backwards or spans more than 365 days is 422 ``unprocessable``. All days are UTC days.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta
from typing import Any

from django.utils import timezone
from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import serializers
from rest_framework.response import Response

from config.api.fields import PrefixedIdField, TimestampField
from config.api.query import RANGE_HELP, DateOrDateTimeField, DayField, PageQuery, parse_query
from config.api.schema import paginated, v1_errors
from config.api.views import V1ViewSet
from conversations.models import Channel
from core.errors import FieldError, Unprocessable
from core.events import payload
from core.ids import encode
from core.models import Event
from core.pagination import paginate
from core.timestamps import format_timestamp
from leads.vocabulary import LeadSource

from .. import selectors
from ..models import ACTIVITY_TYPES

ACTIVITY_TYPE_VALUES = sorted(ACTIVITY_TYPES)
DEFAULT_DAYS = 30
ACTIVITY_DEFAULT_WINDOW = timedelta(hours=24)


# --- output shapes (schema) -----------------------------------------------------------------

class PeriodSerializer(serializers.Serializer):
    startDate = serializers.DateField()
    endDate = serializers.DateField()


class SummarySerializer(serializers.Serializer):
    totalConversations = serializers.IntegerField(help_text="Conversations started in the period")
    totalLeads = serializers.IntegerField(help_text="Leads created in the period")
    qualifiedLeads = serializers.IntegerField(
        help_text="Leads that first became qualified in the period")
    conversionRate = serializers.FloatField(
        help_text="Conversations of the period that produced a lead, as a fraction of them")
    avgLeadScore = serializers.FloatField(help_text="Mean current score of the period's new leads")
    avgResponseTime = serializers.FloatField(
        help_text="Mean seconds from a visitor message to the agent's reply")
    avgMessagesPerConversation = serializers.FloatField()
    handoffRate = serializers.FloatField(help_text="Fraction of the period's conversations handed off")
    totalRevenuePipeline = serializers.FloatField(
        help_text="qualifiedLeads times the tenant's estimated deal value, USD")


_COMPARED = {
    "type": "object",
    "properties": {
        "value": {"type": "number", "description": "The figure over the comparison period"},
        "change": {"type": "number", "nullable": True,
                   "description": "(current - earlier) / earlier; null when the earlier is 0"},
    },
    "required": ["value", "change"],
}
_DATE = {"type": "string", "format": "date"}


# Spelled out rather than a nested serializer: a nullable reference (allOf + nullable) is not
# read as nullable by every OpenAPI 3.0 tool.
@extend_schema_field({
    "type": "object",
    "nullable": True,
    "description": "null unless compareWith is given",
    "properties": {
        "period": {"type": "object", "properties": {"startDate": _DATE, "endDate": _DATE},
                   "required": ["startDate", "endDate"]},
        **{name: _COMPARED for name in ("totalConversations", "totalLeads", "qualifiedLeads",
                                        "conversionRate")},
    },
    "required": ["period", "totalConversations", "totalLeads", "qualifiedLeads",
                 "conversionRate"],
})
class ComparisonField(serializers.DictField):
    pass


class TimeSeriesItemSerializer(serializers.Serializer):
    period = serializers.CharField(help_text="<start>/<end>, ISO dates, both included")
    conversations = serializers.IntegerField()
    leads = serializers.IntegerField()
    qualifiedLeads = serializers.IntegerField()
    conversionRate = serializers.FloatField()


class OverviewSerializer(serializers.Serializer):
    period = PeriodSerializer()
    summary = SummarySerializer()
    comparison = ComparisonField(allow_null=True)
    timeSeries = TimeSeriesItemSerializer(many=True)


class StageSerializer(serializers.Serializer):
    name = serializers.ChoiceField(choices=selectors.FUNNEL_STAGES)
    count = serializers.IntegerField(
        help_text="Of the people who entered the funnel in the period, how many reached this "
                  "stage (or a later one); at most the previous stage's count")
    conversionToNext = serializers.FloatField(
        allow_null=True, min_value=0, max_value=1,
        help_text="Next stage's count / this one's, from 0 to 1; null on the last stage and "
                  "where this stage is 0")


class FunnelSerializer(serializers.Serializer):
    period = PeriodSerializer()
    stages = StageSerializer(many=True)
    overallConversion = serializers.FloatField(
        min_value=0, max_value=1, help_text="Converted / Visitors; 0 when there were no visitors")
    topDropoffStage = serializers.ChoiceField(
        choices=selectors.FUNNEL_STAGES,
        help_text="The stage with the lowest conversionToNext, the earliest on a tie; "
                  "Visitors when every count is 0")


class ActivityEventSerializer(serializers.Serializer):
    id = serializers.CharField(help_text="evt_ followed by 32 hex digits")
    type = serializers.ChoiceField(choices=ACTIVITY_TYPE_VALUES)
    leadId = serializers.CharField(allow_null=True)
    conversationId = serializers.CharField(allow_null=True)
    description = serializers.CharField()
    metadata = serializers.DictField(help_text="The event's data; its content varies by type")
    occurredAt = TimestampField()


def activity_event(event: Event) -> dict[str, Any]:
    return {
        "id": encode("evt", event.pk),
        "type": event.type,
        "leadId": encode("lead", event.lead_id),
        "conversationId": encode("conv", event.conversation_id),
        "description": event.description,
        "metadata": payload(event, "v1"),
        "occurredAt": format_timestamp(event.occurred_at),
    }


# --- input ----------------------------------------------------------------------------------

class RangeQuery(serializers.Serializer):
    startDate = DayField(required=False, help_text=(
        f"ISO 8601 date, UTC (default: 30 days before endDate). {RANGE_HELP}"))
    endDate = DayField(required=False, help_text=f"ISO 8601 date, UTC (default: today). {RANGE_HELP}")


class OverviewQuery(RangeQuery):
    granularity = serializers.ChoiceField(choices=selectors.GRANULARITIES, default="day")
    compareWith = serializers.ChoiceField(choices=selectors.COMPARISONS, required=False)


class FunnelQuery(RangeQuery):
    channel = serializers.ChoiceField(choices=Channel.values, required=False)
    source = serializers.ChoiceField(choices=LeadSource.values, required=False)


# Activity types separated by commas, with spaces around them if need be.
_TYPE = "(?:" + "|".join(t.replace(".", r"\.") for t in ACTIVITY_TYPE_VALUES) + ")"


@extend_schema_field({"type": "string", "maxLength": 500, "pattern": f"^ *{_TYPE}(?: *, *{_TYPE})* *$"})
class ActivityTypesField(serializers.Field):
    """``lead.created,meeting.booked``: the list of types, each one known."""

    default_error_messages = {
        "invalid": "Expected activity types separated by commas.",
        "invalid_enum": "Unknown activity type {type!r}; one of "
                        + ", ".join(ACTIVITY_TYPE_VALUES) + ".",
    }

    def to_internal_value(self, data) -> list[str]:
        if not isinstance(data, str) or len(data) > 500:
            self.fail("invalid")
        types = [part.strip(" ") for part in data.split(",")]
        for name in types:
            if name not in ACTIVITY_TYPES:
                self.fail("invalid_enum", type=name)
        return types


class ActivityQuery(PageQuery):
    limit = serializers.IntegerField(default=50, min_value=1, max_value=100,
                                     help_text="Items per page, 1 to 100.")
    startDate = DateOrDateTimeField(required=False, help_text=(
        "ISO 8601 date or date-time (with seconds and Z or an offset), UTC (default: 24 hours "
        f"before endDate); a date means its first instant. {RANGE_HELP}"))
    endDate = DateOrDateTimeField(required=False, end_of_day=True, help_text=(
        "ISO 8601 date or date-time (with seconds and Z or an offset), UTC (default: now); a "
        f"date means its last instant. {RANGE_HELP}"))
    type = ActivityTypesField(required=False, help_text=(
        "Comma-separated activity types: " + ", ".join(ACTIVITY_TYPE_VALUES) + "."))
    leadId = PrefixedIdField("lead", required=False, help_text="lead_ id: that lead's activity only.")


def _check_range(start: date | datetime, end: date | datetime) -> None:
    """422 for a range that runs backwards or is longer than 365 days."""
    if start > end:
        raise Unprocessable("startDate is after endDate.", details=[
            FieldError("startDate", "out_of_range", "Must be on or before endDate.")])
    if end - start > timedelta(days=selectors.MAX_RANGE_DAYS):
        raise Unprocessable("The date range is longer than 365 days.", details=[
            FieldError("endDate", "out_of_range",
                       f"At most {selectors.MAX_RANGE_DAYS} days after startDate.")])


def resolve_period(query: dict[str, Any]) -> selectors.Period:
    """endDate defaults to today (UTC), startDate to 30 days before endDate."""
    end = query.get("endDate") or timezone.now().date()
    start = query.get("startDate") or end - timedelta(days=DEFAULT_DAYS)
    _check_range(start, end)
    return selectors.Period(start, end)


class AnalyticsViewSet(V1ViewSet):
    """Analytics of the caller's tenant, in the caller's mode (live or test)."""

    queryset = Event.objects.all()  # the activity feed; the other two read the rollups
    id_prefix = "evt"
    rate_limit_bucket = "analytics"

    @extend_schema(
        operation_id="v1_analytics_overview",
        parameters=[OverviewQuery],
        responses={200: OverviewSerializer, **v1_errors(400, 422)},
    )
    def overview(self, request):
        query = parse_query(request, OverviewQuery)
        return Response(selectors.analytics_overview(
            **self.owner(), period=resolve_period(query),
            granularity=query["granularity"], compare_with=query.get("compareWith")))

    @extend_schema(
        operation_id="v1_analytics_funnel",
        parameters=[FunnelQuery],
        responses={200: FunnelSerializer, **v1_errors(400, 422)},
    )
    def funnel(self, request):
        query = parse_query(request, FunnelQuery)
        return Response(selectors.analytics_funnel(
            **self.owner(), period=resolve_period(query),
            channel=query.get("channel"), source=query.get("source")))

    @extend_schema(
        operation_id="v1_analytics_activity",
        parameters=[ActivityQuery],
        responses={200: paginated("ActivityList", ActivityEventSerializer), **v1_errors(400, 422)},
    )
    def activity(self, request):
        query = parse_query(request, ActivityQuery)
        end = query.get("endDate") or timezone.now()
        start = query.get("startDate") or end - ACTIVITY_DEFAULT_WINDOW
        _check_range(start, end)
        events = selectors.activity_feed(self.get_queryset(), types=query.get("type"),
                                         lead_id=query.get("leadId"), start=start, end=end)
        page = paginate(events, page=query["page"], limit=query["limit"])
        return Response({"data": [activity_event(e) for e in page.items],
                         "pagination": page.meta})
