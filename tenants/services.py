"""Writes to tenants and their users."""

from __future__ import annotations

import copy
import secrets
import uuid
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import SplitResult

from django.core.exceptions import ValidationError
from django.core.validators import URLValidator
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from core import crypto
from core.emails import EmailRefused
from core.errors import Conflict, FieldError, NotFound, Unprocessable
from core.text import CONTROL_MESSAGE, has_control
from core.timestamps import format_timestamp

from .availability import clean_working_hours
from .models import (
    AgentDecision,
    AgentProvider,
    EmbeddingsSource,
    Plan,
    ProviderHealth,
    StaffAccess,
    StaffAccessAction,
    Tenant,
    User,
    UserRole,
)
from .selectors import ADMIN_TOKEN_PREFIX
from .team import name_problems, staff_email


def _new_admin_token() -> str:
    return ADMIN_TOKEN_PREFIX + secrets.token_urlsafe(32)


@transaction.atomic
def tenant_create(
    *,
    name: str,
    plan: str = Plan.STARTER,
    agent_provider: str = AgentProvider.BUILTIN,
    agent_model: str | None = None,
) -> tuple[Tenant, str]:
    """Creates a tenant; returns it with its admin token, which is shown only this once."""
    name = (name or "").strip()
    if not name or len(name) > 200:
        raise Unprocessable(
            "A tenant needs a name of 1 to 200 characters.",
            details=[FieldError("name", "too_long" if name else "required", "1 to 200 characters")],
        )
    if has_control(name):  # it names the sender of every email (conversations.mail)
        raise Unprocessable("A tenant's name is one line.",
                            details=[FieldError("name", "invalid_format", CONTROL_MESSAGE)])
    if plan not in Plan.values:
        raise Unprocessable(f"Unknown plan {plan!r}.",
                            details=[FieldError("plan", "invalid_enum", ", ".join(Plan.values))])
    if agent_provider not in AgentProvider.values:
        raise Unprocessable(
            f"Unknown agent provider {agent_provider!r}.",
            details=[FieldError("agent", "invalid_enum", ", ".join(AgentProvider.values))],
        )
    tenant = Tenant(name=name, plan=plan, agent_provider=agent_provider)
    if agent_model:
        tenant.agent_model = agent_model
    token = _new_admin_token()
    tenant.admin_token_hash = crypto.digest(token)
    tenant.save()
    return tenant, token


def tenant_reset_admin_token(*, tenant: Tenant) -> str:
    """Issues a new admin token; the old one and every cookie session it opened stop working."""
    token = _new_admin_token()
    Tenant.objects.filter(pk=tenant.pk).update(admin_token_hash=crypto.digest(token))
    tenant.admin_token_hash = crypto.digest(token)
    return token


def tenant_set_agent(
    *,
    tenant: Tenant,
    provider: str | None = None,
    model: str | None = None,
    api_key: str | None = None,
    base_url: str | None = None,
    booking_url: str | None = None,
    embeddings: str | None = None,
    embedding_model: str | None = None,
) -> Tenant:
    """Changes the agent settings; ``api_key=""`` clears the key, ``None`` leaves it alone.

    ``embeddings`` is ``local`` or ``provider`` (knowledge retrieval by the provider's
    /v1/embeddings, with ``embedding_model``: docs/knowledge.md, "The provider's embeddings");
    it takes effect only on the openai provider."""
    before = _provider_settings(tenant)
    _apply_agent(tenant, provider=provider, model=model, api_key=api_key, base_url=base_url,
                 booking_url=booking_url, embeddings=embeddings, embedding_model=embedding_model)
    tenant.save()
    if _provider_settings(tenant) != before:
        # Another provider: how the previous one answered says nothing about it.
        ProviderHealth.objects.filter(tenant=tenant).delete()
    return tenant


def tenant_agent_validate(*, tenant: Tenant, **changes: str | None) -> None:
    """Refuses (``Unprocessable``) what ``tenant_set_agent`` would refuse, saving nothing: for a
    caller with slow work between checking and saving (asking the provider, which is pointless
    for settings that will be refused anyway)."""
    _apply_agent(copy.copy(tenant), **changes)


