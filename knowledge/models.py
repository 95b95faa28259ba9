"""Knowledge-base documents, their uploaded bytes, and the chunks the agent retrieves.

The full-text index lives next to the chunks and differs by database (migration 0002, outside
the model state because the state must describe every database the project runs on):

- PostgreSQL: ``knowledge_chunk.search``, a ``tsvector`` of the heading (weight A) and the text
  (weight B) in the document's text-search configuration, with a GIN index.
- SQLite: ``knowledge_chunk_fts``, an FTS5 table whose rowid is the chunk's id.

``knowledge.index`` keeps either in step with the chunks; nothing else writes them.
"""

from __future__ import annotations

import uuid

from django.db import models
from django.utils import timezone


class DocumentType(models.TextChoices):
    """How the upload is read (docs/knowledge.md, "Types")."""

    TEXT = "text", "Plain text"
    MARKDOWN = "markdown", "Markdown"
    FAQ = "faq", "Questions and answers"
    PDF = "pdf", "PDF"
    DOCX = "docx", "Word document (DOCX)"


DOCUMENT_TYPES = DocumentType.values
TEXT_TYPES = (DocumentType.TEXT, DocumentType.MARKDOWN, DocumentType.FAQ)
BINARY_TYPES = (DocumentType.PDF, DocumentType.DOCX)


class DocumentStatus(models.TextChoices):
    PROCESSING = "processing", "Processing"  # stored; parsing and indexing pending or running
    READY = "ready", "Ready"  # indexed: the agent answers from it
    FAILED = "failed", "Failed"  # could not be indexed; ``failure_reason`` says why


DOCUMENT_STATUSES = DocumentStatus.values


