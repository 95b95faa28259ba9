"""Conversations, messages, meetings and emails change and go only through the chat's and the
dashboard's services (events, live streams, the meeting's emails and calendar, erasure): the
admin shows them (core/admin.py)."""

from django.contrib import admin

from core.admin import ViewOnlyAdmin, ViewOnlyInline

from .models import Conversation, Meeting, Message, OutboundEmail


class MessageInline(ViewOnlyInline):
    model = Message
    fields = ["sequence", "role", "author", "content", "intent", "confidence", "created_at"]
    readonly_fields = fields
    ordering = ["sequence"]
    show_change_link = True


@admin.register(Conversation)
class ConversationAdmin(ViewOnlyAdmin):
    list_display = ["id", "tenant", "livemode", "channel", "status", "lead", "assigned_to",
                    "message_count", "lead_score", "last_message_at"]
    list_filter = ["status", "channel", "livemode", "tenant"]
    search_fields = ["id", "visitor_id", "subject", "lead__email", "tenant__name"]
    list_select_related = ["tenant", "lead", "assigned_to"]
    ordering = ["-last_message_at", "-id"]
    inlines = [MessageInline]


@admin.register(Message)
class MessageAdmin(ViewOnlyAdmin):
    list_display = ["id", "conversation", "tenant", "role", "author", "intent", "created_at"]
    list_filter = ["role", "livemode", "interrupted", "tenant"]
    search_fields = ["content", "conversation__id"]
    list_select_related = ["tenant", "author", "conversation"]
    ordering = ["-created_at", "-id"]


@admin.register(Meeting)
class MeetingAdmin(ViewOnlyAdmin):
    list_display = ["starts_at", "lead", "tenant", "livemode", "status", "host", "sequence",
                    "time_zone"]
    list_filter = ["status", "livemode", "tenant"]
    search_fields = ["lead__email", "tenant__name"]
    list_select_related = ["lead", "tenant", "host"]
    ordering = ["-starts_at", "-id"]


@admin.register(OutboundEmail)
class OutboundEmailAdmin(ViewOnlyAdmin):
    """The emails the service sent or is sending: the dashboard shows them per lead."""

    list_display = ["created_at", "kind", "to", "subject", "tenant", "livemode", "status",
                    "attempts", "last_error"]
    list_filter = ["status", "kind", "livemode", "tenant"]
    search_fields = ["to", "subject", "tenant__name"]
    list_select_related = ["tenant"]
    ordering = ["-created_at", "-id"]
    exclude = ["claim_token"]