def _apply_agent(tenant: Tenant, *, provider: str | None = None, model: str | None = None,
                 api_key: str | None = None, base_url: str | None = None,
                 booking_url: str | None = None, embeddings: str | None = None,
                 embedding_model: str | None = None) -> None:
    """``tenant_set_agent``'s changes on ``tenant``, checked, not saved."""
    if provider is not None:
        if provider not in AgentProvider.values:
            raise Unprocessable(f"Unknown agent provider {provider!r}.")
        tenant.agent_provider = provider
    if model is not None:
        tenant.agent_model = model.strip()
    _set_embeddings(tenant, embeddings=embeddings, embedding_model=embedding_model)
    if base_url is not None:
        tenant.agent_base_url = base_url.strip()
    if api_key is not None:
        tenant.agent_api_key_encrypted = crypto.encrypt(api_key.strip())
    if booking_url is not None:
        tenant.booking_url = booking_url.strip()
    for field, value in (("agent_base_url", tenant.agent_base_url), ("booking_url", tenant.booking_url)):
        if value and not value.startswith(("http://", "https://")):
            raise Unprocessable("URLs must start with http:// or https://.",
                                details=[FieldError(field, "invalid_format", "An http(s) URL.")])


def _provider_settings(tenant: Tenant) -> tuple[str, ...]:
    return (tenant.agent_provider, tenant.agent_model, tenant.agent_base_url,
            tenant.agent_api_key_encrypted)


# A provider that keeps answering is recorded at most this often, and the same failure while it
# repeats: the turns of a busy tenant do not all write its one row.
PROVIDER_OK_EVERY = timedelta(minutes=1)
PROVIDER_FAILURE_EVERY = timedelta(seconds=10)
PROVIDER_FAILURE_CHARS = 300


def provider_health_record(*, tenant_id: uuid.UUID, at: datetime, failure: str = "") -> None:
    """Records how the tenant's language-model provider answered a turn at ``at``: ``failure``
    says why it did not (the service's own words, never the provider's text or a visitor's),
    empty when it answered (docs/agent.md, "When the provider fails").

    One conditional UPDATE that writes only news (a first answer or failure, an answer after a
    failure or the reverse, another reason, or the same one older than ``PROVIDER_OK_EVERY`` /
    ``PROVIDER_FAILURE_EVERY``), and an INSERT that does nothing if the row exists when the
    UPDATE wrote none: no read, and no lock taken by a turn that has nothing new to say. No
    event: this is the provider's bookkeeping, as a webhook's attempts are the receiver's."""
    rows = ProviderHealth.objects.filter(tenant_id=tenant_id)
    if failure:
        failure = failure[:PROVIDER_FAILURE_CHARS]
        news = (Q(last_failure_at__isnull=True) | ~Q(last_failure=failure)
                | Q(last_failure_at__lt=at - PROVIDER_FAILURE_EVERY)
                | Q(last_ok_at__gt=F("last_failure_at")))
        changes: dict[str, Any] = {"last_failure_at": at, "last_failure": failure}
    else:
        news = (Q(last_ok_at__isnull=True) | Q(last_ok_at__lt=at - PROVIDER_OK_EVERY)
                | Q(last_failure_at__gt=F("last_ok_at")))
        changes = {"last_ok_at": at}
    if not rows.filter(news).update(**changes):
        ProviderHealth.objects.bulk_create([ProviderHealth(tenant_id=tenant_id, **changes)],
                                           ignore_conflicts=True)


def _set_embeddings(tenant: Tenant, *, embeddings: str | None, embedding_model: str | None) -> None:
    if embeddings is not None:
        if embeddings not in EmbeddingsSource.values:
            raise Unprocessable(f"Unknown embeddings {embeddings!r}.", details=[FieldError(
                "embeddings", "invalid_enum", ", ".join(EmbeddingsSource.values))])
        tenant.agent_embeddings = embeddings
    if embedding_model is not None:
        embedding_model = embedding_model.strip()
        if len(embedding_model) > 100 or has_control(embedding_model):
            raise Unprocessable("The embedding model is a name of at most 100 characters.",
                                details=[FieldError("embedding_model", "invalid_format",
                                                    "At most 100 characters, one line.")])
        tenant.agent_embedding_model = embedding_model
    if tenant.agent_embeddings == EmbeddingsSource.PROVIDER and not tenant.agent_embedding_model:
        raise Unprocessable("The provider's embeddings need the name of its embedding model.",
                            details=[FieldError("embedding_model", "required",
                                                "The model the provider's /v1/embeddings takes, "
                                                "e.g. text-embedding-3-small.")])


