"""v1 surface: ``POST /api/v1/chat`` (JSON or Server-Sent Events), chat sessions, and
conversations with their messages."""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings
from django.core.validators import MaxLengthValidator, RegexValidator
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_field, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response

from agent.interface import INTENTS
from apikeys.models import Scope
from config.api.fields import (
    NOT_WHITESPACE,
    LanguageField,
    PrefixedIdField,
    StatedDictField,
    TimestampField,
    V1Input,
)
from config.api.query import RANGE_HELP, DateOrDateTimeField, PageQuery, parse_query
from config.api.renderers import JSONRenderer
from config.api.schema import paginated, v1_errors
from config.api.views import V1ViewSet
from conversations import presenters
from conversations.attachments import EXTENSIONS, file_response
from conversations.models import Channel, Conversation, ConversationStatus, Message
from conversations.search import MAX_QUERY, search_terms
from conversations.selectors import (
    attachment_get,
    conversation_attachments,
    conversation_list,
    conversation_messages,
    message_search,
)
from conversations.services import (
    conversation_close,
)
from core import ids, privacy
from core.errors import NotFound
from core.ids import decode
from core.languages import ISO_639_1
from core.pagination import paginate
from core.timestamps import format_timestamp

from .chat import answer_chat
from .sse import CHAT_EVENTS, event_schema

# The stream of a chat request with stream=true (docs/conversations.md, "Streaming").
STREAM_DOC = ("With stream=true (and Accept: text/event-stream): Server-Sent Events, "
              "message_start {id, sessionId}, content_delta {delta}…, then message_end {intent, "
              "confidence, leadScore, suggestedActions, handoff?} or error {code, message}.")
MAX_METADATA_KEYS = 50
MAX_METADATA_BYTES = 8 * 1024
SESSION_MESSAGE_CAP = 1000


# --- shapes -------------------------------------------------------------------------------


class SuggestedActionSerializer(serializers.Serializer):
    type = serializers.ChoiceField(choices=["link", "reply"])
    label = serializers.CharField()
    url = serializers.CharField(required=False)
    message = serializers.CharField(required=False)
    metadata = serializers.DictField(
        required=False,
        help_text="reply actions: send it as the chat request's metadata with the message. A "
                  "meeting slot's carries {slot: <token>}, which books that slot.")


class HandoffSerializer(serializers.Serializer):
    reason = serializers.CharField()
    priority = serializers.ChoiceField(choices=["low", "normal", "high", "urgent"])
    suggestedTeam = serializers.CharField()


class ChatResponseSerializer(serializers.Serializer):
    id = serializers.CharField(help_text="msg_ id of the assistant message; while a person has "
                                         "the conversation and the agent says nothing, of the "
                                         "visitor's stored message")
    sessionId = serializers.CharField(help_text="sess_ id; send it back to continue")
    visitorId = serializers.CharField()
    role = serializers.ChoiceField(choices=["assistant"])
    content = serializers.CharField(allow_blank=True, help_text=(
        "Markdown; empty when a person has the conversation and the agent says nothing "
        "(docs/conversations.md)"))
    intent = serializers.ChoiceField(choices=list(INTENTS))
    confidence = serializers.FloatField(min_value=0, max_value=1)
    suggestedActions = SuggestedActionSerializer(many=True)
    leadScore = serializers.IntegerField(min_value=0, max_value=100)
    createdAt = TimestampField()
    handoff = HandoffSerializer(required=False)


class MessageSerializer(serializers.Serializer):
    id = serializers.CharField()
    role = serializers.ChoiceField(choices=["user", "assistant"])
    content = serializers.CharField()
    intent = serializers.CharField(required=False, allow_null=True)
    confidence = serializers.FloatField(required=False, allow_null=True)
    proactive = serializers.BooleanField(
        required=False, help_text="Present (true) on the tenant's proactive message that the "
                                  "widget showed and the visitor replied to (docs/widget.md).")
    createdAt = TimestampField()


