"""Every write to the knowledge base: upload, indexing, deletion, and the sweeper.

An upload is stored at once as ``processing`` and handed to the worker after the commit
(``knowledge.tasks.index_document``); the worker reads the file in a child process with limits
(``knowledge.extraction``), cuts it into chunks (``knowledge.chunking``) and stores and indexes
them in one transaction with the move to ``ready`` — or records ``failed`` with a reason. The
specification has no knowledge-base events, so none are emitted.

Field names in error details are the v1 names, the only surface that shows details.
"""

from __future__ import annotations

import logging
import uuid
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from core import broker
from core.errors import FieldError, InvalidRequest, Unprocessable
from core.languages import ISO_639_1, detect_language
from tenants.models import Tenant

from . import index, vectors
from .chunking import chunk_sections
from .extraction import extract
from .models import (
    BINARY_TYPES,
    Chunk,
    Document,
    DocumentSource,
    DocumentStatus,
    DocumentType,
)
from .parsing import ParseFailure, decode_text

logger = logging.getLogger("salesagent.knowledge")

MAX_TITLE = 200
MAX_URL = 2000
MAX_INDEXING_RUNS = 3
LANGUAGE_SAMPLE_CHARS = 20_000


class TooManyDocuments(Unprocessable):
    default_message = "The knowledge base is full."


# --- upload ---------------------------------------------------------------------------------

def _check_upload(*, title: str, type: str, data: bytes, url: str, language: str,
                  source_field: str) -> str:
    """Refuses at once what the request already shows to be wrong; returns the clean title."""
    title = _clean_title(title)
    _check_description(type=type, url=url, language=language)
    _check_content(type=type, data=data, source_field=source_field)
    if type not in BINARY_TYPES:
        _check_text(data, source_field=source_field)
    return title


def _clean_title(title: str) -> str:
    title = (title or "").strip()
    if not title:
        raise InvalidRequest("A document needs a title.",
                             details=[FieldError("title", "required", "This field is required.")])
    if len(title) > MAX_TITLE:
        raise InvalidRequest(details=[FieldError("title", "too_long",
                                                 f"At most {MAX_TITLE} characters.")])
    return title


def _check_description(*, type: str, url: str, language: str) -> None:
    """The document's type, public URL and language."""
    if type not in DocumentType.values:
        raise InvalidRequest(details=[FieldError(
            "type", "invalid_enum", "One of " + ", ".join(DocumentType.values) + ".")])
    if url and (len(url) > MAX_URL or not url.lower().startswith(("https://", "http://"))):
        raise InvalidRequest(details=[FieldError(
            "url", "invalid_format", f"An http or https URL of at most {MAX_URL} characters.")])
    if language and language not in ISO_639_1:
        raise InvalidRequest(details=[FieldError("language", "invalid_enum",
                                                 "An ISO 639-1 language code such as en.")])


# Files people upload that are none of the supported types, known by their first bytes: named
# in the refusal, rather than read as text that is "not UTF-8" or as a broken DOCX.
_UNSUPPORTED = ((b"\x89PNG\r\n\x1a\n", "PNG"), (b"\xff\xd8\xff", "JPEG"), (b"GIF8", "GIF"),
                (b"\xd0\xcf\x11\xe0", "Word 97-2003 (.doc)"), (b"{\\rtf", "RTF"),
                (b"\x1f\x8b", "gzip"), (b"7z\xbc\xaf", "7-Zip"))


def _check_content(*, type: str, data: bytes, source_field: str) -> None:
    """The bytes: present, within the size limit, of no known unsupported type, and starting as
    a PDF or DOCX file does."""
    if not data:
        raise InvalidRequest("The document is empty.", details=[FieldError(
            source_field, "required", "The document has no content.")])
    limit = settings.KNOWLEDGE_MAX_DOCUMENT_BYTES
    if len(data) > limit:
        raise Unprocessable(
            f"The document is {len(data):,} bytes; the limit is {limit:,} bytes.",
            details=[FieldError(source_field, "too_long", f"At most {limit:,} bytes.")])
    for magic, kind in _UNSUPPORTED:
        if data.startswith(magic):
            raise Unprocessable(f"{kind} files are not supported (PDF, DOCX, text, Markdown).",
                                details=[FieldError(source_field, "invalid_format",
                                                    "Expected PDF, DOCX, text or Markdown.")])
    if type == DocumentType.PDF and b"%PDF-" not in data[:1024]:
        raise Unprocessable("The file is not a PDF.", details=[FieldError(
            source_field, "invalid_format", "Expected a PDF file (it starts with %PDF-).")])
    if type == DocumentType.DOCX and not data.startswith(b"PK\x03\x04"):
        raise Unprocessable("The file is not a DOCX document.", details=[FieldError(
            source_field, "invalid_format", "Expected a DOCX file (a Word document, .docx).")])


