"""Tenants (the customers of the service) and the people who work in them."""

from __future__ import annotations

import secrets
import uuid

from django.contrib.auth.models import AbstractUser
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models

from core import crypto


def new_public_id() -> str:
    return "tn_" + secrets.token_hex(10)


class Plan(models.TextChoices):
    STARTER = "starter", "Starter"
    GROWTH = "growth", "Growth"  # shown as "pro" on the v1 surface
    ENTERPRISE = "enterprise", "Enterprise"


class AgentProvider(models.TextChoices):
    BUILTIN = "builtin", "Built-in offline agent"
    OPENAI = "openai", "OpenAI-compatible provider"


class AgentDecision(models.TextChoices):
    """The decisions the agent takes by meaning (``agent.understanding.DECISIONS``, which a test
    keeps equal to these: ``tenants`` sits below ``agent`` and may not import it), with the
    words the dashboard shows for them."""

    PERSON = "person", "Wants to talk to a person"
    MEETING = "meeting", "Wants a meeting or a demo"
    PRICING = "pricing", "Asks about pricing"
    OBJECTION = "objection", "Raises an objection"
    NOT_INTERESTED = "not_interested", "Is not interested"
    SUPPORT = "support", "Has a support problem"
    GOODBYE = "goodbye", "Says goodbye"
    GREETING = "greeting", "Says hello"


class EmbeddingsSource(models.TextChoices):
    """Whose embeddings knowledge retrieval compares (docs/knowledge.md, "The provider's
    embeddings"): the local model's, always stored, or also those of the tenant's provider."""

    LOCAL = "local", "The local model"
    PROVIDER = "provider", "The provider's /v1/embeddings"


