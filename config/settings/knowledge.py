"""Limits of the knowledge base (docs/knowledge.md, "Limits").

Checked at upload where the request shows them (size, count, text length of text types: v1 422,
legacy 400); the rest (pages, text extracted from a PDF or DOCX, chunks) when the worker reads
the file, which then ends ``failed`` with the reason.
"""

from .env import env_int

KNOWLEDGE_MAX_DOCUMENT_BYTES = env_int("KNOWLEDGE_MAX_DOCUMENT_BYTES", 10 * 1024 * 1024, minimum=1024)
KNOWLEDGE_MAX_PAGES = env_int("KNOWLEDGE_MAX_PAGES", 500, minimum=1)
KNOWLEDGE_MAX_CHARACTERS = env_int("KNOWLEDGE_MAX_CHARACTERS", 2_000_000, minimum=1000)
KNOWLEDGE_MAX_CHUNKS = env_int("KNOWLEDGE_MAX_CHUNKS", 5_000, minimum=1)
# Documents per tenant and mode, whatever their status.
KNOWLEDGE_MAX_DOCUMENTS = env_int("KNOWLEDGE_MAX_DOCUMENTS", 1_000, minimum=1)
# The parser's child process: wall-clock limit and address-space limit.
KNOWLEDGE_PARSE_TIMEOUT_SECONDS = env_int("KNOWLEDGE_PARSE_TIMEOUT_SECONDS", 120, minimum=1)
KNOWLEDGE_PARSE_MEMORY_MB = env_int("KNOWLEDGE_PARSE_MEMORY_MB", 1024, minimum=256)
# A document still ``processing`` this long after its last indexing run started is enqueued
# again by the sweeper (its worker died, or the broker was down at upload), up to 3 runs.
KNOWLEDGE_STUCK_AFTER_SECONDS = env_int("KNOWLEDGE_STUCK_AFTER_SECONDS", 600, minimum=60)
# Dense retrieval holds each searched tenant's vectors in memory, 2 KiB a chunk (20 MB per 10,000
# chunks); the least recently searched go first past this budget, per process.
KNOWLEDGE_VECTOR_CACHE_MB = env_int("KNOWLEDGE_VECTOR_CACHE_MB", 256, minimum=1)
# A tenant on its provider's embeddings (docs/knowledge.md, "The provider's embeddings"): how long
# a visitor's question waits for the provider before retrieval compares the local model's
# vectors instead, and how long one request of the indexing or the re-embedding waits.
KNOWLEDGE_PROVIDER_QUESTION_TIMEOUT_SECONDS = env_int("KNOWLEDGE_PROVIDER_QUESTION_TIMEOUT_SECONDS", 3,
                                                      minimum=1)
KNOWLEDGE_PROVIDER_INDEX_TIMEOUT_SECONDS = env_int("KNOWLEDGE_PROVIDER_INDEX_TIMEOUT_SECONDS", 30,
                                                   minimum=1)
