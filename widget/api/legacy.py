"""The widget's public endpoints on the legacy surface: its configuration (``GET /api/widget``),
the long-lived stream of a chat session (``GET /api/chat/stream``) that brings a human rep's
reply to the visitor's open widget, and the visitor's typing (``POST /api/chat/typing``)."""

from __future__ import annotations

from typing import Any

from asgiref.sync import sync_to_async
from django.http import HttpResponse
from drf_spectacular.utils import (
    OpenApiResponse,
    extend_schema,
    extend_schema_field,
    inline_serializer,
)
from rest_framework import serializers
from rest_framework.response import Response

from analytics.services import record_widget_visit
from config.api.query import parse_query
from config.api.renderers import JSONRenderer
from config.api.schema import legacy_errors
from config.api.views import PublicLegacyAPIView
from conversations import live
from conversations.api.sse import event_schema, event_stream_response, frame
from conversations.api.v1 import FILE_RESPONSES
from conversations.attachments import file_response
from conversations.models import Conversation, ConversationStatus, Rating
from conversations.selectors import (
    message_attachments,
    visitor_attachment,
    visitor_sessions,
    widget_proactive_messages,
)
from conversations.services import conversation_rate, proactive_message_shown
from conversations.services.ratings import RATING_COMMENT_CHARS
from core.errors import NotFound
from core.timestamps import format_timestamp
from tenants.cors import widget_origin_check
from tenants.models import Tenant
from tenants.selectors import tenant_by_public_id
from widget.models import LauncherIcon, Position
from widget.services import widget_look
from widget.strings import localized_look, widget_language, widget_strings

SNAPSHOT_MESSAGES = 50


class WidgetQuery(serializers.Serializer):
    tenant = serializers.CharField(max_length=40, help_text="The tenant's public id (data-tenant).")
    visitorId = serializers.CharField(  # noqa: N815 - the query parameter's name
        max_length=200, required=False,
        help_text="The widget's visitor id: each visitor's first load of a day is a funnel visit.")
    consent = serializers.IntegerField(
        min_value=1, max_value=2_147_483_647, required=False,
        help_text="The version of the tenant's notice the visitor accepted, if any: while the "
                  "tenant requires consent, only a load that accepted the current one counts.")
    language = serializers.CharField(
        max_length=200, required=False, allow_blank=True,
        help_text="Language tags, best first, comma-separated (the widget's `language` option, "
                  "then the browser's): the first the widget speaks, by base language, else "
                  "English (docs/widget.md, \"Languages\").")


# Spelled out rather than a nested serializer: a nullable reference (allOf + nullable) is not
# read as nullable by every OpenAPI 3.0 tool (as analytics' ComparisonField).
@extend_schema_field({
    "type": "object", "nullable": True,
    "description": "The notice the visitor accepts before the widget sends anything "
                   "(docs/widget.md, \"Consent\"); null when the tenant requires none.",
    "properties": {"version": {"type": "integer", "minimum": 1},
                   "text": {"type": "string"},
                   "link": {"type": "string", "format": "uri", "nullable": True}},
    "required": ["version", "text", "link"],
})
class ConsentNoticeField(serializers.DictField):
    pass


class WidgetConfigSerializer(serializers.Serializer):
    tenant = serializers.CharField()
    name = serializers.CharField()
    title = serializers.CharField()
    greeting = serializers.CharField(allow_blank=True)
    position = serializers.ChoiceField(choices=Position.values)
    theme = inline_serializer(name="WidgetTheme", fields={
        "primaryColor": serializers.CharField(), "textColor": serializers.CharField()})
    consent = ConsentNoticeField(allow_null=True)
    honourDoNotTrack = serializers.BooleanField(  # noqa: N815 - the API's field name
        help_text="The widget sends no page metadata when the browser asks not to be tracked.")
    proactive = serializers.ListField(
        child=inline_serializer(name="WidgetProactiveMessage", fields={
            "id": serializers.CharField(help_text="32 hex digits; sent back as the reply's "
                                                  "metadata.proactive."),
            "message": serializers.CharField(),
            "url": serializers.CharField(allow_null=True, help_text=(
                "A path prefix (\"/pricing\"), a pattern where * is any run of characters "
                "(\"/blog/*/pricing\"), or a whole URL starting with http(s)://; null: any "
                "page.")),
            "seconds": serializers.IntegerField(min_value=0, help_text="Seconds on the page."),
            "returning": serializers.BooleanField(allow_null=True, help_text=(
                "true: returning visitors only; false: first-time visitors only; null: any.")),
        }),
        help_text="The tenant's active proactive messages, in the order the widget tries them "
                  "(docs/widget.md, \"Proactive messages\").")
    language = serializers.CharField(help_text="The language of `strings` (ISO 639-1).")
    strings = serializers.DictField(child=serializers.CharField(),
                                    help_text="The widget's own words in that language.")
    launcher = inline_serializer(name="WidgetLauncher", fields={
        "icon": serializers.ChoiceField(choices=LauncherIcon.values),
        "text": serializers.CharField(allow_blank=True)})
    rating = serializers.BooleanField(
        help_text="The widget asks for a rating when a conversation closes.")


