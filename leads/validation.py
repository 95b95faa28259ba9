"""The rules a lead's fields obey, whoever writes it: the API surfaces, the admin, the chat agent,
imports (docs/decisions.md, "Validation is written once").

The services own these rules; the input serializers of the two surfaces check only shape and
type (a string, a list, an object; required on that surface; the surface's own formats such as
v1's E.164 phone and prefixed ids), and take the limits below for their OpenAPI schemas. Errors
name the model's fields (``custom_fields``, ``tags.3``); each surface's exception handler shows
them under the surface's own names.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from typing import Any

from core import emails
from core.errors import FieldError, InvalidRequest, Unprocessable
from core.text import CONTROL_MESSAGE, has_control
from tenants.models import Tenant, User

from .vocabulary import LeadSource, LeadStatus

MAX_EMAIL_LENGTH = emails.MAX_LENGTH
TEXT_LIMITS = {"name": 200, "company": 200, "title": 200, "phone": 50, "last_intent": 100}
MIN_SCORE, MAX_SCORE = 0, 100
MAX_TAGS = 50
MAX_TAG_LENGTH = 50
MAX_CUSTOM_FIELDS_BYTES = 32 * 1024
MAX_CUSTOM_FIELD_KEYS = 100
MAX_CUSTOM_FIELD_KEY_LENGTH = 100


class Refused(Exception):
    """One field's value breaks a rule; ``at`` narrows the field (``tags`` + ``.3``).
    ``semantic``: the value has the shape the schemas state but breaks a rule they cannot
    (an address whose normalised form is none), a 422 rather than a 400."""

    def __init__(self, code: str, message: str, at: str = "", *, semantic: bool = False):
        super().__init__(message)
        self.code, self.message, self.at, self.semantic = code, message, at, semantic


def clean_email(value: Any) -> str:
    """The address in the one form leads keep (``core.emails``): uniqueness compares that form,
    case-insensitively."""
    if not (isinstance(value, str) and value.strip()):
        raise Refused("required", "A lead needs an email address.")
    try:
        return emails.normalise_email(value)
    except emails.EmailRefused as refused:
        raise Refused(refused.code, refused.message, semantic=refused.semantic) from None


def _one_line(text: str, *, at: str = "") -> str:
    """Names, companies, titles and tags go into email headers, invitations and lists: a line
    break there forges or breaks a line (``core.text``)."""
    if has_control(text):
        raise Refused("invalid_format", CONTROL_MESSAGE, at=at)
    return text


def _text(field: str) -> Callable[[Any], str]:
    limit = TEXT_LIMITS[field]

    def clean(value: Any) -> str:
        if value is None:
            return ""
        if not isinstance(value, str):
            raise Refused("invalid_format", "Expected a string.")
        text = value.strip()
        if len(text) > limit:
            raise Refused("too_long", f"At most {limit} characters.")
        return _one_line(text)

    return clean


def _choice(choices: list[str]) -> Callable[[Any], str]:
    def clean(value: Any) -> str:
        if value not in choices:
            raise Refused("invalid_enum", "One of " + ", ".join(choices) + ".")
        return value

    return clean


def clean_score(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise Refused("invalid_format", "Expected an integer.")
    if not MIN_SCORE <= value <= MAX_SCORE:
        raise Refused("out_of_range", f"From {MIN_SCORE} to {MAX_SCORE}.")
    return value


def clean_tags(value: Any) -> list[str]:
    """Tags are a set kept in the order first given: blanks and repeats are dropped."""
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(tag, str) for tag in value):
        raise Refused("invalid_format", "Expected an array of strings.")
    if len(value) > MAX_TAGS:
        raise Refused("too_long", f"At most {MAX_TAGS} tags.")
    for index, tag in enumerate(value):
        if len(tag.strip()) > MAX_TAG_LENGTH:
            raise Refused("too_long", f"A tag has at most {MAX_TAG_LENGTH} characters.",
                          at=f".{index}")
        _one_line(tag.strip(), at=f".{index}")
    return list(dict.fromkeys(tag.strip() for tag in value if tag.strip()))


def clean_custom_fields(value: Any) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise Refused("invalid_format", "Expected a JSON object.")
    if len(value) > MAX_CUSTOM_FIELD_KEYS:
        raise Refused("too_long", f"At most {MAX_CUSTOM_FIELD_KEYS} keys.")
    if any(not key or len(key) > MAX_CUSTOM_FIELD_KEY_LENGTH for key in value):
        raise Refused("invalid_format", f"Keys have 1 to {MAX_CUSTOM_FIELD_KEY_LENGTH} characters.")
    if len(json.dumps(value, separators=(",", ":")).encode()) > MAX_CUSTOM_FIELDS_BYTES:
        raise Refused("too_long", f"At most {MAX_CUSTOM_FIELDS_BYTES} bytes of JSON.")
    return value


CLEANERS: dict[str, Callable[[Any], Any]] = {
    "email": clean_email,
    **{field: _text(field) for field in TEXT_LIMITS},
    "status": _choice(LeadStatus.values),
    "source": _choice(LeadSource.values),
    "score": clean_score,
    "tags": clean_tags,
    "custom_fields": clean_custom_fields,
}


def clean(values: dict[str, Any], *, tenant: Tenant) -> dict[str, Any]:
    """``values`` (model field -> value) cleaned; every broken rule is reported at once, as
    400 ``invalid_request``, before the rules that a well-formed value breaks (422
    ``unprocessable``: an address whose normalised form is none, an assignee outside the
    tenant)."""
    cleaned: dict[str, Any] = {}
    errors: list[FieldError] = []
    semantic: list[FieldError] = []
    for field, value in values.items():
        if field == "assigned_to_id":
            continue
        cleaner = CLEANERS.get(field)
        if cleaner is None:
            raise ValueError(f"Leads have no writable field {field!r}")
        try:
            cleaned[field] = cleaner(value)
        except Refused as refused:
            found = FieldError(field + refused.at, refused.code, refused.message)
            (semantic if refused.semantic else errors).append(found)
    if errors:
        raise InvalidRequest(details=errors + semantic)
    if semantic:
        raise Unprocessable(semantic[0].message, details=semantic)
    if "assigned_to_id" in values:
        cleaned["assigned_to_id"] = assignee_id(tenant, values["assigned_to_id"])
    return cleaned


def assignee_id(tenant: Tenant, user_id: uuid.UUID | None) -> uuid.UUID | None:
    if user_id is None:
        return None
    if not User.objects.filter(pk=user_id, tenant=tenant, is_active=True).exists():
        raise Unprocessable(
            "The assignee must be a user of this tenant.",
            details=[FieldError("assigned_to_id", "invalid_enum",
                                "No active user of this tenant has this id.")],
        )
    return user_id
