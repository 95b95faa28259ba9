"""What every log line passes through before it is written: email addresses are masked.

The service's own log lines name records by id (docs/privacy.md, "Logs"). Text that other code
puts into a line is not ours to word: an SMTP server's refusal quotes the recipient
(``550 5.1.1 <alice@example.com>: Recipient address rejected``), a database's unique-violation
detail quotes the value, a traceback quotes the exception's message. The formatter masks any
email address in the finished line, message and traceback alike, so that a visitor's address
never reaches a log whoever wrote the line. Phone numbers and names have no shape that tells them
from ids, counts and times; the call sites keep those out.
"""

from __future__ import annotations

import logging
import re

EMAIL = re.compile(r"[\w.!#$%&'*+/=?^`{|}~-]+@[\w-]+(?:\.[\w-]+)*\.[A-Za-z]{2,}\b")
MASK = "[email]"


def redact(text: str) -> str:
    return EMAIL.sub(MASK, text)


class RedactingFormatter(logging.Formatter):
    """A formatter whose lines have their email addresses masked. ``inner``: another formatter
    to wrap (Celery's, in a worker), else this one formats as ``logging.Formatter`` does."""

    def __init__(self, *args, inner: logging.Formatter | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.inner = inner

    def format(self, record: logging.LogRecord) -> str:
        return redact(self.inner.format(record) if self.inner else super().format(record))


def redact_handlers(logger: logging.Logger) -> None:
    """Wraps the formatter of each of ``logger``'s handlers. Celery replaces the handlers that
    the settings' ``LOGGING`` set up with its own in a worker and in beat
    (``config/celery.py`` calls this once it has)."""
    for handler in logger.handlers:
        formatter = handler.formatter or logging.Formatter()
        if not isinstance(formatter, RedactingFormatter):
            handler.setFormatter(RedactingFormatter(inner=formatter))