class ConversationSerializer(serializers.Serializer):
    id = serializers.CharField()
    leadId = serializers.CharField(allow_null=True)
    visitorId = serializers.CharField()
    channel = serializers.ChoiceField(choices=Channel.values)
    status = serializers.ChoiceField(choices=ConversationStatus.values)
    subject = serializers.CharField(allow_null=True)
    messageCount = serializers.IntegerField()
    summary = serializers.CharField(allow_null=True)
    intents = serializers.ListField(child=serializers.CharField())
    leadScore = serializers.IntegerField()
    assignedTo = serializers.CharField(allow_null=True)
    startedAt = TimestampField()
    lastMessageAt = TimestampField()
    createdAt = TimestampField()


# Spelled out rather than a nested serializer: a nullable reference (allOf + nullable) is not
# read as nullable by every OpenAPI 3.0 tool (as analytics' ComparisonField).
@extend_schema_field({
    "type": "object", "nullable": True,
    "description": "The visitor's acceptance of the tenant's notice (docs/widget.md, "
                   "\"Consent\"): the notice's version, its words and link as the visitor saw "
                   "them, and when they accepted; null when none was required.",
    "properties": {"version": {"type": "integer", "minimum": 1},
                   "text": {"type": "string"},
                   "link": {"type": "string", "format": "uri", "nullable": True},
                   "acceptedAt": {"type": "string", "format": "date-time"}},
    "required": ["version", "text", "link", "acceptedAt"],
})
class ConsentRecordField(serializers.DictField):
    pass


class ConversationDetailSerializer(ConversationSerializer):
    metadata = serializers.DictField()
    consent = ConsentRecordField(allow_null=True)
    messages = MessageSerializer(many=True, required=False)


class SessionSerializer(serializers.Serializer):
    sessionId = serializers.CharField()
    visitorId = serializers.CharField()
    leadId = serializers.CharField(allow_null=True)
    status = serializers.ChoiceField(choices=ConversationStatus.values)
    messages = MessageSerializer(many=True)
    startedAt = TimestampField()
    lastActivityAt = TimestampField()


def chat_response(outcome, visitor_id: str, *, legacy: bool = False) -> dict[str, Any]:
    """The chat response object; the legacy surface shows the same fields with UUIDs. A quiet
    turn (a person has the conversation) names the visitor's stored message and says nothing."""
    message: Message = outcome.message
    data = {
        "id": str(message.pk) if legacy else presenters.msg_id(message.pk),
        "sessionId": (str(outcome.conversation.pk) if legacy
                      else presenters.sess_id(outcome.conversation.pk)),
        "visitorId": visitor_id,
        "role": "assistant",
        "content": "" if outcome.quiet else message.content,
        "intent": outcome.intent,
        "confidence": outcome.confidence,
        "suggestedActions": [] if outcome.quiet else message.suggested_actions,
        "leadScore": outcome.conversation.lead_score,
        "createdAt": format_timestamp(message.created_at),
    }
    if outcome.handoff:
        data["handoff"] = outcome.handoff
    return data


def v1_stream_shape(event: str, data: dict) -> dict:
    if event == "message_start":
        return {"id": presenters.msg_id(data["id"]), "sessionId": presenters.sess_id(data["sessionId"])}
    if event == "message_end":
        return {k: v for k, v in data.items() if k != "outcome"}
    return data


# --- requests -----------------------------------------------------------------------------


# Not blank: at least one character that is not whitespace.
_NOT_BLANK = RegexValidator(NOT_WHITESPACE, "The message must not be empty.", code="required")
SESSION_ID = RegexValidator(r"^(?:sess|conv)_[0-9a-f]{32}$", code="invalid_format",
                            message="Expected a session id of the form sess_<32 hex>.")


