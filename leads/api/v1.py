"""v1 surface of leads: ``/api/v1/leads``, ``/api/v1/leads/{id}``, ``/api/v1/leads/search``.

Input is validated by the serializers below (400 with field details); the services check the
rules that hold for every caller (409 duplicate email, 422 assignee outside the tenant). Output
is built by ``leads.presenters`` from plain rows; the output serializers here describe it for
the OpenAPI schema (a test holds the two together).
"""

from __future__ import annotations

from typing import Any

from django.core.validators import MaxLengthValidator, RegexValidator
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from config.api.fields import (
    PrefixedIdField,
    StatedDictField,
    StatedEmailField,
    StatedIntegerField,
    StatedLineField,
    StatedListField,
    TimestampField,
    V1Input,
)
from config.api.query import RANGE_HELP, DayField, PageQuery, parse_query
from config.api.schema import paginated, v1_errors
from config.api.views import V1ViewSet
from core import privacy
from core.errors import FieldError, Unprocessable

from .. import presenters, selectors, services
from .. import validation as rules
from ..models import Lead
from ..vocabulary import V1_STATUSES, LeadSource, stored_from_v1

SORT_FIELDS = list(selectors.SORT_COLUMNS)
E164 = RegexValidator(r"^\+[1-9][0-9]{1,14}$", code="invalid_format",
                      message="Expected an E.164 phone number such as +14155550123.")


# --- output shapes (schema) -----------------------------------------------------------------

class LeadSerializer(serializers.Serializer):
    id = serializers.CharField(help_text="lead_ followed by 32 hex digits")
    email = serializers.EmailField()
    name = serializers.CharField(allow_null=True)
    company = serializers.CharField(allow_null=True)
    title = serializers.CharField(allow_null=True)
    phone = serializers.CharField(allow_null=True, help_text="E.164")
    status = serializers.ChoiceField(choices=V1_STATUSES)
    score = serializers.IntegerField(min_value=0, max_value=100)
    source = serializers.ChoiceField(choices=LeadSource.values)
    tags = serializers.ListField(child=serializers.CharField())
    customFields = serializers.DictField()
    assignedTo = serializers.CharField(allow_null=True, help_text="user_ id of the assigned rep")
    firstSeenAt = TimestampField()
    lastActiveAt = TimestampField()
    createdAt = TimestampField()
    updatedAt = TimestampField()


class LeadDetailSerializer(LeadSerializer):
    conversationCount = serializers.IntegerField(min_value=0)
    lastIntent = serializers.CharField(allow_null=True)


class LeadSearchResultSerializer(serializers.Serializer):
    id = serializers.CharField()
    email = serializers.EmailField()
    name = serializers.CharField(allow_null=True)
    company = serializers.CharField(allow_null=True)
    status = serializers.ChoiceField(choices=V1_STATUSES)
    score = serializers.IntegerField(min_value=0, max_value=100)
    matchField = serializers.CharField(
        help_text="name, email, company or customFields.<key>: the first field containing q")
    lastActiveAt = TimestampField()


# --- input ----------------------------------------------------------------------------------
#
# Shape and type only; the rules (lengths, ranges, email, tags, custom fields) are the lead
# services' (``leads.validation``), which every caller goes through. v1's E.164 phone format is
# the surface's own.

def _text(field: str) -> serializers.CharField:
    return StatedLineField(max_length=rules.TEXT_LIMITS[field], required=False, allow_blank=True,
                           allow_null=True)


class LeadCreateSerializer(V1Input):
    """POST body; PATCH validates it partially (absent fields are left alone)."""

    email = StatedEmailField(max_length=rules.MAX_EMAIL_LENGTH)
    name = _text("name")
    company = _text("company")
    title = _text("title")
    phone = serializers.CharField(max_length=16, validators=[E164], required=False,
                                  allow_blank=True, allow_null=True)
    status = serializers.ChoiceField(choices=V1_STATUSES, default="new")
    source = serializers.ChoiceField(choices=LeadSource.values, default=LeadSource.API)
    # A blank tag is dropped by the service (leads.validation.clean_tags), not refused.
    tags = StatedListField(child=StatedLineField(max_length=rules.MAX_TAG_LENGTH, allow_blank=True),
                           max_length=rules.MAX_TAGS, required=False, allow_null=True)
    customFields = StatedDictField(
        required=False, allow_null=True,
        validators=[MaxLengthValidator(rules.MAX_CUSTOM_FIELD_KEYS)],
        help_text=f"At most {rules.MAX_CUSTOM_FIELD_KEYS} keys of 1 to "
                  f"{rules.MAX_CUSTOM_FIELD_KEY_LENGTH} characters, "
                  f"{rules.MAX_CUSTOM_FIELDS_BYTES // 1024} KiB of JSON in all.")
    assignedTo = PrefixedIdField("user", required=False, allow_null=True,
                                 help_text="user_ id of a user of the tenant, or null")


class LeadUpdateSerializer(LeadCreateSerializer):
    score = StatedIntegerField(min_value=rules.MIN_SCORE, max_value=rules.MAX_SCORE,
                               required=False)


_FIELDS = {  # v1 body field -> service argument
    "email": "email", "name": "name", "company": "company", "title": "title", "phone": "phone",
    "status": "status", "source": "source", "tags": "tags", "customFields": "custom_fields",
    "assignedTo": "assigned_to_id", "score": "score",
}


