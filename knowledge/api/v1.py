"""v1 surface of the knowledge base: ``/api/v1/knowledge-base`` and ``/api/v1/knowledge-base/{id}``.

Scopes follow the method (GET read, POST write, DELETE admin). An upload answers 201 at once
with the document ``processing``; a worker makes it ``ready`` or ``failed``.
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from config.api.fields import TimestampField
from config.api.query import PageQuery, parse_query
from config.api.schema import paginated, v1_errors
from config.api.views import V1ViewSet
from core.pagination import paginate

from .. import presenters, services
from ..models import DOCUMENT_STATUSES, DOCUMENT_TYPES, Document
from .uploads import (
    PARSERS,
    DocumentContentInput,
    DocumentFileInput,
    V1DocumentUploadInput,
    upload_values,
)


class DocumentSerializer(serializers.Serializer):
    id = serializers.CharField(help_text="doc_ followed by 32 hex digits")
    title = serializers.CharField()
    type = serializers.ChoiceField(choices=DOCUMENT_TYPES)
    filename = serializers.CharField(allow_null=True, help_text="Name of the uploaded file")
    size = serializers.IntegerField(help_text="Bytes uploaded")
    language = serializers.CharField(allow_null=True, help_text="ISO 639-1, given or detected")
    url = serializers.CharField(allow_null=True, help_text="Public address cited in replies")
    status = serializers.ChoiceField(choices=DOCUMENT_STATUSES)
    failureReason = serializers.CharField(allow_null=True, help_text="Why indexing failed")
    chunkCount = serializers.IntegerField(help_text="Passages indexed")
    pageCount = serializers.IntegerField(allow_null=True, help_text="Pages of a PDF")
    createdAt = TimestampField()
    updatedAt = TimestampField()

    class Meta:
        ref_name = "V1Document"


class DocumentListQuery(PageQuery):
    status = serializers.ChoiceField(choices=DOCUMENT_STATUSES, required=False)
    type = serializers.ChoiceField(choices=DOCUMENT_TYPES, required=False)


class DocumentViewSet(V1ViewSet):
    """Knowledge-base documents of the caller's tenant, in the caller's mode."""

    queryset = Document.objects.all()
    id_prefix = "doc"
    parser_classes = PARSERS

    @extend_schema(
        operation_id="v1_knowledge_base_list",
        parameters=[DocumentListQuery],
        responses={200: paginated("DocumentList", DocumentSerializer), **v1_errors(400)},
    )
    def list(self, request):
        query = parse_query(request, DocumentListQuery)
        documents = self.get_queryset().order_by("-created_at", "-id")
        if query.get("status"):
            documents = documents.filter(status=query["status"])
        if query.get("type"):
            documents = documents.filter(type=query["type"])
        page = paginate(documents, page=query["page"], limit=query["limit"])
        return Response({"data": [presenters.v1_document(d) for d in page.items],
                         "pagination": page.meta})

    @extend_schema(operation_id="v1_knowledge_base_retrieve",
                   responses={200: DocumentSerializer, **v1_errors(404)})
    def retrieve(self, request, id: str):
        return Response(presenters.v1_document(self.get_object()))

    @extend_schema(
        operation_id="v1_knowledge_base_create",
        request={"application/json": DocumentContentInput,
                 "multipart/form-data": DocumentFileInput},
        responses={201: DocumentSerializer, **v1_errors(422, body=True)},
    )
    def create(self, request):
        document = services.document_create(**self.owner(),
                                            **upload_values(request, V1DocumentUploadInput))
        return Response(presenters.v1_document(document), status=201)

    @extend_schema(operation_id="v1_knowledge_base_delete",
                   responses={204: None, **v1_errors(404)})
    def destroy(self, request, id: str):
        services.document_delete(document=self.get_object())
        return Response(status=204)
