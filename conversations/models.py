"""Conversations (chat sessions) and their messages.

A chat session and its conversation are one row: v1 shows it as ``conv_<hex>`` and, on the chat
endpoints, as ``sess_<hex>`` of the same UUID.
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.db.models.functions import Lower
from django.utils import timezone

from core.work import RetriedWork


class Channel(models.TextChoices):
    WEB_CHAT = "web_chat", "Website chat widget"
    API = "api", "API"
    WHATSAPP = "whatsapp", "WhatsApp"
    SLACK = "slack", "Slack"


class ConversationStatus(models.TextChoices):
    ACTIVE = "active", "Active"
    CLOSED = "closed", "Closed"
    HANDED_OFF = "handed_off", "Handed off to a person"
    EXPIRED = "expired", "Expired"


class Rating(models.TextChoices):
    GOOD = "good", "Good"
    BAD = "bad", "Bad"


# The legacy surface's words for the same states (docs/conversations.md).
LEGACY_STATUS = {
    ConversationStatus.ACTIVE: "active",
    ConversationStatus.CLOSED: "completed",
    ConversationStatus.HANDED_OFF: "handed_off",
    ConversationStatus.EXPIRED: "completed",
}

IDLE_EXPIRY = timezone.timedelta(minutes=30)


class Conversation(models.Model):
    """One visitor's chat: its messages, what the agent learned, and who has it now."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey("tenants.Tenant", on_delete=models.CASCADE, db_index=False,
                               related_name="conversations")
    livemode = models.BooleanField()
    lead = models.ForeignKey("leads.Lead", null=True, blank=True, on_delete=models.SET_NULL,
                             related_name="conversations")
    visitor_id = models.CharField(max_length=200)
    channel = models.CharField(max_length=10, choices=Channel.choices, default=Channel.API)
    status = models.CharField(max_length=10, choices=ConversationStatus.choices,
                              default=ConversationStatus.ACTIVE)
    subject = models.CharField(max_length=200, blank=True)
    summary = models.TextField(blank=True)
    intents = models.JSONField(default=list, blank=True)  # distinct, in order of first detection
    signals = models.JSONField(default=list, blank=True)  # buying signals seen so far
    # Contact details gathered before there is a lead (a name before the email, say).
    contact = models.JSONField(default=dict, blank=True)
    lead_score = models.PositiveSmallIntegerField(default=0)
    score_reasons = models.JSONField(default=list, blank=True)
    language = models.CharField(max_length=8, blank=True)
    assigned_to = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                    on_delete=models.SET_NULL, related_name="conversations")
    # When ``assigned_to`` joined: took the conversation over, or first replied. Until then the
    # visitor is told who will reply, not that someone has joined (docs/conversations.md).
    joined_at = models.DateTimeField(null=True, blank=True)
    # When the visitor of a handed-off conversation was last told that a person will reply (the
    # agent's notice) or last heard from one (a person's reply): until ``joined_at``, the notice
    # is repeated only after a long silence (docs/conversations.md).
    handoff_notice_at = models.DateTimeField(null=True, blank=True)
    handoff = models.JSONField(null=True, blank=True)  # {reason, priority, suggestedTeam, context}
    # When it was last handed off: the Unassigned queue is offered oldest first.
    handed_off_at = models.DateTimeField(null=True, blank=True)
    metadata = models.JSONField(default=dict, blank=True)  # userAgent, referrer, landingPage, ...
    # The visitor's acceptance of the tenant's notice (docs/widget.md, "Consent"): {version,
    # text, link, acceptedAt}, the words they accepted and when; null when none was required.
    consent = models.JSONField(null=True, blank=True)
    # The visitor's satisfaction rating when it closed (docs/widget.md, "Rating"): one per
    # conversation, a later one replaces it; the comment is the visitor's words, erased with it.
    rating = models.CharField(max_length=4, choices=Rating.choices, blank=True)
    rating_comment = models.TextField(blank=True)
    rated_at = models.DateTimeField(null=True, blank=True)
    offered_slots = models.JSONField(default=list, blank=True)  # slot tokens last offered
    high_value_notified = models.BooleanField(default=False)  # intent.high_value fires once
    message_count = models.PositiveIntegerField(default=0)
    started_at = models.DateTimeField(default=timezone.now)
    last_message_at = models.DateTimeField(default=timezone.now)
    ended_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)
    # The staff's labels (docs/dashboard.md, "Inbox"): added and removed on the conversation's
    # page, a filter of the list.
    tags = models.ManyToManyField("Tag", through="ConversationTag", related_name="conversations",
                                  blank=True)

    class Meta:
        ordering = ["-last_message_at", "-id"]
        indexes = [
            models.Index(fields=["tenant", "livemode", "last_message_at", "id"], name="conv_last_msg"),
            models.Index(fields=["tenant", "livemode", "started_at", "id"], name="conv_started"),
            models.Index(fields=["tenant", "livemode", "message_count", "id"], name="conv_msg_count"),
            models.Index(fields=["tenant", "livemode", "status", "last_message_at", "id"],
                         name="conv_status"),
            models.Index(fields=["tenant", "livemode", "channel", "last_message_at", "id"],
                         name="conv_channel"),
            models.Index(fields=["tenant", "livemode", "lead", "started_at", "id"], name="conv_lead"),
            models.Index(fields=["tenant", "livemode", "visitor_id", "last_message_at"],
                         name="conv_visitor"),
            # The expiry sweeper: active conversations by idleness, across tenants.
            models.Index(fields=["last_message_at"], condition=models.Q(status="active"),
                         name="conv_active_idle"),
            # The Unassigned queue (handed off to nobody), oldest first; open handoffs per rep.
            models.Index(fields=["tenant", "handed_off_at", "id"],
                         condition=models.Q(status="handed_off", assigned_to__isnull=True),
                         name="conv_unassigned"),
            models.Index(fields=["assigned_to"], condition=models.Q(status="handed_off"),
                         name="conv_open_handoffs"),
            # Analytics' satisfaction: the rated conversations of a period (by start).
            models.Index(fields=["tenant", "livemode", "started_at"],
                         condition=models.Q(rated_at__isnull=False), name="conv_rated"),
        ]

    def __str__(self) -> str:
        return f"{self.get_channel_display()} conversation {self.pk}"

    @property
    def is_open(self) -> bool:
        return self.status in (ConversationStatus.ACTIVE, ConversationStatus.HANDED_OFF)


