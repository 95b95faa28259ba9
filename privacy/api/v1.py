"""``/api/v1/privacy``: erasures and exports of a person's data (admin scope; docs/privacy.md).

A person is named by exactly one of ``leadId``, ``email``, ``phone`` or ``visitorId``: in the
body of an erasure, in the query of an export.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from apikeys.models import Scope
from config.api.fields import PrefixedIdField, StatedEmailField, StatedLineField, TimestampField, V1Input
from config.api.query import PageQuery, parse_query
from config.api.schema import paginated, v1_errors
from config.api.views import V1APIView, V1ViewSet
from core import ids
from core.emails import EmailRefused, normalise_email
from core.pagination import paginate
from core.timestamps import format_timestamp

from .. import services
from ..models import Erasure, ErasureStatus, SubjectKind

_SUBJECTS = {"leadId": SubjectKind.LEAD, "email": SubjectKind.EMAIL, "phone": SubjectKind.PHONE,
             "visitorId": SubjectKind.VISITOR}
_ONE_OF = "Name the person by exactly one of leadId, email, phone or visitorId."


class _Subject(serializers.Serializer):
    leadId = PrefixedIdField("lead", required=False)
    email = StatedEmailField(max_length=254, required=False)
    phone = StatedLineField(max_length=50, required=False, min_length=6)
    visitorId = StatedLineField(max_length=200, required=False, min_length=1)

    def validate_email(self, value: str) -> str:
        try:
            return normalise_email(value)
        except EmailRefused as refused:
            raise serializers.ValidationError(refused.message, code=refused.code) from None

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if len(attrs) != 1:
            names = list(attrs) or list(_SUBJECTS)
            raise serializers.ValidationError({name: [_ONE_OF] for name in names})
        return attrs


class ErasureRequestSerializer(V1Input, _Subject):
    pass


class ExportQuery(_Subject):
    pass


class ErasureSerializer(serializers.Serializer):
    id = PrefixedIdField("erasure")
    object = serializers.CharField(default="privacy.erasure")
    status = serializers.ChoiceField(choices=ErasureStatus.values)
    subjectKind = serializers.ChoiceField(choices=SubjectKind.values)
    counts = serializers.DictField(child=serializers.IntegerField())
    failureReason = serializers.CharField(allow_null=True)
    createdAt = TimestampField()
    completedAt = TimestampField(allow_null=True)


def v1_erasure(erasure: Erasure) -> dict[str, Any]:
    return {
        "id": ids.encode("erasure", erasure.pk),
        "object": "privacy.erasure",
        "status": erasure.status,
        "subjectKind": erasure.subject_kind,
        "counts": dict(erasure.counts),
        "failureReason": erasure.failure_reason or None,
        "createdAt": format_timestamp(erasure.created_at),
        "completedAt": format_timestamp(erasure.completed_at) if erasure.completed_at else None,
    }


def _subject(validated: dict[str, Any]) -> tuple[str, str]:
    (name, value), = validated.items()
    return _SUBJECTS[name], (value.hex if name == "leadId" else value)


class ErasureViewSet(V1ViewSet):
    """Erasures of the caller's tenant, in the caller's mode."""

    queryset = Erasure.objects.all()
    id_prefix = "erasure"
    min_scope = Scope.ADMIN

    @extend_schema(operation_id="v1_privacy_erasures_create", request=ErasureRequestSerializer,
                   responses={202: ErasureSerializer, **v1_errors(400, 404, 422, body=True)})
    def create(self, request):
        body = ErasureRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        kind, value = _subject(body.validated_data)
        erasure = services.erasure_request(
            **self.owner(), kind=kind, value=value,
            requested_by=self.requested_by())
        return Response(v1_erasure(erasure), status=202)

    @extend_schema(operation_id="v1_privacy_erasures_list", parameters=[PageQuery],
                   responses={200: paginated("ErasureList", ErasureSerializer), **v1_errors(400)})
    def list(self, request):
        query = parse_query(request, PageQuery)
        page = paginate(self.get_queryset().order_by("-created_at", "-id"),
                        page=query["page"], limit=query["limit"])
        return Response({"data": [v1_erasure(e) for e in page.items], "pagination": page.meta})

    @extend_schema(operation_id="v1_privacy_erasures_retrieve",
                   responses={200: ErasureSerializer, **v1_errors(404)})
    def retrieve(self, request, id: str):
        return Response(v1_erasure(self.get_object()))


class ExportViewSet(V1ViewSet):
    """One person's data as one JSON document."""

    queryset = Erasure.objects.none()
    min_scope = Scope.ADMIN

    @extend_schema(operation_id="v1_privacy_exports_retrieve", parameters=[ExportQuery],
                   responses={200: dict, **v1_errors(400, 404)})
    def export(self, request):
        kind, value = _subject(parse_query(request, ExportQuery))
        return Response(services.person_export(**self.owner(), kind=kind, value=value))


# --- retention (docs/privacy.md, "Retention") ------------------------------------------------

_RETENTION_FIELDS = {"retention_conversation_days": "conversationDays",
                     "retention_lead_days": "leadDays", "retention_event_days": "eventDays"}
_DAYS_HELP = "Days, 1 to 3650, or null for no limit (the default)."


class RetentionSettingsSerializer(serializers.Serializer):
    conversationDays = serializers.IntegerField(
        allow_null=True, help_text="Conversations (with their messages) whose last message is "
                                   "older are erased. " + _DAYS_HELP)
    leadDays = serializers.IntegerField(
        allow_null=True, help_text="Leads that never converted and were inactive for longer "
                                   "are erased with everything of theirs. " + _DAYS_HELP)
    eventDays = serializers.IntegerField(
        allow_null=True, help_text="Events (the history and activity feed) older are deleted. "
                                   + _DAYS_HELP)


class RetentionSettingsUpdateSerializer(V1Input):
    conversationDays = serializers.IntegerField(required=False, allow_null=True)
    leadDays = serializers.IntegerField(required=False, allow_null=True)
    eventDays = serializers.IntegerField(required=False, allow_null=True)


def v1_retention(tenant) -> dict[str, int | None]:
    return {field: getattr(tenant, name) for name, field in _RETENTION_FIELDS.items()}


class RetentionSettingsView(V1APIView):
    """How long the tenant keeps conversations, unconverted leads and events (an hourly task
    erases what is older). A setting of the tenant, the same for keys of both modes; reading
    needs the read scope, changing it the admin scope."""

    min_scope = {"PATCH": Scope.ADMIN}
    field_names = _RETENTION_FIELDS

    @extend_schema(operation_id="v1_settings_retention_retrieve",
                   responses={200: RetentionSettingsSerializer, **v1_errors()})
    def get(self, request):
        return Response(v1_retention(request.user.tenant))

    @extend_schema(operation_id="v1_settings_retention_update",
                   request=RetentionSettingsUpdateSerializer,
                   responses={200: RetentionSettingsSerializer, **v1_errors(422, body=True)})
    def patch(self, request):
        body = RetentionSettingsUpdateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        days = {name: body.validated_data[field] for name, field in _RETENTION_FIELDS.items()
                if field in body.validated_data}
        return Response(v1_retention(services.retention_set(tenant=request.user.tenant, **days)))
