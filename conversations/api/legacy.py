"""Legacy surface: conversations by id and by lead, and the public ``POST /api/chat`` that the
widget uses (JSON, or Server-Sent Events with ``stream: true``)."""

from __future__ import annotations

import json
from typing import Any

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.parsers import MultiPartParser
from rest_framework.response import Response

from config.api.input import JSONParser
from config.api.renderers import JSONRenderer
from config.api.schema import legacy_errors
from config.api.views import LegacyViewSet, PublicLegacyAPIView
from conversations import presenters
from conversations.attachments import Upload, limit_uploads, read_upload
from conversations.models import LEGACY_STATUS, Channel, Conversation
from conversations.selectors import lead_conversations
from core.errors import FieldError, InvalidRequest, NotFound
from core.ids import parse_uuid_or_404
from core.pagination import paginate
from core.timestamps import format_timestamp
from leads.models import Lead
from leads.vocabulary import LEGACY_OF_STORED
from tenants.models import Tenant
from tenants.selectors import tenant_by_public_id

from .chat import answer_chat
from .sse import CHAT_EVENTS, event_schema
from .v1 import (
    SESSION_MESSAGE_CAP,
    STREAM_DOC,
    ChatRequestFields,
    HandoffSerializer,
    SuggestedActionSerializer,
    chat_response,
)

_MessageSerializer = inline_serializer(name="LegacyMessage", fields={
    "role": serializers.ChoiceField(choices=["user", "assistant"]),
    "content": serializers.CharField(),
    "createdAt": serializers.CharField(),
})


class LegacyConversationSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    leadId = serializers.UUIDField(allow_null=True)
    channel = serializers.CharField()
    status = serializers.ChoiceField(choices=sorted(set(LEGACY_STATUS.values())))
    summary = serializers.CharField(allow_blank=True)
    messages = serializers.ListField(child=serializers.DictField())


class LegacyConversationItemSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    leadId = serializers.UUIDField(allow_null=True)
    channel = serializers.CharField()
    status = serializers.ChoiceField(choices=sorted(set(LEGACY_STATUS.values())))
    summary = serializers.CharField(allow_blank=True)
    messageCount = serializers.IntegerField()
    startedAt = serializers.CharField()
    lastMessageAt = serializers.CharField()


class LegacyPageQuery(serializers.Serializer):
    page = serializers.IntegerField(default=1, min_value=1, max_value=1_000_000,
                                    help_text="Page number, from 1.")
    limit = serializers.IntegerField(default=20, min_value=1, max_value=100,
                                     help_text="Conversations per page, 1 to 100.")


def legacy_item(conversation: Conversation) -> dict[str, Any]:
    return {
        "id": str(conversation.pk),
        "leadId": str(conversation.lead_id) if conversation.lead_id else None,
        "channel": conversation.channel,
        "status": LEGACY_STATUS[conversation.status],
        "summary": conversation.summary,
        "messageCount": conversation.message_count,
        "startedAt": format_timestamp(conversation.started_at),
        "lastMessageAt": format_timestamp(conversation.last_message_at),
    }


class LegacyConversationViewSet(LegacyViewSet):
    queryset = Conversation.objects.all()

    @extend_schema(
        operation_id="legacy_conversations_retrieve",
        responses={200: inline_serializer(name="LegacyConversationEnvelope",
                                          fields={"conversation": LegacyConversationSerializer()}),
                   **legacy_errors(404)},
    )
    def retrieve(self, request, id: str):
        conversation = self.get_object()
        messages = list(conversation.messages.order_by("sequence")[:SESSION_MESSAGE_CAP])
        return Response({"conversation": presenters.legacy_conversation(conversation, messages)})

    @extend_schema(
        operation_id="legacy_lead_conversations",
        parameters=[LegacyPageQuery],
        responses={200: inline_serializer(name="LegacyLeadConversations", fields={
            "conversations": LegacyConversationItemSerializer(many=True),
            "pagination": inline_serializer(name="LegacyConvPagination", fields={
                "page": serializers.IntegerField(), "limit": serializers.IntegerField(),
                "total": serializers.IntegerField(), "hasMore": serializers.BooleanField()}),
        }), **legacy_errors(400, 404)},
    )
    def by_lead(self, request, id: str):
        from config.api.query import parse_query

        query = parse_query(request, LegacyPageQuery)
        lead_pk = parse_uuid_or_404(id)
        caller = self.caller
        if not Lead.objects.filter(pk=lead_pk, tenant=caller.tenant, livemode=caller.livemode).exists():
            raise NotFound()
        page = paginate(lead_conversations(self.get_queryset(), lead_id=lead_pk),
                        page=query["page"], limit=query["limit"])
        meta = page.meta
        return Response({
            "conversations": [legacy_item(c) for c in page.items],
            "pagination": {"page": meta["page"], "limit": meta["limit"], "total": meta["total"],
                           "hasMore": meta["hasMore"]},
        })