class Tag(models.Model):
    """A label of the tenant's own ("Pricing", "VIP"), optionally coloured, that the staff put on
    conversations. It belongs to the tenant, not to a mode, as its settings do: the same labels
    serve live and test data."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey("tenants.Tenant", on_delete=models.CASCADE, db_index=False,
                               related_name="+")
    name = models.CharField(max_length=40)
    colour = models.CharField(max_length=7, blank=True)  # "#rrggbb", or none: the default look
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["name", "id"]
        constraints = [
            # One "VIP" per tenant, whatever its case.
            models.UniqueConstraint(Lower("name"), "tenant", name="tag_name_per_tenant"),
        ]

    def __str__(self) -> str:
        return self.name


class ConversationTag(models.Model):
    """A tag on a conversation: deleted with either (the conversation's erasure takes it)."""

    id = models.BigAutoField(primary_key=True)
    # No index of its own: ``conversation_tag_once`` (conversation, tag) starts with it.
    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, db_index=False,
                                     related_name="+")
    tag = models.ForeignKey(Tag, on_delete=models.CASCADE, db_index=False, related_name="+")
    tenant = models.ForeignKey("tenants.Tenant", on_delete=models.CASCADE, db_index=False,
                               related_name="+")
    livemode = models.BooleanField()
    added_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                 on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["conversation", "tag"], name="conversation_tag_once"),
        ]
        # The list filtered by a tag: its conversations.
        indexes = [models.Index(fields=["tag", "conversation"], name="conversation_tag_by_tag")]

    def __str__(self) -> str:
        return f"{self.tag_id} on {self.conversation_id}"


