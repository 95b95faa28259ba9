"""Legacy surface of leads: ``/api/leads``, ``/api/leads/:id``, ``/api/admin/leads``.

Ids are UUIDs, statuses the legacy vocabulary, the score ``qualificationScore`` and custom
fields ``metadata``. Single leads come wrapped as ``{lead: {...}}``, lists as
``{leads: [...], pagination: {...}}`` (docs/leads.md).
"""

from __future__ import annotations

from typing import Any

from django.core.validators import MaxLengthValidator
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response

from apikeys.models import Scope
from config.api.fields import (
    StatedDictField,
    StatedEmailField,
    StatedIntegerField,
    StatedLineField,
    TimestampField,
)
from config.api.query import parse_query
from config.api.schema import PaginationSerializer, legacy_errors
from config.api.views import LegacyViewSet

from .. import presenters, selectors, services
from .. import validation as rules
from ..models import Lead
from ..vocabulary import LEGACY_STATUSES, stored_from_legacy

LEGACY_DEFAULT_LIMIT = 50


class LegacyLeadSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    name = serializers.CharField(allow_null=True)
    email = serializers.EmailField()
    company = serializers.CharField(allow_null=True)
    status = serializers.ChoiceField(choices=LEGACY_STATUSES)
    qualificationScore = serializers.IntegerField(min_value=0, max_value=100)
    createdAt = TimestampField()
    phone = serializers.CharField(allow_null=True)
    metadata = serializers.DictField()
    updatedAt = TimestampField()


_LeadEnvelope = inline_serializer(name="LegacyLeadEnvelope",
                                  fields={"lead": LegacyLeadSerializer()})
_LeadListEnvelope = inline_serializer(
    name="LegacyLeadList",
    fields={"leads": LegacyLeadSerializer(many=True), "pagination": PaginationSerializer()},
)


class LegacyLeadListQuery(serializers.Serializer):
    q = serializers.CharField(
        required=False, allow_blank=True, min_length=2, max_length=200,
        error_messages={"min_length": "Search terms need at least 2 characters."},
        help_text="Search: at least 2 characters (leading and trailing spaces aside), matched "
                  "case-insensitively in name, email, company; empty lists every lead.")
    page = serializers.IntegerField(default=1, min_value=1, max_value=1_000_000,
                                    help_text="Page number, from 1.")
    limit = serializers.IntegerField(default=LEGACY_DEFAULT_LIMIT, min_value=1, max_value=100,
                                     help_text="Leads per page, 1 to 100.")


# Shape and type only: the rules are the lead services' (``leads.validation``).

class LegacyLeadCreateSerializer(serializers.Serializer):
    name = StatedLineField(min_length=1, max_length=rules.TEXT_LIMITS["name"])
    email = StatedEmailField(max_length=rules.MAX_EMAIL_LENGTH)
    phone = StatedLineField(max_length=rules.TEXT_LIMITS["phone"], required=False,
                            allow_blank=True, allow_null=True)
    company = StatedLineField(max_length=rules.TEXT_LIMITS["company"], required=False,
                              allow_blank=True, allow_null=True)
    metadata = StatedDictField(
        required=False, allow_null=True,
        validators=[MaxLengthValidator(rules.MAX_CUSTOM_FIELD_KEYS)],
        help_text=f"At most {rules.MAX_CUSTOM_FIELD_KEYS} keys of 1 to "
                  f"{rules.MAX_CUSTOM_FIELD_KEY_LENGTH} characters, "
                  f"{rules.MAX_CUSTOM_FIELDS_BYTES // 1024} KiB of JSON in all.")


class LegacyLeadUpdateSerializer(LegacyLeadCreateSerializer):
    status = serializers.ChoiceField(choices=LEGACY_STATUSES, required=False)
    qualificationScore = StatedIntegerField(min_value=rules.MIN_SCORE, max_value=rules.MAX_SCORE,
                                            required=False)


_FIELDS = {  # legacy body field -> service argument
    "name": "name", "email": "email", "phone": "phone", "company": "company",
    "metadata": "custom_fields", "status": "status", "qualificationScore": "score",
}


# service argument -> legacy body field, for the names in error messages
_FIELD_NAMES = {service: body for body, service in _FIELDS.items()}


def _service_values(validated: dict[str, Any]) -> dict[str, Any]:
    return {_FIELDS[name]: value for name, value in validated.items()}


class LegacyLeadViewSet(LegacyViewSet):
    """``GET /api/leads`` (newest first, ``?q=`` search), ``GET`` and ``PATCH /api/leads/:id``."""

    queryset = Lead.objects.all()
    field_names = _FIELD_NAMES

    @extend_schema(
        operation_id="legacy_leads_list",
        parameters=[LegacyLeadListQuery],
        responses={200: _LeadListEnvelope, **legacy_errors(400)},
    )
    def list(self, request):
        query = parse_query(request, LegacyLeadListQuery)
        if query.get("q"):
            page = selectors.lead_search(
                **self.owner(), q=query["q"], fields=selectors.LEGACY_SEARCH_FIELDS,
                order_by=("-created_at", "-id"), columns=presenters.COLUMNS,
                page=query["page"], limit=query["limit"],
            )
        else:
            page = selectors.lead_list(**self.owner(), page=query["page"],
                                       limit=query["limit"])
        return Response({"leads": [presenters.legacy_lead(row) for row in page.items],
                         "pagination": page.meta})

    @extend_schema(operation_id="legacy_leads_retrieve",
                   responses={200: _LeadEnvelope, **legacy_errors(404)})
    def retrieve(self, request, id: str):
        return Response({"lead": presenters.legacy_lead(presenters.lead_row(self.get_object()))})

    @extend_schema(operation_id="legacy_leads_update", request=LegacyLeadUpdateSerializer,
                   responses={200: _LeadEnvelope, **legacy_errors(400, 404, 409)})
    def partial_update(self, request, id: str):
        lead = self.get_object()
        body = LegacyLeadUpdateSerializer(data=request.data, partial=True)
        body.is_valid(raise_exception=True)
        changes = _service_values(body.validated_data)
        if "status" in changes:
            changes["status"] = stored_from_legacy(changes["status"], current=lead.status)
        lead = services.lead_update(lead=lead, changes=changes)
        return Response({"lead": presenters.legacy_lead(presenters.lead_row(lead))})


class LegacyAdminLeadViewSet(LegacyViewSet):
    """``POST /api/admin/leads``: under ``/api/admin/``, so the admin scope (or the cookie)."""

    queryset = Lead.objects.all()
    field_names = _FIELD_NAMES
    min_scope = Scope.ADMIN

    @extend_schema(operation_id="legacy_admin_leads_create", request=LegacyLeadCreateSerializer,
                   responses={201: _LeadEnvelope, **legacy_errors(400, 409)})
    def create(self, request):
        body = LegacyLeadCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        lead = services.lead_create(**self.owner(), **_service_values(body.validated_data))
        return Response({"lead": presenters.legacy_lead(presenters.lead_row(lead))}, status=201)