# Bounds of the reply limits: below them no sentence fits, above them no visitor reads on.
REPLY_TOKENS = (32, 4000)
REPLY_CHARS = (200, 8000)
TURN_SECONDS = (3, 120)
PRODUCT_SUMMARY_CHARS = 1000


@transaction.atomic
def tenant_set_agent_limits(*, tenant: Tenant, max_reply_tokens: int, max_reply_chars: int,
                            turn_seconds: int) -> Tenant:
    """Sets the limits of every reply (docs/agent.md, "Reply limits")."""
    errors = [FieldError(field, "out_of_range", f"From {low} to {high}.")
              for field, value, (low, high) in (
                  ("max_reply_tokens", max_reply_tokens, REPLY_TOKENS),
                  ("max_reply_chars", max_reply_chars, REPLY_CHARS),
                  ("turn_seconds", turn_seconds, TURN_SECONDS))
              if not (isinstance(value, int) and low <= value <= high)]
    if errors:
        raise Unprocessable("The reply limits are out of range.", details=errors)
    tenant.agent_max_reply_tokens = max_reply_tokens
    tenant.agent_max_reply_chars = max_reply_chars
    tenant.agent_turn_seconds = turn_seconds
    tenant.save(update_fields=["agent_max_reply_tokens", "agent_max_reply_chars",
                               "agent_turn_seconds", "updated_at"])
    return tenant


@transaction.atomic
def tenant_set_facts(*, tenant: Tenant, product_summary: str = "", pricing_url: str = "",
                     business_hours: str = "") -> Tenant:
    """Sets the facts the agent may state besides the knowledge base (docs/agent.md,
    "Grounding")."""
    product_summary, pricing_url = product_summary.strip(), pricing_url.strip()
    business_hours = business_hours.strip()
    errors = []
    if len(product_summary) > PRODUCT_SUMMARY_CHARS:
        errors.append(FieldError("product_summary", "too_long",
                                 f"At most {PRODUCT_SUMMARY_CHARS} characters."))
    if pricing_url and not pricing_url.startswith(("http://", "https://")):
        errors.append(FieldError("pricing_url", "invalid_format", "An http(s) URL."))
    if len(business_hours) > 200:
        errors.append(FieldError("business_hours", "too_long", "At most 200 characters."))
    if errors:
        raise Unprocessable("The agent's facts are not valid.", details=errors)
    tenant.product_summary, tenant.pricing_url = product_summary, pricing_url
    tenant.business_hours = business_hours
    tenant.save(update_fields=["product_summary", "pricing_url", "business_hours", "updated_at"])
    return tenant


CONSENT_TEXT_CHARS = 500
CONSENT_LINK_CHARS = 500


@transaction.atomic
def tenant_set_consent(*, tenant: Tenant, consent_required: bool | None = None,
                       consent_text: str | None = None, consent_link: str | None = None,
                       honour_do_not_track: bool | None = None) -> Tenant:
    """Sets the notice the widget's visitors must accept before chatting, and whether their
    browser's Do Not Track or Global Privacy Control keeps their page metadata out of the
    conversations (docs/widget.md, "Consent", "Do Not Track"). ``None`` leaves a field alone.

    ``consent_version`` goes up by one whenever the text or the link changes, so that an
    acceptance names the words the visitor saw and the widget asks again; a notice that was
    never written (blank text) had no acceptances, and writing the first one keeps its version.
    """
    current = Tenant.objects.select_for_update().filter(pk=tenant.pk).first()
    if current is None:
        raise NotFound("The tenant does not exist.")
    required = current.consent_required if consent_required is None else consent_required
    text = current.consent_text if consent_text is None else _notice_text(consent_text)
    link = current.consent_link if consent_link is None else _stripped(consent_link)
    dnt = current.honour_do_not_track if honour_do_not_track is None else honour_do_not_track
    problems = _consent_problems(required=required, text=text, link=link)
    if not isinstance(dnt, bool):
        problems.append(FieldError("honour_do_not_track", "invalid_format", "true or false."))
    if problems:
        raise Unprocessable("The consent settings were not saved.", details=problems)
    version = current.consent_version
    if (text, link) != (current.consent_text, current.consent_link) and current.consent_text:
        version += 1
    tenant.consent_required, tenant.consent_text, tenant.consent_link = required, text, link
    tenant.consent_version, tenant.honour_do_not_track = version, dnt
    tenant.save(update_fields=["consent_required", "consent_text", "consent_link",
                               "consent_version", "honour_do_not_track", "updated_at"])
    return tenant