# service argument -> v1 body field, for error details
_FIELD_NAMES = {service: body for body, service in _FIELDS.items()}


class LeadListQuery(PageQuery):
    status = serializers.ChoiceField(choices=V1_STATUSES, required=False)
    source = serializers.ChoiceField(choices=LeadSource.values, required=False)
    sortBy = serializers.ChoiceField(choices=SORT_FIELDS, default="createdAt")
    sortOrder = serializers.ChoiceField(choices=["asc", "desc"], default="desc")
    createdAfter = DayField(required=False, help_text=(
        f"ISO 8601 date (UTC); leads created on or after it. {RANGE_HELP}"))
    createdBefore = DayField(required=False, help_text=(
        f"ISO 8601 date (UTC); leads created on or before it. {RANGE_HELP}"))


def _check_created_range(query: dict[str, Any]) -> None:
    """422 for a range that runs backwards: each date is well formed, the pair is not a range
    (as analytics answers a backwards period)."""
    after, before = query.get("createdAfter"), query.get("createdBefore")
    if after and before and after > before:
        raise Unprocessable("createdBefore is earlier than createdAfter.", details=[
            FieldError("createdBefore", "out_of_range", "Must be on or after createdAfter.")])


class LeadSearchQuery(PageQuery):
    q = serializers.CharField(min_length=2, max_length=200, help_text=(
        "At least 2 characters (leading and trailing spaces aside); matched "
        "case-insensitively inside name, email, company and custom field values."))
    status = serializers.ChoiceField(choices=V1_STATUSES, required=False)


class LeadViewSet(V1ViewSet):
    """Leads of the caller's tenant, in the caller's mode (live or test)."""

    queryset = Lead.objects.all()
    id_prefix = "lead"
    field_names = _FIELD_NAMES
    # docs/rate-limits.md: POST /v1/leads and GET /v1/leads/search have limits of their own.
    rate_limit_bucket = {"create": "lead_create", "search": "lead_search"}

    @extend_schema(
        operation_id="v1_leads_list",
        parameters=[LeadListQuery],
        responses={200: paginated("LeadList", LeadSerializer), **v1_errors(400, 422)},
    )
    def list(self, request):
        query = parse_query(request, LeadListQuery)
        _check_created_range(query)
        filters = selectors.LeadFilters(
            status=query.get("status"), source=query.get("source"),
            created_from=query.get("createdAfter"), created_to=query.get("createdBefore"),
        )
        page = selectors.lead_list(
            **self.owner(), filters=filters,
            sort_by=query["sortBy"], descending=query["sortOrder"] == "desc",
            page=query["page"], limit=query["limit"],
        )
        return Response({"data": [presenters.v1_lead(row) for row in page.items],
                         "pagination": page.meta})

    @extend_schema(
        operation_id="v1_leads_search",
        parameters=[LeadSearchQuery],
        responses={200: paginated("LeadSearchResults", LeadSearchResultSerializer),
                   **v1_errors(400)},
    )
    def search(self, request):
        query = parse_query(request, LeadSearchQuery)
        page = selectors.lead_search(**self.owner(), q=query["q"],
                                     status=query.get("status"), page=query["page"],
                                     limit=query["limit"])
        data = [presenters.v1_search_result(row, match_field=row["match_field"])
                for row in page.items]
        return Response({"data": data, "pagination": page.meta})

    @extend_schema(operation_id="v1_leads_retrieve",
                   responses={200: LeadDetailSerializer, **v1_errors(404)})
    def retrieve(self, request, id: str):
        return Response(self._detail(self.get_object()))

    @extend_schema(
        operation_id="v1_leads_create",
        request=LeadCreateSerializer,
        responses={201: LeadDetailSerializer, **v1_errors(400, 409, 422)},
    )
    def create(self, request):
        body = LeadCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        values = self._service_values(body.validated_data)
        values["status"] = stored_from_v1(values["status"])
        lead = services.lead_create(**self.owner(), **values)
        # A lead created through the API has no conversation yet: no need to count them.
        data = presenters.v1_lead_detail(presenters.lead_row(lead), conversation_count=0)
        return Response(data, status=201)

    @extend_schema(
        operation_id="v1_leads_update",
        request=LeadUpdateSerializer,
        responses={200: LeadDetailSerializer, **v1_errors(400, 404, 409, 422)},
    )
    def partial_update(self, request, id: str):
        lead = self.get_object()
        body = LeadUpdateSerializer(data=request.data, partial=True)
        body.is_valid(raise_exception=True)
        changes = self._service_values(body.validated_data)
        if "status" in changes:
            changes["status"] = stored_from_v1(changes["status"], current=lead.status)
        lead = services.lead_update(lead=lead, changes=changes)
        return Response(self._detail(lead))

    @extend_schema(operation_id="v1_leads_delete", responses={204: None, **v1_errors(404)})
    def destroy(self, request, id: str):
        # The person behind the lead goes everywhere, not the lead row alone (docs/privacy.md).
        privacy.erase_lead(self.get_object(), requested_by=self.requested_by())
        return Response(status=204)

    @staticmethod
    def _service_values(validated: dict[str, Any]) -> dict[str, Any]:
        return {_FIELDS[name]: value for name, value in validated.items()}

    @staticmethod
    def _detail(lead: Lead) -> dict[str, Any]:
        return presenters.v1_lead_detail(
            presenters.lead_row(lead),
            conversation_count=selectors.lead_conversation_count(lead),
        )

