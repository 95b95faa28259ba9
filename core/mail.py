"""The embedded default's email transport: each message one ``.eml`` file under
``EMAIL_FILE_PATH`` (``var/mail/``), which any mail client opens. Django's file backend writes
every message of a connection into one ``.log`` file instead."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from pathlib import Path

from django.conf import settings
from django.core.mail.backends.base import BaseEmailBackend


class EmlFileBackend(BaseEmailBackend):
    """Writes each message to ``<EMAIL_FILE_PATH>/<UTC time>-<random>.eml``."""

    def __init__(self, *, file_path: str | None = None, **kwargs):
        super().__init__(**kwargs)
        self.directory = Path(file_path or settings.EMAIL_FILE_PATH)

    def send_messages(self, email_messages) -> int:
        if not email_messages:
            return 0
        self.directory.mkdir(parents=True, exist_ok=True)
        for message in email_messages:
            stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%f")
            path = self.directory / f"{stamp}-{uuid.uuid4().hex[:8]}.eml"
            # Written under a temporary name first: a reader never sees half a message.
            partial = path.with_suffix(".part")
            partial.write_bytes(message.message().as_bytes(linesep="\r\n"))
            partial.rename(path)
        return len(email_messages)