def _stripped(value: object) -> object:
    return value.strip() if isinstance(value, str) else value


def _notice_text(text: object) -> object:
    """The notice as the widget shows it: trimmed, its line breaks as LF."""
    if not isinstance(text, str):
        return text
    return text.replace("\r\n", "\n").replace("\r", "\n").strip()


def _consent_problems(*, required: object, text: object, link: object) -> list[FieldError]:
    problems = []
    if not isinstance(required, bool):
        problems.append(FieldError("consent_required", "invalid_format", "true or false."))
    problem = _notice_problem(text, required=required is True)
    if problem:
        problems.append(FieldError("consent_text", *problem))
    problem = _policy_link_problem(link)
    if problem:
        problems.append(FieldError("consent_link", *problem))
    return problems


def _notice_problem(text: object, *, required: bool) -> tuple[str, str] | None:
    """What is wrong with the notice's text (code, message), if anything."""
    if not isinstance(text, str):
        return "invalid_format", "Expected a string."
    if len(text) > CONSENT_TEXT_CHARS:
        return "too_long", f"At most {CONSENT_TEXT_CHARS} characters."
    if has_control(text.replace("\n", "")):
        return "invalid_format", ("Plain text: line breaks are kept, tabs and other control "
                                  "characters are not allowed.")
    if required and not text:
        return "required", "The notice visitors accept: required while consent is."
    return None


def _policy_link_problem(link: object) -> tuple[str, str] | None:
    """What is wrong with the privacy policy's link (code, message), if anything: blank is no
    link; else an https URL."""
    if not isinstance(link, str):
        return "invalid_format", "Expected a string."
    if len(link) > CONSENT_LINK_CHARS:
        return "too_long", f"At most {CONSENT_LINK_CHARS} characters."
    if link:
        try:
            if has_control(link):
                raise ValidationError("control characters")
            URLValidator(schemes=["https"])(link)
        except ValidationError:
            return "invalid_format", "An https:// address: the page of your privacy policy."
    return None


def user_create(
    *,
    tenant: Tenant,
    email: str,
    first_name: str = "",
    last_name: str = "",
    role: str = UserRole.REP,
    password: str | None = None,
) -> User:
    """Adds a member of a tenant's sales staff; they sign in to the dashboard with ``email``
    (kept as every staff address is, ``tenants.team.staff_email``)."""
    try:
        email = staff_email(email)
    except EmailRefused as refused:
        raise Unprocessable(refused.message,
                            details=[FieldError("email", refused.code, refused.message)]) from None
    details = name_problems(first_name=first_name, last_name=last_name)
    if details:
        raise Unprocessable("Names are one line.", details=details)
    user = User(
        tenant=tenant,
        username=email,
        email=email,
        first_name=first_name,
        last_name=last_name,
        role=role,
    )
    if password:
        user.set_password(password)
    else:
        user.set_unusable_password()
    user.save()
    return user


@transaction.atomic
def tenant_set_plan(*, tenant: Tenant, plan: str) -> Tenant:
    """Moves the tenant to another plan tier; rate limits follow on the next request."""
    if plan not in Plan.values:
        raise Unprocessable(f"Unknown plan {plan!r}.",
                            details=[FieldError("plan", "invalid_enum", ", ".join(Plan.values))])
    tenant.plan = plan
    tenant.save(update_fields=["plan", "updated_at"])
    return tenant


@transaction.atomic
def tenant_set_meetings(
    *,
    tenant: Tenant,
    timezone_name: str,
    days: list[int],
    start_hour: int,
    end_hour: int,
    minutes: int,
    booking_url: str = "",
) -> Tenant:
    """Sets when the agent may book discovery meetings (or the external booking link)."""
    booking_url = (booking_url or "").strip()
    details = _meeting_errors(timezone_name=timezone_name, days=days, start_hour=start_hour,
                              end_hour=end_hour, minutes=minutes, booking_url=booking_url)
    if details:
        raise Unprocessable("The meeting settings were not saved.", details=details)
    tenant.meeting_timezone = timezone_name
    tenant.meeting_days = sorted(set(days))
    tenant.meeting_start_hour, tenant.meeting_end_hour = start_hour, end_hour
    tenant.meeting_minutes = minutes
    tenant.booking_url = booking_url
    tenant.save()
    return tenant