def _tenant_in_query(request) -> Tenant | None:
    """The tenant a widget request names (``?tenant=``), for its per-tenant rate limit."""
    return tenant_by_public_id(request.GET.get("tenant"))


def _tenant(public_id: str) -> Tenant:
    tenant = tenant_by_public_id(public_id)
    if tenant is None:
        raise NotFound("Unknown tenant.")
    return tenant


class WidgetConfigView(PublicLegacyAPIView):
    """``GET /api/widget?tenant=<public id>&visitorId=``: what the widget needs before it shows
    itself. A load that names its visitor counts in the analytics funnel's Visitors stage."""

    # docs/rate-limits.md: per client address and per tenant.
    rate_limit_bucket = "public_widget"

    def rate_limit_tenant(self, request) -> Tenant | None:
        return _tenant_in_query(request)

    def handle_exception(self, exc):
        response = super().handle_exception(exc)
        # Any page may read why there is no configuration (an origin not allowed, an unknown
        # tenant, a rate limit): the answer holds nothing of the tenant's, and the widget can
        # then say why instead of the browser's bare "Failed to fetch" (docs/widget.md).
        response["Access-Control-Allow-Origin"] = "*"
        return response

    @extend_schema(
        operation_id="legacy_widget_config",
        auth=[],
        parameters=[WidgetQuery],
        responses={200: WidgetConfigSerializer, **legacy_errors(400, 403, 404, public=True)},
    )
    def get(self, request):
        query = parse_query(request, WidgetQuery)
        tenant = _tenant(query["tenant"])
        widget_origin_check(request, tenant)  # before the visit: a refused page is no visit
        # A visitor who has not accepted the notice has sent nothing the tenant may keep: their
        # load counts once they accept (the widget then loads the configuration again).
        consented = (not tenant.consent_required
                     or query.get("consent") == tenant.consent_version)
        if query.get("visitorId") and consented:
            record_widget_visit(tenant=tenant, visitor_id=query["visitorId"], livemode=True)
        look = widget_look(tenant=tenant)
        language = widget_language(query.get("language"))
        title, greeting = localized_look(look.title, look.greeting, language)
        response = Response({
            "tenant": tenant.public_id,
            "name": tenant.name,
            "title": title,
            "greeting": greeting,
            "position": look.position,
            "theme": {"primaryColor": look.primary_color, "textColor": look.text_color},
            "consent": ({"version": tenant.consent_version, "text": tenant.consent_text,
                         "link": tenant.consent_link or None}
                        if tenant.consent_required else None),
            "honourDoNotTrack": tenant.honour_do_not_track,
            "proactive": widget_proactive_messages(tenant=tenant),
            "language": language,
            "strings": widget_strings(language),
            "launcher": {"icon": look.launcher_icon, "text": look.launcher_text},
            "rating": look.rating_enabled,
        })
        # Short: a change in the dashboard shows on the customer's site within a minute.
        response["Cache-Control"] = "public, max-age=60"
        return response


class StreamQuery(serializers.Serializer):
    tenant = serializers.CharField(max_length=40, help_text="The tenant's public id.")
    sessionId = serializers.UUIDField(  # noqa: N815 - the query parameter's name
        help_text="The session (UUID) of the visitor's chat.")
    visitorId = serializers.CharField(max_length=200, help_text="The visitor's id.")  # noqa: N815


