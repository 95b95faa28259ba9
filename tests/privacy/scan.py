"""The erasure scan: every text, JSON and binary column of every table, and the mail files, read
for a person's strings (docs/privacy.md)."""

from __future__ import annotations

import email
import email.policy
import json
from pathlib import Path

from django.apps import apps
from django.conf import settings
from django.db import models

TEXT_FIELDS = (models.CharField, models.TextField, models.JSONField, models.BinaryField)


def text_columns(model) -> list[models.Field]:
    return [f for f in model._meta.concrete_fields if isinstance(f, TEXT_FIELDS)]


def models_with_text() -> list:
    return [m for m in apps.get_models(include_auto_created=True) if text_columns(m)]


def _as_text(value) -> str:
    if value is None:
        return ""
    if isinstance(value, (bytes, memoryview)):
        return bytes(value).decode("utf-8", "replace")
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def _mail(raw: bytes) -> str:
    """A mail file as raw text, plus its headers and parts decoded (bodies are encoded)."""
    message = email.message_from_bytes(raw, policy=email.policy.default)
    parts = [raw.decode("utf-8", "replace"), *map(str, message.values())]
    parts += [part.get_content() for part in message.walk()
              if not part.is_multipart() and part.get_content_maintype() == "text"]
    return "\n".join(parts)


def traces(needles: list[str]) -> list[str]:
    """Where any of ``needles`` (any case) still is: ``app.Model.column (pk): 'needle'``."""
    wanted = [n.lower() for n in needles]
    found = []
    for model in models_with_text():
        columns = text_columns(model)
        for row in model._base_manager.values_list("pk", *[c.attname for c in columns]):
            for column, value in zip(columns, row[1:], strict=True):
                text = _as_text(value).lower()
                found += [f"{model._meta.label}.{column.name} ({row[0]}): {needle!r}"
                          for needle in wanted if needle in text]
    folder = Path(settings.EMAIL_FILE_PATH)
    if folder.is_dir():
        for path in folder.iterdir():
            text = _mail(path.read_bytes()).lower()
            found += [f"file {path.name}: {needle!r}" for needle in wanted if needle in text]
    return found