def _check_text(data: bytes, *, source_field: str) -> None:
    """A text type's bytes: UTF-8, not blank, within the character limit."""
    try:
        text = decode_text(data)
    except ParseFailure:
        raise Unprocessable(
            "The content is not UTF-8 text; the supported types are "
            + ", ".join(DocumentType.values) + ".",
            details=[FieldError(source_field, "invalid_format", "Expected UTF-8 text.")],
        ) from None
    if not text.strip():
        raise InvalidRequest("The document is empty.", details=[FieldError(
            source_field, "required", "The document has no text.")])
    most = settings.KNOWLEDGE_MAX_CHARACTERS
    if len(text) > most:
        raise Unprocessable(
            f"The text has {len(text):,} characters; the limit is {most:,}.",
            details=[FieldError(source_field, "too_long", f"At most {most:,} characters.")])


def document_create(*, tenant: Tenant, livemode: bool, title: str, type: str, data: bytes,
                    filename: str = "", url: str = "", language: str = "",
                    source_field: str = "content") -> Document:
    """Stores an upload as ``processing`` and enqueues its indexing after the commit.

    ``source_field`` names the request field that carried the bytes (``content`` or ``file``)
    in error details.
    """
    title = _check_upload(title=title, type=type, data=data, url=url or "",
                          language=language or "", source_field=source_field)
    with transaction.atomic():
        # Serialises uploads of one tenant, so that two at once cannot both take the last place.
        Tenant.objects.select_for_update().filter(pk=tenant.pk).values_list("pk").first()
        count = Document.objects.filter(tenant=tenant, livemode=livemode).count()
        if count >= settings.KNOWLEDGE_MAX_DOCUMENTS:
            raise TooManyDocuments(
                f"The knowledge base holds {count:,} documents, the limit; delete some first.")
        now = timezone.now()
        document = Document.objects.create(
            tenant=tenant, livemode=livemode, title=title, type=type, filename=filename[:255],
            size=len(data), language=language or "", url=url or "",
            status=DocumentStatus.PROCESSING, created_at=now, updated_at=now,
        )
        DocumentSource.objects.create(document=document, data=data)
        transaction.on_commit(lambda: _enqueue(document.pk))
    return document


def _enqueue(document_id: uuid.UUID) -> None:
    from .tasks import index_document

    # A broker that cannot be reached holds nobody (``core.broker``): the upload is committed,
    # and the sweeper enqueues it again once the broker is back.
    broker.publish(index_document, [str(document_id)])


# --- indexing -------------------------------------------------------------------------------