class Tenant(models.Model):
    """A customer of the service. Every tenant-owned row points here."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    name = models.CharField(max_length=200)
    # What the widget's data-tenant attribute carries: public, unguessable, not the primary key.
    public_id = models.CharField(max_length=40, unique=True, default=new_public_id, editable=False)
    plan = models.CharField(max_length=20, choices=Plan.choices, default=Plan.STARTER)

    agent_provider = models.CharField(
        max_length=20, choices=AgentProvider.choices, default=AgentProvider.BUILTIN
    )
    agent_model = models.CharField(max_length=100, default="gpt-4o-mini", blank=True)
    agent_base_url = models.URLField(
        blank=True, help_text="Optional OpenAI-compatible base URL, for example a local server."
    )
    # Encrypted at rest; never returned by any API after it is set.
    agent_api_key_encrypted = models.TextField(blank=True, editable=False)
    # The limits of every reply (docs/agent.md, "Reply limits"): whichever the model reaches
    # first ends the reply on a whole sentence.
    agent_max_reply_tokens = models.PositiveSmallIntegerField(default=300)
    agent_max_reply_chars = models.PositiveSmallIntegerField(default=1200)
    agent_turn_seconds = models.PositiveSmallIntegerField(
        default=20, help_text="The whole turn's deadline: analysis and reply.")
    # Knowledge retrieval by the provider's embeddings instead of the local model's (only with
    # the openai provider; the local vectors stay, as the fallback). The model is the name the
    # provider's /v1/embeddings takes, e.g. "text-embedding-3-small".
    agent_embeddings = models.CharField(max_length=10, choices=EmbeddingsSource.choices,
                                        default=EmbeddingsSource.LOCAL)
    agent_embedding_model = models.CharField(max_length=100, blank=True)

    # The tenant's own example phrasings of the agent's decisions (docs/agent.md, "Adding
    # phrasings"): [{"id": uuid hex, "decision", "text", "createdAt": ISO 8601}], at most
    # ``tenants.services.MAX_AGENT_PHRASINGS``. On the tenant's row, which every chat turn
    # already reads with its key: a change counts from the next turn, at no extra statement.
    agent_phrasings = models.JSONField(default=list, blank=True)

    # Facts about the tenant that the agent may state besides its knowledge base (docs/agent.md,
    # "Grounding"): what the product is, where the prices are, the business hours.
    product_summary = models.TextField(blank=True)
    pricing_url = models.URLField(blank=True)
    business_hours = models.CharField(max_length=200, blank=True)

    # Meetings the agent may book: the tenant's time zone, working days (0 = Monday) and
    # hours, and the length of a discovery call. An external booking link replaces the slots.
    meeting_timezone = models.CharField(max_length=64, default="UTC")
    meeting_days = models.JSONField(default=list, blank=True,
                                    help_text="Working days, 0 = Monday; empty means Monday-Friday.")
    meeting_start_hour = models.PositiveSmallIntegerField(default=9)
    meeting_end_hour = models.PositiveSmallIntegerField(default=17)
    meeting_minutes = models.PositiveSmallIntegerField(default=30)
    booking_url = models.URLField(blank=True)
    # Presence (docs/dashboard.md, "Availability and routing"): a person with a dashboard open
    # and no activity for this long turns away.
    presence_idle_seconds = models.PositiveIntegerField(default=600)

    # Qualification (docs/agent.md): an email, a score of at least this, and this many of the
    # four BANT criteria.
    qualification_min_score = models.PositiveSmallIntegerField(default=60)
    qualification_min_bant = models.PositiveSmallIntegerField(default=2)
    # The estimated deal size of a qualified lead, in USD: intent.high_value's
    # estimatedDealSize and the analytics pipeline value.
    default_deal_value = models.DecimalField(max_digits=12, decimal_places=2, default=10000)

    # Origins (scheme://host[:port]) whose pages may embed the widget and call the public
    # /api/chat and /api/widget endpoints from the browser.
    allowed_origins = models.JSONField(default=list, blank=True)

    # Consent (docs/widget.md, "Consent"): with ``consent_required`` the widget shows the
    # tenant's notice and sends nothing until the visitor accepts it, and the public chat
    # refuses a request without an acceptance of ``consent_version``, which the service
    # (``tenant_set_consent``) bumps whenever the text or the link changes: an acceptance
    # names the words the visitor saw.
    consent_required = models.BooleanField(default=False)
    consent_text = models.CharField(max_length=500, blank=True)  # plain text; line breaks kept
    consent_link = models.URLField(blank=True, max_length=500)  # https, the privacy policy
    consent_version = models.PositiveIntegerField(default=1, editable=False)
    # The widget's chats keep no page metadata (userAgent, referrer, landingPage...) of a
    # visitor whose browser sends ``DNT: 1`` or ``Sec-GPC: 1``.
    honour_do_not_track = models.BooleanField(default=False)

    # Every member of the staff signs in with a TOTP code after the password; one without a
    # device is sent to set it up before anything else (docs/dashboard.md, "Accounts").
    require_two_factor = models.BooleanField(default=False)

    # Retention (docs/privacy.md): erased by the hourly sweeper once older than this many days;
    # none keeps them until they are deleted. Conversations by their last message, leads that
    # never converted by their last activity, events by when they happened.
    retention_conversation_days = models.PositiveIntegerField(
        null=True, blank=True, validators=[MinValueValidator(1), MaxValueValidator(3650)])
    retention_lead_days = models.PositiveIntegerField(
        null=True, blank=True, validators=[MinValueValidator(1), MaxValueValidator(3650)])
    retention_event_days = models.PositiveIntegerField(
        null=True, blank=True, validators=[MinValueValidator(1), MaxValueValidator(3650)])

    # SHA-256 of the admin token that opens a legacy cookie session.
    admin_token_hash = models.CharField(max_length=64, blank=True, db_index=True, editable=False)

    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name", "id"]

    def __str__(self) -> str:
        return self.name

    @property
    def agent_api_key(self) -> str:
        return crypto.decrypt(self.agent_api_key_encrypted)

    @property
    def has_agent_api_key(self) -> bool:
        return bool(self.agent_api_key_encrypted)

    @property
    def uses_provider_embeddings(self) -> bool:
        """Whether knowledge retrieval embeds through the tenant's provider: chosen, with a
        model named, on the openai provider with a key."""
        return (self.agent_embeddings == EmbeddingsSource.PROVIDER
                and self.agent_provider == AgentProvider.OPENAI
                and bool(self.agent_embedding_model) and self.has_agent_api_key)


class UserRole(models.TextChoices):
    REP = "rep", "Sales rep"
    MANAGER = "manager", "Sales manager"


class UserStatus(models.TextChoices):
    ONLINE = "online", "Online"
    AWAY = "away", "Away"
    OFFLINE = "offline", "Offline"


DEFAULT_CAPACITY = 5


class User(AbstractUser):
    """A person who signs in: a tenant's sales staff, or an operator of the service (no tenant).

    Leads and conversations are assigned to users of their tenant; the v1 surface shows them as
    ``user_<hex>``.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey(
        Tenant, null=True, blank=True, on_delete=models.CASCADE, related_name="users"
    )
    role = models.CharField(max_length=20, choices=UserRole.choices, default=UserRole.REP)
    # Round-robin assignment of handed-off conversations: the rep waiting longest goes next.
    last_assigned_at = models.DateTimeField(null=True, blank=True, editable=False)
    # The person's own settings (dashboard, "My settings"): whether the agent may book meetings
    # with them, and which emails they get (docs/meetings.md).
    takes_meetings = models.BooleanField(default=True)
    email_on_meeting = models.BooleanField(
        default=True, help_text="An email when a meeting is booked with me.")
    email_on_handoff = models.BooleanField(
        default=True, help_text="An email when a conversation is handed off to me.")
    email_on_mention = models.BooleanField(
        default=True, help_text="An email when a teammate mentions me in a note.")
    # Availability (docs/dashboard.md, "Availability and routing"). Blank time zone and working
    # hours: the tenant's meeting time zone, days and hours. ``working_hours`` has their shape:
    # {"days": [0..6, 0 = Monday], "start_hour": 0-23, "end_hour": 1-24}.
    timezone = models.CharField(max_length=64, blank=True)
    working_hours = models.JSONField(null=True, blank=True)
    capacity = models.PositiveSmallIntegerField(
        default=DEFAULT_CAPACITY, help_text="The most open handoffs assigned to me at once.")
    # Presence: online while a dashboard tab is open and used, away when idle (or chosen),
    # offline when the last tab closed. ``status_chosen``: away was chosen, not idle.
    status = models.CharField(max_length=10, choices=UserStatus.choices,
                              default=UserStatus.OFFLINE)
    status_chosen = models.BooleanField(default=False)
    last_seen_at = models.DateTimeField(null=True, blank=True)
    last_active_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["date_joined", "id"]
        indexes = [models.Index(fields=["tenant", "date_joined", "id"], name="user_tenant_joined")]
        constraints = [models.CheckConstraint(condition=models.Q(capacity__gte=1),
                                              name="user_capacity_at_least_one")]

    @property
    def display_name(self) -> str:
        return self.get_full_name() or self.username


