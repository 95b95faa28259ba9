"""The document as each surface shows it: one shape, the id in the surface's form."""

from __future__ import annotations

from typing import Any

from core import ids
from core.timestamps import format_timestamp

from .models import Document


def _body(document: Document, *, id: str) -> dict[str, Any]:
    return {
        "id": id,
        "title": document.title,
        "type": document.type,
        "filename": document.filename or None,
        "size": document.size,
        "language": document.language or None,
        "url": document.url or None,
        "status": document.status,
        "failureReason": document.failure_reason or None,
        "chunkCount": document.chunk_count,
        "pageCount": document.page_count,
        "createdAt": format_timestamp(document.created_at),
        "updatedAt": format_timestamp(document.updated_at),
    }


def v1_document(document: Document) -> dict[str, Any]:
    return _body(document, id=ids.encode("doc", document.pk))


def legacy_document(document: Document) -> dict[str, Any]:
    return _body(document, id=str(document.pk))
