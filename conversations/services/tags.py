"""The tenant's tags and the tags on its conversations (docs/dashboard.md, "Inbox").

Tags are the staff's labels, like the tenant's settings: their writes emit no event (no
subscriber, webhook or feed has a use for a label), and a tag on a conversation is deleted with
the conversation (its erasure included)."""

from __future__ import annotations

import re

from django.db import IntegrityError, transaction
from django.utils import timezone

from core.errors import Conflict, FieldError, InvalidRequest, NotFound
from tenants.models import Tenant, User

from ..models import Conversation, ConversationTag, Tag

MAX_TAGS = 100  # per tenant
MAX_NAME = 40
COLOUR = re.compile(r"^#[0-9a-f]{6}$")


def _clean(name: str, colour: str) -> tuple[str, str]:
    name = " ".join((name or "").split())
    colour = (colour or "").strip().lower()
    problems = []
    if not name:
        problems.append(FieldError("name", "required", "Give the tag a name."))
    elif len(name) > MAX_NAME:
        problems.append(FieldError("name", "too_long", f"At most {MAX_NAME} characters."))
    if colour and not COLOUR.match(colour):
        problems.append(FieldError("colour", "invalid_format",
                                   "A colour is #rrggbb (six hexadecimal digits), or none."))
    if problems:
        raise InvalidRequest("The tag was not saved.", details=problems)
    return name, colour


def _taken(name: str) -> Conflict:
    return Conflict(f"There is a tag “{name}” already.",
                    details=[FieldError("name", "duplicate", "A tag has this name already.")])


@transaction.atomic
def tag_create(*, tenant: Tenant, name: str, colour: str = "") -> Tag:
    """A new tag of the tenant: a name unique whatever its case, and an optional colour."""
    name, colour = _clean(name, colour)
    if Tag.objects.filter(tenant=tenant).count() >= MAX_TAGS:
        raise Conflict(f"A tenant has at most {MAX_TAGS} tags: remove one first.")
    try:
        with transaction.atomic():
            return Tag.objects.create(tenant=tenant, name=name, colour=colour)
    except IntegrityError:
        raise _taken(name) from None


@transaction.atomic
def tag_update(*, tag: Tag, name: str, colour: str = "") -> Tag:
    """Renames or recolours ``tag``: the conversations that have it show the change."""
    name, colour = _clean(name, colour)
    tag.name, tag.colour = name, colour
    try:
        with transaction.atomic():
            tag.save(update_fields=["name", "colour"])
    except IntegrityError:
        raise _taken(name) from None
    return tag


@transaction.atomic
def tag_delete(*, tag: Tag) -> None:
    """Deletes ``tag`` and takes it off every conversation."""
    tag.delete()


@transaction.atomic
def conversation_tag_add(*, conversation: Conversation, tag: Tag, user: User | None) -> bool:
    """Puts ``tag`` (of the conversation's tenant) on the conversation; False if it was there."""
    if tag.tenant_id != conversation.tenant_id:
        raise NotFound("No such tag.")
    _, created = ConversationTag.objects.get_or_create(
        conversation=conversation, tag=tag,
        defaults={"tenant_id": conversation.tenant_id, "livemode": conversation.livemode,
                  "added_by": user, "created_at": timezone.now()})
    return created


@transaction.atomic
def conversation_tag_remove(*, conversation: Conversation, tag: Tag) -> bool:
    """Takes ``tag`` off the conversation; False if it was not there."""
    deleted, _ = ConversationTag.objects.filter(conversation=conversation, tag=tag).delete()
    return deleted > 0