class ChatRequestFields(serializers.Serializer):
    """The chat request of both surfaces (the legacy widget's adds ``tenant``), read as DRF
    reads it; v1's ``ChatRequestSerializer`` types it strictly."""

    message = serializers.CharField(max_length=4000, trim_whitespace=False, validators=[_NOT_BLANK])
    visitorId = serializers.CharField(max_length=200)
    sessionId = serializers.CharField(required=False, allow_null=True, max_length=64)
    stream = serializers.BooleanField(required=False, default=False)
    metadata = StatedDictField(
        required=False, default=dict, validators=[MaxLengthValidator(MAX_METADATA_KEYS)],
        help_text=f"At most {MAX_METADATA_KEYS} keys, {MAX_METADATA_BYTES // 1024} KiB of JSON. "
                  "Kept on the conversation (userAgent, referrer, landingPage, any other key). "
                  "timezone: the visitor's IANA time zone (Europe/Paris), remembered for the "
                  "later turns; slots are offered and confirmed in it (an unknown zone is "
                  "ignored). slot: a slot token from a reply action's metadata, which books that "
                  "slot (this message only).")
    language = LanguageField(
        required=False, allow_null=True, min_length=2,
        help_text="ISO 639-1 code of the reply's language (case-insensitive); detected when "
                  "omitted.")

    def validate_metadata(self, value: dict) -> dict:
        if len(value) > MAX_METADATA_KEYS:
            raise serializers.ValidationError(f"At most {MAX_METADATA_KEYS} keys.", code="too_long")
        if len(json.dumps(value)) > MAX_METADATA_BYTES:
            raise serializers.ValidationError(f"At most {MAX_METADATA_BYTES} bytes of JSON.",
                                              code="too_long")
        return value

    def validate_language(self, value):
        if value is None:
            return None
        if value.lower() not in ISO_639_1:
            raise serializers.ValidationError("Expected an ISO 639-1 language code such as 'en'.",
                                              code="invalid_enum")
        return value.lower()


class ChatRequestSerializer(V1Input, ChatRequestFields):
    """``POST /api/v1/chat``: typed strictly, with v1's session ids."""

    sessionId = serializers.CharField(required=False, allow_null=True, max_length=64,
                                      validators=[SESSION_ID])

    def validate_sessionId(self, value):  # noqa: N802 - the API's field name
        return None if value is None else decode("sess", value) or decode("conv", value)


class ConversationListQuery(PageQuery):
    leadId = PrefixedIdField("lead", required=False, help_text="lead_ id: that lead's only.")
    status = serializers.ChoiceField(choices=ConversationStatus.values, required=False)
    channel = serializers.ChoiceField(choices=Channel.values, required=False)
    startDate = DateOrDateTimeField(required=False, help_text=(
        "ISO 8601 date or date-time (with seconds and Z or an offset); conversations started "
        f"on or after it (a date: its first instant). {RANGE_HELP}"))
    endDate = DateOrDateTimeField(required=False, end_of_day=True, help_text=(
        "ISO 8601 date or date-time (with seconds and Z or an offset); conversations started "
        f"on or before it (a date: its last instant). {RANGE_HELP}"))
    sortBy = serializers.ChoiceField(choices=["startedAt", "lastMessageAt", "messageCount"],
                                     default="lastMessageAt")
    sortOrder = serializers.ChoiceField(choices=["asc", "desc"], default="desc")


class MessageSearchQuery(PageQuery):
    q = serializers.CharField(max_length=MAX_QUERY, help_text=(
        "Words to find, in any case: each a whole word of the message, the last one also the "
        "start of a word (\"pric\" finds \"pricing\"); every one must be there."))
    status = serializers.ChoiceField(choices=ConversationStatus.values, required=False,
                                     help_text="Only in conversations with this status.")
    channel = serializers.ChoiceField(choices=Channel.values, required=False,
                                      help_text="Only in conversations on this channel.")

    def validate_q(self, value: str) -> str:
        if not search_terms(value):
            raise serializers.ValidationError("Give at least one word to find.", code="required")
        return value


class MessageSearchConversationSerializer(serializers.Serializer):
    id = serializers.CharField()
    leadId = serializers.CharField(allow_null=True)
    status = serializers.ChoiceField(choices=ConversationStatus.values)
    channel = serializers.ChoiceField(choices=Channel.values)
    tags = serializers.ListField(child=serializers.CharField(), help_text="The staff's tags.")


class MessageSearchResultSerializer(serializers.Serializer):
    id = serializers.CharField(help_text="msg_ id")
    role = serializers.ChoiceField(choices=["user", "assistant"])
    content = serializers.CharField()
    author = serializers.CharField(allow_null=True, help_text=(
        "user_ id of the person of the tenant who wrote it; null for the visitor and the agent."))
    createdAt = TimestampField()
    conversation = MessageSearchConversationSerializer()