def _meeting_errors(*, timezone_name: str, days: list[int], start_hour: int, end_hour: int,
                    minutes: int, booking_url: str) -> list[FieldError]:
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    details = []
    try:
        ZoneInfo(timezone_name)
    except (ZoneInfoNotFoundError, ValueError):
        details.append(FieldError("meeting_timezone", "invalid_enum", "An IANA time zone."))
    if not all(isinstance(d, int) and 0 <= d <= 6 for d in days):
        details.append(FieldError("meeting_days", "out_of_range", "Days 0 (Monday) to 6."))
    if not (0 <= start_hour < end_hour <= 24):
        details.append(FieldError("meeting_end_hour", "out_of_range",
                                  "Hours 0-24, the end after the start."))
    if not 10 <= minutes <= 240:
        details.append(FieldError("meeting_minutes", "out_of_range", "10 to 240 minutes."))
    if booking_url and not booking_url.startswith(("http://", "https://")):
        details.append(FieldError("booking_url", "invalid_format", "An http(s) URL."))
    return details


def normalize_origin(raw: str) -> str | None:
    """``scheme://host[:port]`` in lower case, or None when ``raw`` is not an http(s) origin."""
    from urllib.parse import urlsplit

    text = raw.strip().rstrip("/")
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError:
        return None
    if not _is_bare_origin(parts):
        return None
    host = parts.hostname.lower()
    if ":" in host:
        host = f"[{host}]"
    return f"{parts.scheme}://{host}" + (f":{port}" if port else "")


def _is_bare_origin(parts: SplitResult) -> bool:
    """http(s) and a host, and nothing else: no path, query, fragment or credentials."""
    return (parts.scheme in ("http", "https") and bool(parts.hostname) and not parts.path
            and not parts.query and not parts.fragment and not parts.username
            and not parts.password)


def origin_problem(raw: str) -> str:
    """Why ``raw`` is not an origin (``normalize_origin`` gave None), in a few words."""
    from urllib.parse import urlsplit

    if "://" not in raw:
        return "add the scheme, as in https://" + raw.strip().rstrip("/")
    try:
        parts = urlsplit(raw.strip().rstrip("/"))
        parts.port  # noqa: B018 -- raises ValueError on a malformed port
    except ValueError as exc:
        return ("the port must be a number up to 65535" if "port" in str(exc).lower()
                else "the host is not a valid name or address")
    checks = (
        (parts.scheme not in ("http", "https"), f"the scheme must be http or https, not {parts.scheme}"),
        (not parts.hostname, "there is no host name"),
        (parts.username is not None or parts.password is not None,
         "remove the user name and password"),
        (bool(parts.path), f"remove the path ({parts.path}): an origin ends after the host and port"),
        (bool(parts.query or parts.fragment), "remove what follows ? or #"),
    )
    return next((why for failed, why in checks if failed), "not an origin")


MAX_ALLOWED_ORIGINS = 50


@transaction.atomic
def tenant_set_allowed_origins(*, tenant: Tenant, origins: list[str]) -> Tenant:
    """The origins whose pages may embed the widget and call the public chat endpoints."""
    cleaned: list[str] = []
    bad: list[FieldError] = []
    for index, raw in enumerate(origins):
        if not raw.strip():
            continue
        origin = normalize_origin(raw)
        if origin is None:
            # Each refused origin named, with why: "which one, and what is wrong with it".
            bad.append(FieldError(f"allowed_origins[{index}]", "invalid_format",
                                  f"{raw.strip()}: {origin_problem(raw)}."))
        elif origin not in cleaned:
            cleaned.append(origin)
    if bad:
        raise Unprocessable("Not an origin (scheme://host[:port], no path): "
                            + ", ".join(d.message.split(": ", 1)[0] for d in bad[:5]),
                            details=bad)
    if len(cleaned) > MAX_ALLOWED_ORIGINS:
        raise Unprocessable(details=[FieldError("allowed_origins", "too_long",
                                                f"At most {MAX_ALLOWED_ORIGINS} origins.")])
    tenant.allowed_origins = cleaned
    tenant.save(update_fields=["allowed_origins", "updated_at"])
    return tenant