def _snapshot(conversation_id) -> dict[str, Any]:
    conversation = (Conversation.objects.select_related("assigned_to", "tenant")
                    .get(pk=conversation_id))
    recent = list(conversation.messages.select_related("author")
                  .order_by("-sequence")[:SNAPSHOT_MESSAGES])
    files = message_attachments([m.pk for m in recent])
    return {
        "sessionId": str(conversation.pk),
        **live.status_payload(conversation),
        "messages": [live.message_payload(m, files.get(m.pk, [])) for m in reversed(recent)],
    }


class ChatStreamView(PublicLegacyAPIView):
    """``GET /api/chat/stream?tenant=&sessionId=&visitorId=``: Server-Sent Events of one chat
    session, open as long as the visitor's page is."""

    # Opening the stream is a cheap read, once per page view (and per reconnection): it counts
    # with the widget's requests, not against the chat's language-model budget.
    rate_limit_bucket = "public_widget"

    def rate_limit_tenant(self, request) -> Tenant | None:
        return _tenant_in_query(request)

    def perform_content_negotiation(self, request, force=False):
        renderer = JSONRenderer()  # errors are JSON whatever the Accept header (EventSource's)
        return renderer, renderer.media_type

    @extend_schema(
        operation_id="legacy_chat_stream",
        auth=[],
        parameters=[StreamQuery],
        responses={
            (200, "text/event-stream"): OpenApiResponse(
                event_schema(("session", "message", "status", "typing")),
                description="text/event-stream: `session` {sessionId, status, agent, messages} "
                            "first, then `message` {id, role, content, author, createdAt}, "
                            "`status` {status, agent} and `typing` {role, author} as they "
                            "happen (docs/widget.md)."),
            **legacy_errors(400, 404, public=True),
        },
    )
    def get(self, request):
        query = parse_query(request, StreamQuery)
        tenant = tenant_by_public_id(query["tenant"])
        conversation = (visitor_sessions(tenant=tenant, session_id=query["sessionId"],
                                         visitor_id=query["visitorId"])
                        .values_list("pk", flat=True).first())
        if conversation is None:
            raise NotFound("No such chat session for this visitor.")
        return event_stream_response(_frames(conversation))


async def _frames(conversation_id):
    snapshot = sync_to_async(_snapshot)

    async for item in live.listen(conversation_id, snapshot=lambda: snapshot(conversation_id)):
        yield b": keep-alive\n\n" if item is None else frame(*item)



class AttachmentView(PublicLegacyAPIView):
    """``GET /api/chat/attachments/<id>?tenant=&sessionId=&visitorId=``: a file of the visitor's
    own chat session (docs/widget.md, "Attachments"). Anyone else gets 404: the session and
    visitor ids are the visitor's credentials, the file's UUID is unguessable."""

    rate_limit_bucket = "public_widget"

    def rate_limit_tenant(self, request) -> Tenant | None:
        return _tenant_in_query(request)

    def perform_content_negotiation(self, request, force=False):
        renderer = JSONRenderer()  # errors are JSON whatever the Accept header (an <img>'s)
        return renderer, renderer.media_type

    @extend_schema(
        operation_id="legacy_chat_attachment",
        auth=[],
        parameters=[StreamQuery],
        responses={**FILE_RESPONSES, **legacy_errors(400, 404, public=True)},
    )
    def get(self, request, attachment_id):
        query = parse_query(request, StreamQuery)
        tenant = tenant_by_public_id(query["tenant"])
        attachment = tenant and visitor_attachment(
            tenant=tenant, session_id=query["sessionId"], visitor_id=query["visitorId"],
            attachment_id=attachment_id)
        if not attachment:
            raise NotFound("No such file in this visitor's chat.")
        return file_response(attachment, cross_origin=True)