class SearchPaginationSerializer(serializers.Serializer):
    """A search's pages: no total (counting every message of a common word costs more than
    finding a page of them), whether there is a next page."""

    page = serializers.IntegerField()
    limit = serializers.IntegerField()
    hasMore = serializers.BooleanField()

    class Meta:
        ref_name = "SearchPagination"


class ConversationDetailQuery(serializers.Serializer):
    includeMessages = serializers.BooleanField(
        default=True, help_text="true or false (also 1/0, yes/no, on/off): with the messages.")
    messageLimit = serializers.IntegerField(default=50, min_value=1, max_value=200,
                                            help_text="Messages to include, 1 to 200.")
    messageOffset = serializers.IntegerField(default=0, min_value=0, max_value=1_000_000,
                                             help_text="Messages to skip, from the first.")


# A file's bytes, in its own type (``conversations.attachments.file_response``).
FILE_RESPONSES = {
    (200, content_type): OpenApiResponse(OpenApiTypes.BINARY, description=(
        "The file's bytes: an image inline with its type, a PDF as a download "
        "(Content-Disposition: attachment); always X-Content-Type-Options: nosniff and a "
        "Content-Security-Policy that runs nothing."))
    for content_type in EXTENSIONS
}


class AttachmentSerializer(serializers.Serializer):
    id = serializers.CharField(help_text="att_ id.")
    messageId = serializers.CharField(help_text="msg_ id of the message it came with.")  # noqa: N815
    sentBy = serializers.ChoiceField(choices=["visitor", "staff"])  # noqa: N815
    name = serializers.CharField(help_text="The original file name, sanitised.")
    contentType = serializers.ChoiceField(  # noqa: N815
        choices=["image/png", "image/jpeg", "image/gif", "image/webp", "application/pdf"],
        help_text="Read from the file's bytes.")
    size = serializers.IntegerField(help_text="Bytes.")
    sha256 = serializers.CharField()
    url = serializers.CharField(help_text="Where its bytes are (this API, the same key).")
    createdAt = serializers.CharField()  # noqa: N815


# --- views --------------------------------------------------------------------------------


class ChatViewSet(V1ViewSet):
    queryset = Conversation.objects.all()
    id_prefix = "sess"
    lookup_url_kwarg = "sessionId"
    rate_limit_bucket = {"create": "chat"}

    def get_rate_limit_bucket(self, request) -> str:
        # A streaming chat counts against the streaming limit (and, being a chat, the chat one);
        # its concurrency slot is held for as long as the stream is open (docs/rate-limits.md).
        if self.action == "create" and isinstance(request.data, dict) and request.data.get("stream") is True:
            return "chat_stream"
        return super().get_rate_limit_bucket(request)
    def perform_content_negotiation(self, request, force=False):
        # Whatever the Accept header (text/event-stream for a stream), errors are JSON; the
        # stream itself is its own response.
        renderer = JSONRenderer()
        return renderer, renderer.media_type

    @extend_schema(
        operation_id="v1_chat",
        request=ChatRequestSerializer,
        responses={
            (200, "application/json"): OpenApiResponse(ChatResponseSerializer,
                                                       description="The reply."),
            (200, "text/event-stream"): OpenApiResponse(event_schema(CHAT_EVENTS), description=STREAM_DOC),
            **v1_errors(404, 502, 503, 504, body=True),
        },
    )
    def create(self, request):
        body = ChatRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        return answer_chat(request, body.validated_data, **self.owner(), channel=Channel.API,
                           stream_shape=v1_stream_shape, response_body=chat_response)

    @extend_schema(operation_id="v1_chat_session", responses={200: SessionSerializer,
                                                              **v1_errors(404)})
    def retrieve(self, request, sessionId: str):  # noqa: N803 - the path parameter's name
        conversation = self.get_object()
        messages = list(conversation.messages.order_by("sequence")[:SESSION_MESSAGE_CAP])
        return Response({
            "sessionId": presenters.sess_id(conversation.pk),
            "visitorId": conversation.visitor_id,
            "leadId": presenters.lead_id(conversation.lead_id),
            "status": conversation.status,
            "messages": [presenters.session_message(m) for m in messages],
            "startedAt": format_timestamp(conversation.started_at),
            "lastActivityAt": format_timestamp(conversation.last_message_at),
        })