class Note(models.Model):
    """An internal note of the staff on a conversation or on a lead (exactly one of them).

    Never the visitor's to see: notes are rows of their own, not messages, so no transcript,
    no API, no webhook and no agent history can carry one. ``mentions`` are the ids (strings)
    of the teammates it names with ``@handle``, notified when it is written."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey("tenants.Tenant", on_delete=models.CASCADE, db_index=False,
                               related_name="+")
    livemode = models.BooleanField()
    conversation = models.ForeignKey(Conversation, null=True, blank=True, on_delete=models.CASCADE,
                                     db_index=False, related_name="notes")
    lead = models.ForeignKey("leads.Lead", null=True, blank=True, on_delete=models.CASCADE,
                             db_index=False, related_name="notes")
    author = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                               on_delete=models.SET_NULL, related_name="+")
    content = models.TextField()
    mentions = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [
            models.Index(fields=["conversation", "created_at"], name="note_conversation",
                         condition=models.Q(conversation__isnull=False)),
            models.Index(fields=["lead", "created_at"], name="note_lead",
                         condition=models.Q(lead__isnull=False)),
        ]
        constraints = [
            models.CheckConstraint(
                condition=(models.Q(conversation__isnull=False, lead__isnull=True)
                           | models.Q(conversation__isnull=True, lead__isnull=False)),
                name="note_on_one_thing"),
        ]

    def __str__(self) -> str:
        return f"Note {self.pk}"


class CannedReply(models.Model):
    """A reply the tenant's staff insert by its shortcut ("/pricing") in the reply box, with
    ``{first_name}``, ``{meeting_link}`` and ``{agent_name}`` filled from the conversation's lead,
    the tenant and the person replying (``conversations.canned``). The tenant's, both modes."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey("tenants.Tenant", on_delete=models.CASCADE, db_index=False,
                               related_name="+")
    shortcut = models.CharField(max_length=30)
    content = models.TextField()
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["shortcut", "id"]
        constraints = [
            models.UniqueConstraint(fields=["tenant", "shortcut"], name="canned_reply_shortcut"),
        ]

    def __str__(self) -> str:
        return f"/{self.shortcut}"


class Returning(models.TextChoices):
    ANY = "any", "Any visitor"
    YES = "yes", "Returning visitors only"
    NO = "no", "First-time visitors only"


class ProactiveMessage(models.Model):
    """A message of the tenant's that the widget shows by itself when a visitor's page matches
    (docs/widget.md, "Proactive messages"): a URL pattern, a time on the page, returning or
    not, all of those given. The tenant's, both modes (the widget is live; a rule is a
    setting). The browser decides when it fires; the service stores the message as the
    agent's, marked ``proactive``, when the visitor replies to it (``turn_open``).

    ``shown_count`` and ``replied_count`` are the widget's reports and the replies stored: a
    rough guide to what works, not an audit (anyone may report a showing)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey("tenants.Tenant", on_delete=models.CASCADE, db_index=False,
                               related_name="+")
    message = models.CharField(max_length=500)
    # "/pricing" (a prefix of the page's path), "/blog/*/pricing" (* is any run of characters),
    # or a whole URL ("https://shop.example/*"); empty: every page.
    url_pattern = models.CharField(max_length=200, blank=True)
    seconds_on_page = models.PositiveIntegerField(default=0)
    returning = models.CharField(max_length=3, choices=Returning.choices, default=Returning.ANY)
    active = models.BooleanField(default=True)
    priority = models.PositiveSmallIntegerField(default=100)  # lower first, when several match
    shown_count = models.PositiveIntegerField(default=0)
    replied_count = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["priority", "created_at", "id"]
        # The widget's configuration reads the tenant's active ones, in order, at each load.
        indexes = [models.Index(fields=["tenant", "active", "priority", "created_at"],
                                name="proactive_active")]

    def __str__(self) -> str:
        return self.message[:60]


class ConversationRead(models.Model):
    """How far a person of the staff has read a conversation: its message count when they last
    had it open. Messages beyond it are unread to them (the list's markers)."""

    id = models.BigAutoField(primary_key=True)
    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, db_index=False,
                                     related_name="+")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    seen_count = models.PositiveIntegerField(default=0)
    seen_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["conversation", "user"], name="conversation_read_once"),
        ]

    def __str__(self) -> str:
        return f"{self.user_id} read {self.seen_count} of {self.conversation_id}"


class Role(models.TextChoices):
    USER = "user", "Visitor"
    ASSISTANT = "assistant", "Assistant"


