"""Background work of the knowledge base: indexing an upload, and the sweeper of indexing runs
that never finished (beat, every 5 minutes)."""

from celery import shared_task
from django.conf import settings

from . import vectors
from .services import document_index, documents_sweep_stuck

# The parse has its own limit in a child process; these only catch a worker stuck elsewhere.
_SOFT_LIMIT = settings.KNOWLEDGE_PARSE_TIMEOUT_SECONDS + 60


@shared_task(name="knowledge.index_document", ignore_result=True,
             soft_time_limit=_SOFT_LIMIT, time_limit=_SOFT_LIMIT + 30)
def index_document(document_id: str) -> str | None:
    """Parses, chunks and indexes one document. Idempotent: a document that is not
    ``processing`` any more is left alone. Returns the resulting status."""
    document = document_index(document_id=document_id)
    return document.status if document else None


@shared_task(name="knowledge.sweep_stuck", ignore_result=True)
def sweep_stuck_documents() -> int:
    return documents_sweep_stuck()


@shared_task(name="knowledge.reembed", ignore_result=True, soft_time_limit=240, time_limit=270)
def reembed_chunks(batches: int = 40) -> int:
    """Embeds with the current model the chunks that have no vector of it (beat, every minute):
    after a change of model, or a document indexed while embedding failed; and through their
    provider the chunks of tenants on provider embeddings that lack the provider's vectors,
    asking each failing provider once a run. At most ``batches`` batches a run; the next run
    goes on."""
    done = 0
    provider_skip: set = set()
    for _ in range(batches):
        embedded = vectors.reembed_batch(provider_skip=provider_skip)
        done += embedded
        if not embedded:
            break
    return done