class TypingView(PublicLegacyAPIView):
    """``POST /api/chat/typing?tenant=&sessionId=&visitorId=``: the visitor is typing. Passed on
    to the person who has the conversation (``conversations.live.typing``), only while it is
    handed off; nothing is stored. The widget sends it at most every few seconds while its box
    changes; without a body, so that a browser sends it without a CORS preflight."""

    rate_limit_bucket = "public_widget"

    def rate_limit_tenant(self, request) -> Tenant | None:
        return _tenant_in_query(request)

    @extend_schema(
        operation_id="legacy_chat_typing",
        auth=[],
        request=None,
        parameters=[StreamQuery],
        responses={204: OpenApiResponse(description="Taken (passed on while a person has the "
                                                    "conversation)."),
                   **legacy_errors(400, 404, public=True)},
    )
    def post(self, request):
        query = parse_query(request, StreamQuery)
        tenant = tenant_by_public_id(query["tenant"])
        status = (visitor_sessions(tenant=tenant, session_id=query["sessionId"],
                                   visitor_id=query["visitorId"])
                  .values_list("status", flat=True).first())
        if not status:
            raise NotFound("No such chat session for this visitor.")
        if status == ConversationStatus.HANDED_OFF:
            live.typing(query["sessionId"], role="user")
        return HttpResponse(status=204)


class ProactiveQuery(serializers.Serializer):
    tenant = serializers.CharField(max_length=40, help_text="The tenant's public id.")
    id = serializers.UUIDField(help_text="The proactive message's id, as the configuration "
                                         "gives it.")


class ProactiveShownView(PublicLegacyAPIView):
    """``POST /api/widget/proactive?tenant=&id=``: the widget showed this proactive message to a
    visitor (its count on the dashboard). Nothing about the visitor is sent or kept; without a
    body, so that a browser sends it without a CORS preflight."""

    rate_limit_bucket = "public_widget"

    def rate_limit_tenant(self, request) -> Tenant | None:
        return _tenant_in_query(request)

    @extend_schema(
        operation_id="legacy_widget_proactive_shown",
        auth=[],
        request=None,
        parameters=[ProactiveQuery],
        responses={204: OpenApiResponse(description="Counted."),
                   **legacy_errors(400, 403, 404, public=True)},
    )
    def post(self, request):
        query = parse_query(request, ProactiveQuery)
        tenant = _tenant(query["tenant"])
        widget_origin_check(request, tenant)
        if not proactive_message_shown(tenant=tenant, proactive_id=query["id"]):
            raise NotFound("No such active proactive message.")
        return HttpResponse(status=204)


class RatingBody(serializers.Serializer):
    rating = serializers.ChoiceField(choices=Rating.values, help_text="`good` or `bad`.")
    comment = serializers.CharField(max_length=RATING_COMMENT_CHARS, required=False,
                                    allow_blank=True, default="",
                                    help_text="Optional words of the visitor.")


class RatingView(PublicLegacyAPIView):
    """``POST /api/chat/rating?tenant=&sessionId=&visitorId=``: the visitor's satisfaction
    rating of their conversation once it has ended, while the tenant's widget asks for one. A
    later rating replaces the earlier (the widget sends the tap, then the tap with a comment)."""

    rate_limit_bucket = "public_widget"

    def rate_limit_tenant(self, request) -> Tenant | None:
        return _tenant_in_query(request)

    @extend_schema(
        operation_id="legacy_chat_rating",
        auth=[],
        request=RatingBody,
        parameters=[StreamQuery],
        responses={200: inline_serializer(name="LegacyChatRating", fields={
                       "sessionId": serializers.UUIDField(),
                       "rating": serializers.ChoiceField(choices=Rating.values),
                       "comment": serializers.CharField(allow_blank=True),
                       "ratedAt": serializers.CharField()}),
                   **legacy_errors(400, 404, 409, public=True, body=True)},
    )
    def post(self, request):
        query = parse_query(request, StreamQuery)
        body = RatingBody(data=request.data)
        body.is_valid(raise_exception=True)
        tenant = tenant_by_public_id(query["tenant"])
        conversation = visitor_sessions(tenant=tenant, session_id=query["sessionId"],
                                        visitor_id=query["visitorId"]).first()
        if conversation is None:
            raise NotFound("No such chat session for this visitor.")
        rated = conversation_rate(conversation=conversation, rating=body.validated_data["rating"],
                                  comment=body.validated_data["comment"],
                                  asked=widget_look(tenant=tenant).rating_enabled)
        return Response({"sessionId": str(rated.pk), "rating": rated.rating,
                         "comment": rated.rating_comment,
                         "ratedAt": format_timestamp(rated.rated_at)})