def user_next_in_rotation(*, tenant_id, now: datetime, takes_meetings: bool = False) -> User | None:
    """Round robin over the tenant's active people for a meeting (handoffs are routed by
    availability: ``conversations.services.routing``): the one who has waited longest since their
    last assignment (a handed-off conversation or a meeting) goes next, and is marked as
    assigned ``now``. With ``takes_meetings``, only those who take meetings. Runs inside its
    caller's transaction, the chosen row locked so that two assignments never pick alike."""
    people = User.objects.select_for_update().filter(tenant_id=tenant_id, is_active=True)
    if takes_meetings:
        people = people.filter(takes_meetings=True)
    person = people.order_by(F("last_assigned_at").asc(nulls_first=True), "date_joined",
                             "id").first()
    if person is not None:
        person.last_assigned_at = now
        person.save(update_fields=["last_assigned_at"])
    return person


@transaction.atomic
def user_set_preferences(*, user: User, takes_meetings: bool, email_on_meeting: bool,
                         email_on_handoff: bool, email_on_mention: bool) -> User:
    """A person's own settings: whether meetings are booked with them, which emails they get."""
    user.takes_meetings = takes_meetings
    user.email_on_meeting = email_on_meeting
    user.email_on_handoff = email_on_handoff
    user.email_on_mention = email_on_mention
    user.save(update_fields=["takes_meetings", "email_on_meeting", "email_on_handoff",
                             "email_on_mention"])
    return user


MAX_CAPACITY = 100
PRESENCE_IDLE_MINUTES = (1, 240)


@transaction.atomic
def user_set_availability(*, user: User, timezone_name: str, working_hours: Any,
                          capacity: int) -> User:
    """A person's own availability: their time zone and working hours (blank: the tenant's)
    and their capacity, the most open handoffs assigned to them at once."""
    details = []
    if timezone_name and not _valid_zone(timezone_name):
        details.append(FieldError("timezone", "invalid_enum", "An IANA time zone."))
    if not isinstance(capacity, int) or not 1 <= capacity <= MAX_CAPACITY:
        details.append(FieldError("capacity", "out_of_range",
                                  f"From 1 to {MAX_CAPACITY} open handoffs."))
    if details:
        raise Unprocessable(details=details)
    user.working_hours = clean_working_hours(working_hours)
    user.timezone = timezone_name
    user.capacity = capacity
    user.save(update_fields=["timezone", "working_hours", "capacity"])
    return user


@transaction.atomic
def tenant_set_presence_idle(*, tenant: Tenant, minutes: int) -> Tenant:
    """How long a person with the dashboard open may be idle before they turn away."""
    low, high = PRESENCE_IDLE_MINUTES
    if not isinstance(minutes, int) or not low <= minutes <= high:
        raise Unprocessable(details=[FieldError("presence_idle_minutes", "out_of_range",
                                                f"From {low} to {high} minutes.")])
    tenant.presence_idle_seconds = minutes * 60
    tenant.save(update_fields=["presence_idle_seconds", "updated_at"])
    return tenant


def _valid_zone(name: str) -> bool:
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return False
    return True


# --- The tenant's own example phrasings of the agent's decisions (docs/agent.md, "Adding
# phrasings") ---------------------------------------------------------------------------------

MAX_AGENT_PHRASINGS = 200
AGENT_PHRASING_CHARS = 300


class AgentPhrasingsFull(Conflict):
    default_message = (f"The agent has its {MAX_AGENT_PHRASINGS} phrasings, the most a tenant "
                       "may add: remove one first.")


class AgentPhrasingTaken(Conflict):
    default_message = "The agent already has this phrasing for this decision."


def _phrasing_key(decision: str, text: str) -> tuple[str, str]:
    """What makes two phrasings the same: the decision, and the text with its case and runs of
    whitespace aside ("Can I talk  to Sam" is "can i talk to sam")."""
    return decision, " ".join(text.split()).casefold()