class Document(models.Model):
    """One uploaded document of a tenant, in one mode (live or test).

    The agent uses it only while it is ``ready``; deleting it removes its chunks in the same
    transaction, so the next answer cannot quote it. ``url``, when the tenant gives one, is
    where a visitor can read the document: replies that use it carry it as a ``link`` action.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    # No index of its own: the composite indexes below start with the tenant.
    tenant = models.ForeignKey("tenants.Tenant", on_delete=models.CASCADE, db_index=False,
                               related_name="documents")
    livemode = models.BooleanField()
    title = models.CharField(max_length=200)
    type = models.CharField(max_length=10, choices=DocumentType.choices)
    filename = models.CharField(max_length=255, blank=True)  # as uploaded; "" for inline content
    size = models.PositiveIntegerField(default=0)  # bytes of the uploaded file or content
    # ISO 639-1 as given or detected ("" when unknown); ``search_config`` is the PostgreSQL
    # text-search configuration it maps to ("simple" when there is none for the language).
    language = models.CharField(max_length=8, blank=True)
    search_config = models.CharField(max_length=32, default="simple")
    url = models.URLField(max_length=2000, blank=True)
    status = models.CharField(max_length=10, choices=DocumentStatus.choices,
                              default=DocumentStatus.PROCESSING)
    failure_reason = models.CharField(max_length=500, blank=True)
    chunk_count = models.PositiveIntegerField(default=0)
    character_count = models.PositiveIntegerField(default=0)
    page_count = models.PositiveIntegerField(null=True, blank=True)  # PDFs
    attempts = models.PositiveSmallIntegerField(default=0)  # indexing runs started
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)
    indexed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["tenant", "livemode", "created_at", "id"], name="doc_created"),
            models.Index(fields=["tenant", "livemode", "status", "created_at", "id"],
                         name="doc_status_created"),
            # The sweeper of documents whose indexing never finished, across tenants.
            models.Index(fields=["updated_at"], condition=models.Q(status="processing"),
                         name="doc_processing"),
        ]

    def __str__(self) -> str:
        return self.title


class DocumentSource(models.Model):
    """The uploaded bytes, apart from the document row so that lists never load them.

    Kept after indexing, so that a document can be indexed again (after a parser upgrade, or by
    the sweeper when a worker died) without asking the tenant to upload it again.
    """

    document = models.OneToOneField(Document, on_delete=models.CASCADE, primary_key=True,
                                    related_name="source")
    data = models.BinaryField()

    def __str__(self) -> str:
        return f"source of {self.document_id}"


class Chunk(models.Model):
    """A passage of a document: what retrieval ranks and the agent quotes.

    ``tenant`` and ``livemode`` repeat the document's so that retrieval filters without a join
    before ranking; ``search_config`` repeats its text-search configuration so that a tenant
    with documents in several languages has each chunk matched in its own language.
    """

    id = models.BigAutoField(primary_key=True)
    # Indexed by the (document, position) constraint.
    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="chunks",
                                 db_index=False)
    tenant = models.ForeignKey("tenants.Tenant", on_delete=models.CASCADE, db_index=False,
                               related_name="+")
    livemode = models.BooleanField()
    position = models.PositiveIntegerField()
    heading = models.CharField(max_length=300, blank=True)
    text = models.TextField()
    search_config = models.CharField(max_length=32, default="simple")

    class Meta:
        ordering = ["document", "position"]
        constraints = [
            models.UniqueConstraint(fields=["document", "position"], name="chunk_position"),
        ]
        indexes = [models.Index(fields=["tenant", "livemode"], name="chunk_tenant")]

    def __str__(self) -> str:
        return f"{self.document_id} #{self.position}"


class TermFrequency(models.Model):
    """In how many chunks of a tenant's ready documents, in one mode, each lexeme occurs: the
    document frequency behind PostgreSQL ranking (``knowledge.index``).

    ``ts_rank_cd`` has no notion of how rare a word is, and ranking every chunk that contains a
    common word is slow in a large knowledge base. With these counts retrieval gathers
    candidates from the rarest terms first, caps them, and weighs each matched term by its
    inverse document frequency. Written by ``knowledge.index`` in the transactions that index
    and delete chunks; PostgreSQL only (SQLite's FTS5 keeps its own statistics for bm25).
    """

    id = models.BigAutoField(primary_key=True)
    tenant = models.ForeignKey("tenants.Tenant", on_delete=models.CASCADE, db_index=False,
                               related_name="+")
    livemode = models.BooleanField()
    lexeme = models.TextField()
    chunks = models.IntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["tenant", "livemode", "lexeme"], name="term_lexeme"),
        ]

    def __str__(self) -> str:
        return f"{self.lexeme}: {self.chunks}"



class ChunkVector(models.Model):
    """A chunk's embedding by one model (``core.embeddings``): what dense retrieval compares a
    visitor's question with (``knowledge.vectors``).

    ``model_id`` names the model that made it. Retrieval compares only vectors of the model the
    process runs, and a change of model re-embeds in the background instead of mixing spaces.
    ``vector`` is float16, little-endian. Deleting a chunk (or its document) deletes its vectors
    in the same statement.
    """

    id = models.BigAutoField(primary_key=True)
    # Indexed by the (chunk, model) constraint.
    chunk = models.ForeignKey(Chunk, on_delete=models.CASCADE, related_name="vectors",
                              db_index=False)
    tenant = models.ForeignKey("tenants.Tenant", on_delete=models.CASCADE, db_index=False,
                               related_name="+")
    livemode = models.BooleanField()
    model_id = models.CharField(max_length=100)
    vector = models.BinaryField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["chunk", "model_id"], name="chunk_vector_model"),
        ]
        indexes = [models.Index(fields=["tenant", "livemode", "model_id", "id"],
                                name="chunk_vector_tenant")]

    def __str__(self) -> str:
        return f"{self.chunk_id} by {self.model_id}"


class VectorSet(models.Model):
    """The version of a tenant's vectors in one mode: bumped in every transaction that adds or
    removes any, so that a process holding them in memory (``knowledge.vectors``) knows with one
    primary-key read whether its copy is current, in whichever process the change was made."""

    tenant = models.ForeignKey("tenants.Tenant", on_delete=models.CASCADE, related_name="+")
    livemode = models.BooleanField()
    version = models.BigIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["tenant", "livemode"], name="vector_set_owner"),
        ]

    def __str__(self) -> str:
        return f"{self.tenant_id}/{self.livemode}: v{self.version}"