class ConsentAcceptanceSerializer(serializers.Serializer):
    version = serializers.IntegerField(min_value=1, max_value=2_147_483_647,
                                       help_text="The notice's version the widget showed.")
    acceptedAt = serializers.DateTimeField(  # noqa: N815 - the API's field name
        help_text="When the visitor accepted it (ISO 8601).")


class PublicChatSerializer(ChatRequestFields):
    """``POST /api/chat``: the widget's chat request, read leniently as the legacy surface
    reads every body, with the tenant's public id and a legacy (UUID) session id."""

    tenant = serializers.CharField(required=False, max_length=40,
                                   help_text="The tenant's public id (or the ?tenant= parameter).")
    sessionId = serializers.UUIDField(  # noqa: N815 - the API's field name
        required=False, allow_null=True, help_text="The session to continue (a UUID).",
        error_messages={"invalid": "Expected a session id (UUID)."})
    consent = ConsentAcceptanceSerializer(
        required=False, allow_null=True,
        help_text="The visitor's acceptance of the tenant's notice (docs/widget.md, "
                  "\"Consent\"): required with every message while the tenant requires "
                  "consent, else 403 and nothing is stored.")


def legacy_chat_response(outcome, visitor_id: str) -> dict[str, Any]:
    return {**chat_response(outcome, visitor_id, legacy=True), **widget_events(outcome)}


def widget_events(outcome) -> dict[str, Any]:
    """What happened in this turn that the widget announces on the page (docs/widget.md)."""
    events: list[dict[str, Any]] = []
    conversation = outcome.conversation
    lead = conversation.lead
    plan = outcome.plan
    lead_data = None
    if lead is not None:
        lead_data = {"id": str(lead.pk), "name": lead.name, "email": lead.email,
                     "company": lead.company, "status": LEGACY_OF_STORED[lead.status],
                     "qualificationScore": lead.score}
    if plan and plan.qualified and lead_data:
        events.append({"type": "lead.qualified", "lead": lead_data})
    if plan and plan.booked_slot and lead_data:
        events.append({"type": "meeting.booked", "lead": lead_data, "meeting": {
            "id": str(plan.meeting_id), "status": "scheduled",
            "startsAt": format_timestamp(plan.booked_slot.start),
            "endsAt": format_timestamp(plan.booked_slot.end), "label": plan.booked_slot.label,
            "timezone": conversation.tenant.meeting_timezone,
            "confirmationEmail": plan.confirmation_email}})
    return {"events": events}


def legacy_stream_shape(event: str, data: dict) -> dict:
    if event == "message_start":
        return {"id": str(data["id"]), "sessionId": str(data["sessionId"]),
                **({"attachments": data["attachments"]} if data.get("attachments") else {})}
    if event == "message_end":
        shaped = {k: v for k, v in data.items() if k != "outcome"}
        shaped.update(widget_events(data["outcome"]))
        return shaped
    return data


def _tenant_named(request, body: Any = None) -> Tenant | None:
    """The tenant of a public chat request: ``?tenant=`` (what the widget sends) or the body's.
    A file's request keeps its body in ``payload``: its tenant is read from ``body`` once the
    request has been read, and the rate limit, which runs before, goes by the query alone (it
    reads no upload)."""
    public_id = request.GET.get("tenant")
    if not public_id and body is None and not request.content_type.startswith("multipart/"):
        body = request.data
    if not public_id and isinstance(body, dict):
        public_id = body.get("tenant")
    return tenant_by_public_id(public_id)