class PresenceConnection(models.Model):
    """One open dashboard tab of a person (its live stream), on whichever process serves it.

    A tab that closes deletes its row. A process that dies cannot, so each row expires unless
    its stream refreshes it (``CONNECTION_TTL``); the presence sweeper deletes expired rows and
    sets offline whoever has none left (docs/dashboard.md, "Availability and routing")."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="presence_connections")
    opened_at = models.DateTimeField()
    expires_at = models.DateTimeField()

    class Meta:
        indexes = [models.Index(fields=["expires_at"], name="presence_expires")]

    def __str__(self) -> str:
        return f"Dashboard tab of {self.user_id} until {self.expires_at:%H:%M:%S}"


INVITATION_DAYS = 7


class Invitation(models.Model):
    """An invitation to join a tenant's staff (docs/dashboard.md, "Team"): a signed link that
    works once, for ``INVITATION_DAYS``. Only a hash of the link's token is kept; resending
    issues a new token (the old link dies) and moves the expiry."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="invitations",
                               db_index=False)
    email = models.EmailField(max_length=254)
    role = models.CharField(max_length=20, choices=UserRole.choices, default=UserRole.REP)
    # None: invited with the admin token (the tenant's administrator is nobody in particular).
    invited_by = models.ForeignKey(User, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    token_hash = models.CharField(max_length=64, editable=False)
    created_at = models.DateTimeField()
    sent_at = models.DateTimeField()  # the last (re)send
    expires_at = models.DateTimeField()
    accepted_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    user = models.ForeignKey(User, null=True, blank=True, on_delete=models.SET_NULL,
                             related_name="+")  # the account made by accepting it

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["tenant", "created_at", "id"], name="invitation_tenant")]

    def __str__(self) -> str:
        return f"Invitation of {self.email}"

    @property
    def is_pending(self) -> bool:
        return self.accepted_at is None and self.revoked_at is None


class StaffAccessAction(models.TextChoices):
    VIEWED = "viewed", "Viewed"
    EXPORTED = "exported", "Exported"
    ERASED = "erased", "Erased"


class StaffAccess(models.Model):
    """One time a member of the staff (or the admin token) viewed, exported or erased a person's
    data in the dashboard: the staff access audit that managers read on the Privacy page
    (docs/privacy.md, "Staff access audit").

    It holds ids only, never the person's details: ``lead_id`` and ``conversation_id`` are plain
    UUIDs, not foreign keys, so that the line outlives the erasure of the person it is about.
    ``user_label`` keeps the staff member's name as it was, for when their account is gone. Not
    an ``Event``: it is no domain fact, no webhook or activity feed carries it, and a page view
    pays one INSERT for it."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+",
                               db_index=False)  # the index below leads with it
    livemode = models.BooleanField()
    # None: the admin token, or a member whose account was deleted since.
    user = models.ForeignKey(User, null=True, blank=True, on_delete=models.SET_NULL,
                             related_name="+")
    user_label = models.CharField(max_length=200)
    action = models.CharField(max_length=10, choices=StaffAccessAction.choices)
    lead_id = models.UUIDField(null=True, blank=True)
    conversation_id = models.UUIDField(null=True, blank=True)
    at = models.DateTimeField()

    class Meta:
        indexes = [models.Index(fields=["tenant", "livemode", "at", "id"],
                                name="staff_access_tenant_at")]

    def __str__(self) -> str:
        return f"{self.user_label} {self.action} lead {self.lead_id} at {self.at:%Y-%m-%d %H:%M:%S}"
class ProviderHealth(models.Model):
    """How the tenant's language-model provider (``agent_provider`` openai) answered lately: its
    last answer, and its last failure and why (docs/agent.md, "When the provider fails"). The
    dashboard's home shows it; a change of the provider's settings starts it afresh. One row per
    tenant, for both modes: the provider is one."""

    tenant = models.OneToOneField(Tenant, on_delete=models.CASCADE, primary_key=True,
                                  related_name="provider_health")
    last_ok_at = models.DateTimeField(null=True, blank=True)
    last_failure_at = models.DateTimeField(null=True, blank=True)
    last_failure = models.CharField(max_length=300, blank=True)  # the service's words, no data

    def __str__(self) -> str:
        return f"Provider health of {self.tenant_id}"

    @property
    def failing(self) -> bool:
        """The last word of the provider was a failure."""
        return self.last_failure_at is not None and (
            self.last_ok_at is None or self.last_failure_at > self.last_ok_at)