class ConversationViewSet(V1ViewSet):
    queryset = Conversation.objects.all()
    id_prefix = "conv"
    min_scope = {"close": Scope.WRITE}

    @extend_schema(
        operation_id="v1_conversations_list",
        parameters=[ConversationListQuery],
        responses={200: paginated("ConversationList", ConversationSerializer), **v1_errors(400)},
    )
    def list(self, request):
        query = parse_query(request, ConversationListQuery)
        queryset = conversation_list(self.get_queryset(), **{
            k: query.get(k) for k in ("leadId", "status", "channel", "startDate", "endDate")
        }, sort_by=query["sortBy"], sort_order=query["sortOrder"])
        page = paginate(queryset, page=query["page"], limit=query["limit"])
        return Response({"data": [presenters.v1_conversation(c) for c in page.items],
                         "pagination": page.meta})

    @extend_schema(
        operation_id="v1_conversations_search",
        parameters=[MessageSearchQuery],
        responses={200: inline_serializer("MessageSearchResults", fields={
            "data": MessageSearchResultSerializer(many=True),
            "pagination": SearchPaginationSerializer()}), **v1_errors(400)},
    )
    def search(self, request):
        """The messages of the caller's conversations (visitors', the agent's, the staff's)
        that hold the words of ``q``, newest first (docs/conversations.md, "Search")."""
        query = parse_query(request, MessageSearchQuery)
        found = message_search(**self.owner(), query=query["q"], page=query["page"],
                               per_page=query["limit"], channel=query.get("channel"),
                               statuses=[query["status"]] if query.get("status") else None)
        return Response({"data": [presenters.v1_search_result(m) for m in found.results],
                         "pagination": {"page": found.number, "limit": query["limit"],
                                        "hasMore": found.has_next}})

    @extend_schema(
        operation_id="v1_conversations_retrieve",
        parameters=[ConversationDetailQuery],
        responses={200: ConversationDetailSerializer, **v1_errors(400, 404)},
    )
    def retrieve(self, request, id: str):
        query = parse_query(request, ConversationDetailQuery)
        conversation = self.get_object()
        return Response(self._detail(conversation, query))

    @extend_schema(operation_id="v1_conversations_delete", responses={204: None, **v1_errors(404)})
    def destroy(self, request, id: str):
        privacy.erase_conversation(self.get_object(), requested_by=self.requested_by())
        return Response(status=204)

    @extend_schema(operation_id="v1_conversations_close", request=None,
                   responses={200: ConversationDetailSerializer, **v1_errors(404)})
    def close(self, request, id: str):
        conversation = conversation_close(conversation=self.get_object(), reason="closed_by_api")
        return Response(self._detail(conversation, {"includeMessages": False}))

    @extend_schema(operation_id="v1_conversations_attachments",
                   responses={200: inline_serializer("AttachmentList", fields={
                       "data": AttachmentSerializer(many=True)}), **v1_errors(404)})
    def attachments(self, request, id: str):
        """The files sent in the conversation, oldest first (docs/conversations.md,
        "Attachments"): a resource of its own, as the specification's message object has none."""
        conversation = self.get_object()
        files = conversation_attachments(**self.owner(), conversation_id=conversation.pk,
                                         limit=settings.ATTACHMENTS_MAX_PER_CONVERSATION)
        return Response({"data": [presenters.v1_attachment(a) for a in files]})

    @extend_schema(operation_id="v1_conversations_attachment_content",
                   responses={**FILE_RESPONSES, **v1_errors(404)})
    def attachment_content(self, request, id: str, attachmentId: str):  # noqa: N803
        conversation = self.get_object()
        attachment = attachment_get(**self.owner(), conversation_id=conversation.pk,
                                    attachment_id=ids.decode_or_404("att", attachmentId))
        if attachment is None:
            raise NotFound()
        return file_response(attachment)

    def _detail(self, conversation: Conversation, query: dict) -> dict[str, Any]:
        data = presenters.v1_conversation(conversation)
        data["metadata"] = presenters.v1_metadata(conversation)
        data["consent"] = conversation.consent
        if query.get("includeMessages", True):
            messages = conversation_messages(conversation, offset=query.get("messageOffset", 0),
                                             limit=query.get("messageLimit", 50))
            data["messages"] = [presenters.v1_message(m) for m in messages]
        return data

