"""Storing and removing the files of a conversation (docs/conversations.md, "Attachments")."""

from __future__ import annotations

import contextlib
import logging
import uuid
from collections.abc import Iterator
from typing import Any

from django.conf import settings
from django.db import transaction

from core.errors import FieldError, Unprocessable

from ..attachments import Upload, storage
from ..models import Attachment, Conversation, Message

logger = logging.getLogger("salesagent.attachments")


class TooManyAttachments(Unprocessable):
    def __init__(self, field: str = "file"):
        limit = settings.ATTACHMENTS_MAX_PER_CONVERSATION
        super().__init__("This conversation has no room for another file.",
                         details=[FieldError(field, "out_of_range", f"At most {limit} files "
                                                                    "per conversation.")])


def attachment_add(*, conversation: Conversation, message: Message, upload: Upload,
                   saved: list[str], author: Any = None) -> Attachment:
    """Stores ``upload`` as a file of ``message`` (in the caller's transaction, which holds the
    conversation's lock: two uploads at once cannot both take the last place). The storage key
    is appended to ``saved`` as soon as the bytes are written, for ``files_kept_on_success``."""
    count = Attachment.objects.filter(conversation=conversation).count()
    if count >= settings.ATTACHMENTS_MAX_PER_CONVERSATION:
        raise TooManyAttachments()
    pk = uuid.uuid4()
    key = storage().save(f"{conversation.tenant_id.hex}/{pk.hex}", upload.file)
    saved.append(key)
    return Attachment.objects.create(
        id=pk, tenant_id=conversation.tenant_id, livemode=conversation.livemode,
        conversation=conversation, message=message, role=message.role, author=author,
        name=upload.name, content_type=upload.content_type, size=upload.size,
        sha256=upload.sha256, storage_key=key, created_at=message.created_at)


@contextlib.contextmanager
def files_kept_on_success() -> Iterator[list[str]]:
    """Around a transaction that stores files: if it fails, the files it wrote go too, so a
    refused or failed request leaves nothing behind."""
    saved: list[str] = []
    try:
        yield saved
    except BaseException:
        attachment_files_remove(saved)
        raise


def attachment_files_remove(keys: list[str]) -> int:
    """Deletes stored files by key (a missing one is no error). Returns how many it removed."""
    removed = 0
    files = storage()
    for key in keys:
        try:
            if files.exists(key):
                files.delete(key)
                removed += 1
        except OSError as exc:  # logged: the row is gone, the file is an orphan to clean by hand
            logger.error("could not delete attachment file %s (%s)", key, exc)
    return removed


def conversation_files_remove_on_commit(conversation_ids: list[uuid.UUID]) -> int:
    """Before the conversations' rows are deleted (in the caller's transaction): their files are
    removed once it commits. Returns how many files there were."""
    keys = list(Attachment.objects.filter(conversation_id__in=conversation_ids)
                .values_list("storage_key", flat=True))
    if keys:
        transaction.on_commit(lambda: attachment_files_remove(keys))
    return len(keys)