def _phrasing_problems(decision: object, text: object) -> list[FieldError]:
    problems = []
    if decision not in AgentDecision.values:
        problems.append(FieldError("decision", "invalid_enum",
                                   "One of " + ", ".join(AgentDecision.values) + "."))
    if not isinstance(text, str):
        problems.append(FieldError("text", "invalid_format", "Expected a string."))
    elif not text:
        problems.append(FieldError("text", "required", "A phrasing of 1 to "
                                   f"{AGENT_PHRASING_CHARS} characters."))
    elif len(text) > AGENT_PHRASING_CHARS:
        problems.append(FieldError("text", "too_long",
                                   f"At most {AGENT_PHRASING_CHARS} characters."))
    elif has_control(text):
        problems.append(FieldError("text", "invalid_format", CONTROL_MESSAGE))
    return problems


def _locked_phrasings(tenant: Tenant) -> list[dict[str, str]]:
    """The tenant's phrasings as stored, its row locked until the transaction ends: two
    additions at once cannot both pass the limit or both add the same phrasing."""
    stored = (Tenant.objects.select_for_update().filter(pk=tenant.pk)
              .values_list("agent_phrasings", flat=True).first())
    if stored is None:
        raise NotFound("The tenant does not exist.")
    return list(stored or [])


def _store_phrasings(tenant: Tenant, phrasings: list[dict[str, str]]) -> None:
    now = timezone.now()
    Tenant.objects.filter(pk=tenant.pk).update(agent_phrasings=phrasings, updated_at=now)
    tenant.agent_phrasings, tenant.updated_at = phrasings, now


@transaction.atomic
def agent_phrasing_add(*, tenant: Tenant, decision: str, text: str) -> dict[str, str]:
    """Adds an example phrasing of one of the agent's decisions ("can the night shift pick this
    up" for ``person``): a visitor's message close to it in meaning takes the decision, from the
    next chat turn on. One line of 1 to ``AGENT_PHRASING_CHARS`` characters (trimmed), at most
    ``MAX_AGENT_PHRASINGS`` per tenant, none twice for a decision (case aside)."""
    if isinstance(text, str):
        text = text.strip()
    problems = _phrasing_problems(decision, text)
    if problems:
        raise Unprocessable("The phrasing was not added.", details=problems)
    phrasings = _locked_phrasings(tenant)
    key = _phrasing_key(decision, text)
    if any(_phrasing_key(p["decision"], p["text"]) == key for p in phrasings):
        raise AgentPhrasingTaken()
    if len(phrasings) >= MAX_AGENT_PHRASINGS:
        raise AgentPhrasingsFull()
    phrasing = {"id": uuid.uuid4().hex, "decision": decision, "text": text,
                "createdAt": format_timestamp(timezone.now())}
    _store_phrasings(tenant, [*phrasings, phrasing])
    return phrasing


@transaction.atomic
def agent_phrasing_remove(*, tenant: Tenant, phrasing_id: str) -> None:
    """Removes one of the tenant's phrasings (``id``, 32 hex digits); it counts no more from the
    next chat turn on. Another tenant's or an unknown id is ``NotFound``."""
    phrasings = _locked_phrasings(tenant)
    kept = [p for p in phrasings if p.get("id") != phrasing_id]
    if len(kept) == len(phrasings):
        raise NotFound("No such phrasing.")
    _store_phrasings(tenant, kept)


# --- the staff access audit (docs/privacy.md, "Staff access audit") ------------------------------

ADMIN_TOKEN_LABEL = "Administrator (admin token)"


def record_staff_access(*, tenant: Tenant, livemode: bool, user: User | None, action: str,
                        lead_id: uuid.UUID | None = None,
                        conversation_id: uuid.UUID | None = None) -> StaffAccess:
    """Records that ``user`` (None: the admin token) viewed, exported or erased the data of the
    person of ``lead_id`` and/or ``conversation_id`` in the dashboard, now.

    One INSERT and nothing else, no transaction of its own and no event: the lead's and the
    conversation's pages call it on every view. Ids only, so that the line holds nothing of the
    person and outlives their erasure; the staff member's name is kept as it is now."""
    if action not in StaffAccessAction.values:
        raise ValueError(f"Unknown staff access action {action!r}.")
    if lead_id is None and conversation_id is None:
        raise ValueError("A staff access names a lead, a conversation or both.")
    return StaffAccess.objects.create(
        tenant=tenant, livemode=livemode, user=user, action=action, lead_id=lead_id,
        conversation_id=conversation_id, at=timezone.now(),
        user_label=(user.display_name if user is not None else ADMIN_TOKEN_LABEL)[:200])
