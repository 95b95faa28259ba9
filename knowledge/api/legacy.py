"""Legacy surface of the knowledge base: ``/api/admin/knowledge-base`` (list, upload) and
``/api/admin/knowledge-base/:id`` (read, delete). Under ``/api/admin/``: the admin scope or the
admin cookie. Documents come wrapped as ``{document: {...}}``, lists as
``{documents: [...], pagination}``; ids are UUIDs."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response

from apikeys.models import Scope
from config.api.fields import TimestampField
from config.api.query import parse_query
from config.api.schema import PaginationSerializer, legacy_errors
from config.api.views import LegacyViewSet
from core.pagination import paginate

from .. import presenters, services
from ..models import DOCUMENT_STATUSES, DOCUMENT_TYPES, Document
from .uploads import (
    PARSERS,
    DocumentContentInput,
    DocumentFileInput,
    DocumentUploadInput,
    upload_values,
)

LEGACY_DEFAULT_LIMIT = 50


class LegacyDocumentSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    title = serializers.CharField()
    type = serializers.ChoiceField(choices=DOCUMENT_TYPES)
    filename = serializers.CharField(allow_null=True)
    size = serializers.IntegerField()
    language = serializers.CharField(allow_null=True)
    url = serializers.CharField(allow_null=True)
    status = serializers.ChoiceField(choices=DOCUMENT_STATUSES)
    failureReason = serializers.CharField(allow_null=True)
    chunkCount = serializers.IntegerField()
    pageCount = serializers.IntegerField(allow_null=True)
    createdAt = TimestampField()
    updatedAt = TimestampField()


_Envelope = inline_serializer(name="LegacyDocumentEnvelope",
                              fields={"document": LegacyDocumentSerializer()})
_ListEnvelope = inline_serializer(
    name="LegacyDocumentList",
    fields={"documents": LegacyDocumentSerializer(many=True), "pagination": PaginationSerializer()},
)


class LegacyDocumentListQuery(serializers.Serializer):
    page = serializers.IntegerField(default=1, min_value=1, max_value=1_000_000,
                                    help_text="Page number, from 1.")
    limit = serializers.IntegerField(default=LEGACY_DEFAULT_LIMIT, min_value=1, max_value=100,
                                     help_text="Documents per page, 1 to 100.")


class LegacyDocumentViewSet(LegacyViewSet):
    queryset = Document.objects.all()
    min_scope = Scope.ADMIN
    parser_classes = PARSERS

    @extend_schema(
        operation_id="legacy_knowledge_base_list",
        parameters=[LegacyDocumentListQuery],
        responses={200: _ListEnvelope, **legacy_errors(400)},
    )
    def list(self, request):
        query = parse_query(request, LegacyDocumentListQuery)
        page = paginate(self.get_queryset().order_by("-created_at", "-id"),
                        page=query["page"], limit=query["limit"])
        return Response({"documents": [presenters.legacy_document(d) for d in page.items],
                         "pagination": page.meta})

    @extend_schema(operation_id="legacy_knowledge_base_retrieve",
                   responses={200: _Envelope, **legacy_errors(404)})
    def retrieve(self, request, id: str):
        return Response({"document": presenters.legacy_document(self.get_object())})

    @extend_schema(
        operation_id="legacy_knowledge_base_create",
        request={"application/json": DocumentContentInput,
                 "multipart/form-data": DocumentFileInput},
        responses={201: _Envelope, **legacy_errors(400, body=True)},
    )
    def create(self, request):
        document = services.document_create(**self.owner(),
                                            **upload_values(request, DocumentUploadInput))
        return Response({"document": presenters.legacy_document(document)}, status=201)

    @extend_schema(operation_id="legacy_knowledge_base_delete",
                   responses={204: None, **legacy_errors(404)})
    def destroy(self, request, id: str):
        services.document_delete(document=self.get_object())
        return Response(status=204)