def document_index(*, document_id: uuid.UUID) -> Document | None:
    """Parses, chunks and indexes a ``processing`` document; ``ready`` or ``failed`` after.

    Idempotent: a document that is no longer ``processing`` (done, failed, deleted) is left
    alone, so a redelivered task does nothing. The parse runs outside any transaction (it may
    take a while); the chunks, the index and the status change are written in one.
    """
    claimed = Document.objects.filter(pk=document_id, status=DocumentStatus.PROCESSING).update(
        attempts=F("attempts") + 1, updated_at=timezone.now())
    if not claimed:
        return Document.objects.filter(pk=document_id).first()
    document = Document.objects.select_related("tenant").get(pk=document_id)
    data = DocumentSource.objects.filter(document_id=document_id).values_list("data", flat=True).first()
    try:
        if data is None:
            raise ParseFailure("The uploaded file is missing.")
        parsed = extract(data=bytes(data), type=document.type)
        chunks = chunk_sections(parsed.sections)
        if len(chunks) > settings.KNOWLEDGE_MAX_CHUNKS:
            raise ParseFailure(f"The document makes {len(chunks):,} passages; the limit is "
                               f"{settings.KNOWLEDGE_MAX_CHUNKS:,}.")
    except ParseFailure as failure:
        return _fail(document_id, failure.reason)

    # Embedded outside the transaction, as the parse is; a model that cannot run leaves the
    # chunks without its vectors, which retrieval's full-text half (and the other model's
    # vectors) still finds and the re-embedding sweeper (vectors.reembed_batch) completes.
    chunk_vectors = vectors.embed_document(tenant=document.tenant, title=document.title,
                                           chunks=chunks)
    language = document.language
    if not language:
        sample = " ".join(c.text for c in chunks)[:LANGUAGE_SAMPLE_CHARS]
        language = detect_language(sample) or ""
    config = index.search_config(language)
    with transaction.atomic():
        current = Document.objects.select_for_update().filter(pk=document_id).first()
        if current is None or current.status != DocumentStatus.PROCESSING:
            return current  # deleted, or finished by another run, while this one parsed
        owner = {"tenant_id": current.tenant_id, "livemode": current.livemode}
        index.unindex_document_chunks(document_id=document_id, **owner)
        Chunk.objects.filter(document_id=document_id).delete()
        index.store_chunks(document_id=document_id, config=config, chunks=chunks, **owner)
        if chunk_vectors:
            vectors.store_vectors(document_id=document_id, vectors=chunk_vectors, **owner)
        now = timezone.now()
        current.status = DocumentStatus.READY
        current.failure_reason = ""
        current.chunk_count = len(chunks)
        current.character_count = parsed.characters
        current.page_count = parsed.pages
        current.language = language
        current.search_config = config
        current.indexed_at = now
        current.updated_at = now
        current.save()
    return current


def _fail(document_id: uuid.UUID, reason: str) -> Document | None:
    with transaction.atomic():
        current = Document.objects.select_for_update().filter(pk=document_id).first()
        if current is None or current.status != DocumentStatus.PROCESSING:
            return current
        current.status = DocumentStatus.FAILED
        current.failure_reason = reason[:500]
        current.updated_at = timezone.now()
        current.save(update_fields=["status", "failure_reason", "updated_at"])
    logger.info("document %s failed: %s", document_id, reason)
    return current


def documents_sweep_stuck(*, now: datetime | None = None, batch: int = 100) -> int:
    """Enqueues again documents whose indexing never finished (a worker that died, a broker
    that was down at upload); after ``MAX_INDEXING_RUNS`` runs they fail. Returns how many it
    touched. Each claim is a conditional update, so two sweepers never enqueue one twice."""
    now = now or timezone.now()
    cutoff = now - timedelta(seconds=settings.KNOWLEDGE_STUCK_AFTER_SECONDS)
    stuck = list(Document.objects.filter(status=DocumentStatus.PROCESSING, updated_at__lt=cutoff)
                 .order_by("updated_at").values_list("pk", "attempts")[:batch])
    touched = 0
    for pk, attempts in stuck:
        if attempts >= MAX_INDEXING_RUNS:
            if _fail(pk, f"Indexing did not finish after {MAX_INDEXING_RUNS} attempts."):
                touched += 1
            continue
        with transaction.atomic():
            claimed = Document.objects.filter(pk=pk, status=DocumentStatus.PROCESSING,
                                              updated_at__lt=cutoff).update(updated_at=now)
            if claimed:
                transaction.on_commit(lambda pk=pk: _enqueue(pk))
                touched += 1
    return touched


# --- deletion -------------------------------------------------------------------------------

@transaction.atomic
def document_delete(*, document: Document) -> None:
    """Removes the document, its chunks, their index entries and the uploaded bytes together:
    once this commits, retrieval cannot return any of it.

    Locks in the indexer's order (``document_index``): the document's row, then the tenant's
    term counts (``index._lock_tenant_terms``). Taken the other way round, a delete during an
    indexing deadlocked on PostgreSQL."""
    with transaction.atomic():
        if Document.objects.select_for_update().filter(pk=document.pk).values_list("pk").first() is None:
            return
        index.unindex_document_chunks(document_id=document.pk, tenant_id=document.tenant_id,
                                      livemode=document.livemode)
        Document.objects.filter(pk=document.pk).delete()  # its chunks' vectors with it
        vectors.bump(tenant_id=document.tenant_id, livemode=document.livemode)
