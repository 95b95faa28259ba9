"""The tenant's canned replies (docs/dashboard.md, "Inbox"): settings of the tenant, written
without an event as its other settings are."""

from __future__ import annotations

import re

from django.db import IntegrityError, transaction
from django.utils import timezone

from core.errors import Conflict, FieldError, InvalidRequest
from tenants.models import Tenant

from ..canned import PLACEHOLDERS, unknown_placeholders
from ..models import CannedReply

MAX_REPLIES = 200  # per tenant
MAX_CONTENT = 4000  # a reply's own limit (services.staff.MAX_HUMAN_REPLY)
SHORTCUT = re.compile(r"^[a-z0-9][a-z0-9_-]{0,29}$")


def _clean(shortcut: str, content: str) -> tuple[str, str]:
    shortcut = (shortcut or "").strip().lstrip("/").lower()
    content = (content or "").strip()
    problems = []
    if not shortcut:
        problems.append(FieldError("shortcut", "required", "Give the reply a shortcut."))
    elif not SHORTCUT.match(shortcut):
        problems.append(FieldError(
            "shortcut", "invalid_format",
            "1 to 30 lowercase letters, digits, - or _, starting with a letter or a digit."))
    if not content:
        problems.append(FieldError("content", "required", "Write the reply."))
    elif len(content) > MAX_CONTENT:
        problems.append(FieldError("content", "too_long", f"At most {MAX_CONTENT:,} characters."))
    else:
        unknown = unknown_placeholders(content)
        if unknown:
            allowed = ", ".join("{" + p + "}" for p in PLACEHOLDERS)
            problems.append(FieldError(
                "content", "invalid_format",
                f"Unknown placeholder {', '.join('{' + u + '}' for u in unknown)}: "
                f"the placeholders are {allowed}."))
    if problems:
        raise InvalidRequest("The canned reply was not saved.", details=problems)
    return shortcut, content


def _taken(shortcut: str) -> Conflict:
    return Conflict(f"The shortcut /{shortcut} is taken.",
                    details=[FieldError("shortcut", "duplicate",
                                        "Another canned reply has this shortcut.")])


@transaction.atomic
def canned_reply_create(*, tenant: Tenant, shortcut: str, content: str) -> CannedReply:
    """A new canned reply: a shortcut unique in the tenant, and its text with placeholders."""
    shortcut, content = _clean(shortcut, content)
    if CannedReply.objects.filter(tenant=tenant).count() >= MAX_REPLIES:
        raise Conflict(f"A tenant has at most {MAX_REPLIES} canned replies: remove one first.")
    now = timezone.now()
    try:
        with transaction.atomic():
            return CannedReply.objects.create(tenant=tenant, shortcut=shortcut, content=content,
                                              created_at=now, updated_at=now)
    except IntegrityError:
        raise _taken(shortcut) from None


@transaction.atomic
def canned_reply_update(*, reply: CannedReply, shortcut: str, content: str) -> CannedReply:
    shortcut, content = _clean(shortcut, content)
    reply.shortcut, reply.content, reply.updated_at = shortcut, content, timezone.now()
    try:
        with transaction.atomic():
            reply.save(update_fields=["shortcut", "content", "updated_at"])
    except IntegrityError:
        raise _taken(shortcut) from None
    return reply


@transaction.atomic
def canned_reply_delete(*, reply: CannedReply) -> None:
    reply.delete()