class Message(models.Model):
    """One message. Assistant messages carry what the agent read in the visitor's message."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    # No index of its own: ``message_sequence`` (conversation, sequence) serves every lookup by
    # conversation, and a second index cost each message one more insert at a random place.
    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, db_index=False,
                                     related_name="messages")
    tenant = models.ForeignKey("tenants.Tenant", on_delete=models.CASCADE, db_index=False,
                               related_name="+")
    livemode = models.BooleanField()
    sequence = models.PositiveIntegerField()  # 0, 1, 2... within the conversation
    role = models.CharField(max_length=10, choices=Role.choices)
    content = models.TextField()
    intent = models.CharField(max_length=40, blank=True)
    confidence = models.FloatField(null=True, blank=True)
    # A person of the tenant who wrote this assistant message (human takeover), if not the agent.
    author = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                               on_delete=models.SET_NULL, related_name="+")
    suggested_actions = models.JSONField(default=list, blank=True)
    handoff = models.JSONField(null=True, blank=True)
    sources = models.JSONField(default=list, blank=True)  # knowledge documents the reply used
    # Set when a stream ended before the reply was complete (client gone, provider failed).
    interrupted = models.BooleanField(default=False)
    # The tenant's proactive message the visitor replied to (``ProactiveMessage``), stored as
    # the agent's just before that reply: shown as such to the staff and on the API.
    proactive = models.BooleanField(default=False)
    # The path an agent reply took (docs/agent.md): whose analysis ("model", "fallback"), who
    # wrote it, and why it ended early, if it did ("cap", "repetition", "grounding", …).
    turn = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["sequence"]
        constraints = [
            models.UniqueConstraint(fields=["conversation", "sequence"], name="message_sequence"),
        ]
        indexes = [
            # The search, newest first (``conversations.search``): a word in many messages is
            # found by walking this back until a page is full, a rare one by the words' index.
            # Appended to at each message, as created_at grows.
            models.Index(fields=["tenant", "livemode", "created_at", "id"], name="message_recent"),
        ]

    def __str__(self) -> str:
        return f"{self.role}: {self.content[:60]}"


class Attachment(models.Model):
    """A file a visitor or a person of the staff sent with a message (docs/conversations.md,
    "Attachments"): an image (PNG, JPEG, GIF, WebP) or a PDF, its type read from its bytes.

    The bytes are in the ``attachments`` storage under ``storage_key`` (``<tenant>/<id>``: never
    the visitor's file name); the row keeps the sanitised original name, the type, the size and
    the SHA-256. Its UUID is the unguessable part of every URL that serves it. Deleted with its
    conversation, whose deletion removes the files (``conversation_delete``)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey("tenants.Tenant", on_delete=models.CASCADE, db_index=False,
                               related_name="+")
    livemode = models.BooleanField()
    # No index of its own: ``attachment_conversation`` starts with it.
    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, db_index=False,
                                     related_name="attachments")
    message = models.ForeignKey(Message, on_delete=models.CASCADE, related_name="attachments")
    # Who sent it: the visitor (``role`` user) or a person of the staff (``author``).
    role = models.CharField(max_length=10, choices=Role.choices)
    author = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                               on_delete=models.SET_NULL, related_name="+")
    name = models.CharField(max_length=200)
    content_type = models.CharField(max_length=40)
    size = models.PositiveIntegerField()
    sha256 = models.CharField(max_length=64)
    storage_key = models.CharField(max_length=200, unique=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [
            # A conversation's files (its count limit, the v1 list, its deletion).
            models.Index(fields=["conversation", "created_at"], name="attachment_conversation"),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def is_image(self) -> bool:
        return self.content_type.startswith("image/")


class MeetingStatus(models.TextChoices):
    SCHEDULED = "scheduled", "Scheduled"
    CANCELLED = "cancelled", "Cancelled"
    COMPLETED = "completed", "Completed"


class Meeting(models.Model):
    """A discovery meeting the agent booked for a lead, in the tenant's availability, with one
    of the tenant's people (``host``, picked round-robin). Its id is the iCalendar UID of every
    invitation; ``sequence`` is the iCalendar SEQUENCE, one more at each reschedule or cancel
    (docs/meetings.md)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey("tenants.Tenant", on_delete=models.CASCADE, db_index=False,
                               related_name="meetings")
    livemode = models.BooleanField()
    lead = models.ForeignKey("leads.Lead", on_delete=models.CASCADE, related_name="meetings")
    conversation = models.ForeignKey(Conversation, null=True, blank=True, on_delete=models.SET_NULL,
                                     related_name="meetings")
    starts_at = models.DateTimeField()
    ends_at = models.DateTimeField()
    time_zone = models.CharField(max_length=64, default="UTC")
    status = models.CharField(max_length=10, choices=MeetingStatus.choices,
                              default=MeetingStatus.SCHEDULED)
    host = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                             on_delete=models.SET_NULL, related_name="hosted_meetings")
    sequence = models.PositiveIntegerField(default=0)
    # Who cancelled it: "visitor" (the signed link) or "staff" (the dashboard).
    cancelled_by = models.CharField(max_length=10, blank=True)
    cancelled_at = models.DateTimeField(null=True, blank=True)
    # The lead's status when this meeting was booked: a cancellation moves the lead back to it
    # (docs/meetings.md, "The lead after a cancellation").
    lead_status_before = models.CharField(max_length=12, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["starts_at", "id"]
        indexes = [models.Index(fields=["tenant", "livemode", "starts_at"], name="meeting_start")]
        constraints = [
            # Two bookings of one slot: the second insert fails and the agent offers other times.
            models.UniqueConstraint(fields=["tenant", "livemode", "starts_at"],
                                    condition=models.Q(status="scheduled"),
                                    name="meeting_one_per_slot"),
        ]

    def __str__(self) -> str:
        return f"Meeting {self.starts_at:%Y-%m-%d %H:%M} with {self.lead_id}"


class EmailKind(models.TextChoices):
    MEETING_INVITATION = "meeting_invitation", "Meeting confirmation (visitor)"
    MEETING_UPDATE = "meeting_update", "Meeting rescheduled (visitor)"
    MEETING_CANCELLATION = "meeting_cancellation", "Meeting cancelled (visitor)"
    HOST_MEETING = "host_meeting", "Meeting booked (host)"
    HANDOFF = "handoff", "Conversation handed off (rep)"
    STAFF_INVITATION = "staff_invitation", "Invitation to join the team"
    MENTION = "mention", "Mentioned in a note (teammate)"


class EmailStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    SENT = "sent", "Sent"
    FAILED = "failed", "Failed"


class OutboundEmail(RetriedWork):
    """One email the service sends, as data (docs/meetings.md, "Email"): written, rendered, in
    the transaction of the event that calls for it, and sent after commit by a Celery task that
    claims it, so that sending never blocks a request and a failure loses nothing.

    ``attempts`` counts the tries; a failed try waits ``next_attempt_at`` (the backoff) and the
    sweeper enqueues it again; after the last one it is ``failed`` with ``last_error``.
    ``claim_token``/``lease_expires_at`` keep two workers from sending it at once (core.work)."""

    PENDING = EmailStatus.QUEUED

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey("tenants.Tenant", on_delete=models.CASCADE, db_index=False,
                               related_name="+")
    livemode = models.BooleanField()
    kind = models.CharField(max_length=24, choices=EmailKind.choices)
    to = models.EmailField(max_length=254)
    from_email = models.CharField(max_length=320)
    subject = models.CharField(max_length=300)
    text_body = models.TextField()
    html_body = models.TextField(blank=True)
    ics = models.TextField(blank=True)  # the text/calendar attachment, if any
    ics_method = models.CharField(max_length=10, blank=True)  # REQUEST or CANCEL
    lead = models.ForeignKey("leads.Lead", null=True, blank=True, on_delete=models.SET_NULL,
                             related_name="emails")
    meeting = models.ForeignKey(Meeting, null=True, blank=True, on_delete=models.SET_NULL,
                                related_name="emails")
    conversation_id = models.UUIDField(null=True, blank=True)
    event_id = models.UUIDField(null=True, blank=True)  # the event that called for it
    status = models.CharField(max_length=10, choices=EmailStatus.choices, default=EmailStatus.QUEUED)
    sent_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["tenant", "livemode", "lead", "created_at"], name="email_lead"),
            # The sweeper: queued emails by due time, across tenants.
            models.Index(fields=["next_attempt_at"], condition=models.Q(status="queued"),
                         name="email_due"),
        ]
        constraints = [
            # An event's subscriber running twice writes each email once.
            models.UniqueConstraint(fields=["event_id", "kind", "to"], name="email_once_per_event",
                                    condition=models.Q(event_id__isnull=False)),
        ]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} to {self.to}"