class PublicChatWithFileSerializer(PublicChatSerializer):
    """The chat body of a message with a file: its text may be empty."""

    message = serializers.CharField(max_length=4000, trim_whitespace=False, required=False,
                                    allow_blank=True, default="")


class PublicChatMultipartSerializer(serializers.Serializer):
    """For the schema: a message with a file (docs/widget.md, "Attachments")."""

    payload = serializers.CharField(help_text="The chat request (as the JSON body) as JSON text; "
                                              "its message may be empty.")
    file = serializers.FileField(help_text="An image (PNG, JPEG, GIF, WebP) or a PDF, its type "
                                           "read from its bytes; within the size limit.")


def _multipart_chat(request) -> tuple[dict[str, Any], Upload]:
    """A ``multipart/form-data`` chat request: the JSON body in ``payload``, the file in
    ``file`` (docs/widget.md, "Attachments")."""
    try:
        payload = json.loads(request.data.get("payload") or "")
    except ValueError:
        payload = None
    if not isinstance(payload, dict):
        raise InvalidRequest("payload must be the chat request as a JSON object.", details=[
            FieldError("payload", "invalid_format", "Expected the chat request as JSON.")])
    upload = request.FILES.get("file")
    if upload is None:
        raise InvalidRequest("file is required with a multipart chat request.", details=[
            FieldError("file", "required", "This field is required.")])
    return payload, read_upload(upload)


class PublicChatView(PublicLegacyAPIView):
    """``POST /api/chat``: the widget's chat, public, on the tenant's live data; with a file,
    ``multipart/form-data`` (the JSON body in ``payload``, the file in ``file``)."""

    rate_limit_bucket = "public_chat"
    parser_classes = [JSONParser, MultiPartParser]

    def initialize_request(self, request, *args, **kwargs):
        limit_uploads(request)  # before anything reads the body: files within their limit
        return super().initialize_request(request, *args, **kwargs)

    def rate_limit_tenant(self, request) -> Tenant | None:
        return _tenant_named(request)

    def perform_content_negotiation(self, request, force=False):
        renderer = JSONRenderer()  # errors are JSON whatever the Accept header
        return renderer, renderer.media_type

    @extend_schema(
        operation_id="legacy_chat",
        auth=[],
        parameters=[OpenApiParameter("tenant", str, description="The tenant's public id.")],
        request={"application/json": PublicChatSerializer,
                 "multipart/form-data": PublicChatMultipartSerializer},
        responses={
            (200, "application/json"): OpenApiResponse(inline_serializer(name="LegacyChatResponse", fields={
                "id": serializers.UUIDField(), "sessionId": serializers.UUIDField(),
                "visitorId": serializers.CharField(), "role": serializers.CharField(),
                "content": serializers.CharField(allow_blank=True),
                "intent": serializers.CharField(),
                "confidence": serializers.FloatField(),
                "suggestedActions": SuggestedActionSerializer(many=True),
                "leadScore": serializers.IntegerField(), "createdAt": serializers.CharField(),
                "handoff": HandoffSerializer(required=False),
                "events": serializers.ListField(child=serializers.DictField()),
            }), description="The reply."),
            (200, "text/event-stream"): OpenApiResponse(event_schema(CHAT_EVENTS), description=STREAM_DOC),
            **legacy_errors(403, 404, 503, public=True, body=True),
        },
    )
    def post(self, request):
        payload = upload = None
        if request.content_type.startswith("multipart/"):
            payload, upload = _multipart_chat(request)
            body = PublicChatWithFileSerializer(data=payload)
        else:
            body = PublicChatSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        tenant = _tenant_named(request, payload if upload else None)
        if tenant is None:
            raise NotFound("Unknown tenant.")
        return answer_chat(request, data, tenant=tenant, livemode=True, channel=Channel.WEB_CHAT,
                           stream_shape=legacy_stream_shape, response_body=legacy_chat_response,
                           attachment=upload)
