"""The tenant's proactive messages (docs/widget.md, "Proactive messages"): settings written
without an event as the tenant's other settings are, the widget's report that one was shown,
and the message stored in the conversation when the visitor replies to it."""

from __future__ import annotations

import re
import uuid
from typing import Any

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from core.errors import Conflict, FieldError, InvalidRequest
from tenants.models import Tenant

from ..models import Conversation, Message, ProactiveMessage, Returning, Role
from .messages import append_message

MAX_PROACTIVE = 50  # per tenant
MAX_MESSAGE = 500
MAX_PATTERN = 200
# The widget matches a pattern as a regular expression, with .* for each *: a few keep it
# linear on any address (many could backtrack for long on a visitor's page).
MAX_WILDCARDS = 5
MAX_SECONDS = 3600
MAX_PRIORITY = 1000
# A path ("/pricing", "/blog/*") or a whole http(s) URL with a host ("https://shop.example/*"):
# no spaces, no control characters, no backslash; * is the only wildcard.
PATH_PATTERN = re.compile(r"^/[^\s\\]*$")
URL_PATTERN = re.compile(r"^https?://[^\s/\\?#]+(?:[/?#][^\s\\]*)?$", re.IGNORECASE)


def _clean(*, message: str, url_pattern: str, seconds_on_page: Any, returning: str,
           priority: Any) -> dict[str, Any]:
    message = (message or "").strip()
    url_pattern = (url_pattern or "").strip()
    problems = []
    if not message:
        problems.append(FieldError("message", "required", "Write the message."))
    elif len(message) > MAX_MESSAGE:
        problems.append(FieldError("message", "too_long", f"At most {MAX_MESSAGE} characters."))
    if len(url_pattern) > MAX_PATTERN:
        problems.append(FieldError("url_pattern", "too_long",
                                   f"At most {MAX_PATTERN} characters."))
    elif url_pattern.count("*") > MAX_WILDCARDS:
        problems.append(FieldError("url_pattern", "invalid_format",
                                   f"At most {MAX_WILDCARDS} * in a pattern."))
    elif url_pattern and not (PATH_PATTERN.match(url_pattern) or URL_PATTERN.match(url_pattern)):
        problems.append(FieldError(
            "url_pattern", "invalid_format",
            "A path starting with / (\"/pricing\", \"/blog/*\") or a whole address starting "
            "with http:// or https://, without spaces; * stands for any characters."))
    seconds = _whole(seconds_on_page, "seconds_on_page", 0, MAX_SECONDS, problems)
    order = _whole(priority, "priority", 0, MAX_PRIORITY, problems)
    if returning not in Returning.values:
        problems.append(FieldError("returning", "invalid_enum", ", ".join(Returning.values)))
    if not problems and not url_pattern and not seconds and returning == Returning.ANY:
        problems.append(FieldError(
            "url_pattern", "required",
            "Give at least one condition: a page, a time on the page or returning visitors "
            "(a message on every page at once would greet every visitor before they look)."))
    if problems:
        raise InvalidRequest("The proactive message was not saved.", details=problems)
    return {"message": message, "url_pattern": url_pattern, "seconds_on_page": seconds,
            "returning": returning, "priority": order}


def _whole(value: Any, name: str, low: int, high: int, problems: list[FieldError]) -> int:
    try:
        number = int(value if value not in (None, "") else 0)
    except (TypeError, ValueError):
        problems.append(FieldError(name, "invalid", "A whole number."))
        return 0
    if not low <= number <= high:
        problems.append(FieldError(name, "out_of_range", f"From {low} to {high}."))
    return number


@transaction.atomic
def proactive_message_create(*, tenant: Tenant, message: str, url_pattern: str = "",
                             seconds_on_page: Any = 0, returning: str = Returning.ANY,
                             active: bool = True, priority: Any = 100) -> ProactiveMessage:
    """A new proactive message of the tenant: its text and when the widget shows it."""
    fields = _clean(message=message, url_pattern=url_pattern, seconds_on_page=seconds_on_page,
                    returning=returning, priority=priority)
    if ProactiveMessage.objects.filter(tenant=tenant).count() >= MAX_PROACTIVE:
        raise Conflict(f"A tenant has at most {MAX_PROACTIVE} proactive messages: remove one "
                       "first.")
    now = timezone.now()
    return ProactiveMessage.objects.create(tenant=tenant, active=bool(active), created_at=now,
                                           updated_at=now, **fields)


@transaction.atomic
def proactive_message_update(*, proactive: ProactiveMessage, message: str, url_pattern: str,
                             seconds_on_page: Any, returning: str, active: bool,
                             priority: Any) -> ProactiveMessage:
    fields = _clean(message=message, url_pattern=url_pattern, seconds_on_page=seconds_on_page,
                    returning=returning, priority=priority)
    for name, value in fields.items():
        setattr(proactive, name, value)
    proactive.active, proactive.updated_at = bool(active), timezone.now()
    proactive.save()
    return proactive


@transaction.atomic
def proactive_message_delete(*, proactive: ProactiveMessage) -> None:
    """Deletes the rule; the messages it put in conversations stay (marked proactive)."""
    proactive.delete()


def proactive_message_shown(*, tenant: Tenant, proactive_id: uuid.UUID) -> bool:
    """The widget showed this message to a visitor: one more in its count. False when the
    tenant has no such active message."""
    return bool(ProactiveMessage.objects.filter(tenant=tenant, pk=proactive_id, active=True)
                .update(shown_count=F("shown_count") + 1))


def proactive_reply_opening(conversation: Conversation, *, proactive_id: uuid.UUID,
                            now) -> Message | None:
    """Inside the turn's transaction, before the visitor's message: the tenant's proactive
    message the visitor is replying to, stored as the agent's (``proactive``), so that the
    staff, the API and the agent's history read the conversation as the visitor saw it. The
    text is the tenant's, read here, never the browser's. Once per conversation and message
    (a reply sent again after a lost answer adds nothing). None when the tenant has no such
    message any more."""
    found = (ProactiveMessage.objects.filter(tenant_id=conversation.tenant_id, pk=proactive_id)
             .values_list("message", flat=True).first())
    if found is None or Message.objects.filter(conversation=conversation, proactive=True,
                                               content=found).exists():
        return None
    ProactiveMessage.objects.filter(pk=proactive_id).update(replied_count=F("replied_count") + 1)
    return append_message(conversation, role=Role.ASSISTANT, content=found, now=now,
                          proactive=True)
