"""What the embedding model costs a process (``make bench``; issue 27, "Cost"; docs/performance.md,
"The embedding model").

1. **Memory.** A fresh process (``tests/benchmarks/model_memory.py``) becomes what a web process
   is before its models load (Django set up, the URL conf imported), then loads the model and
   embeds a document's chunks and fifty visitors' messages. The aim: the model adds at most
   150 MB of resident memory. The table adds the peak, and every model of the agent loaded
   together (the embedding model, the language identifiers, the decisions' regressions).
2. **Indexing.** The Celery task's code (``knowledge.tasks.index_document``), run in this
   process as a worker process runs it: the parse in its child process, the chunks, their
   embeddings in batches, and storing and indexing them in one transaction, on PostgreSQL.
   The documents are generated help-centre handbooks in Markdown (sections of one to four
   paragraphs, as the evaluation's documents are written: ``tests/benchmarks/corpus.py``), each
   new to the model; the model is loaded first, as in a worker that has indexed before. The
   aim: at least 200 chunks a second, the median of three documents. The table adds the
   embedding alone (``knowledge.vectors.embed_document``, on a fourth handbook's chunks) and a
   PDF manual, whose long pages make chunks of 800 to 1,000 characters.
"""

from __future__ import annotations

import json
import os
import random
import statistics
import subprocess
import sys
import time

import pytest

from core import embeddings
from knowledge import vectors
from knowledge.chunking import chunk_sections
from knowledge.models import Document, DocumentSource, DocumentStatus
from knowledge.parsing import parse_markdown
from knowledge.services import document_delete
from knowledge.tasks import index_document
from tenants.models import Tenant
from tenants.services import tenant_create
from tests.benchmarks import corpus, harness
from tests.benchmarks.harness import check
from tests.knowledge_files import make_pdf
from tests.live import ROOT

pytestmark = pytest.mark.bench

MEMORY_AIM_MB = 150.0
INDEXING_AIM = 200.0  # chunks a second
HANDBOOKS = 3
SECTIONS = 250  # a handbook's, about 270 chunks
PDF_PAGES = 40


@pytest.fixture(scope="session")
def django_db_setup(bench_database):
    return bench_database


def _memory(*args: str) -> dict:
    out = subprocess.run([sys.executable, "-m", "tests.benchmarks.model_memory", *args], cwd=ROOT,
                         env={**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings"},
                         capture_output=True, text=True, timeout=300, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_the_model_adds_at_most_150_mb_to_a_process():
    model = _memory()
    every = _memory("--all")
    added = model["used"] - model["before"]
    table = harness.table("embeddings", ["Measure", "Result"])
    table.rows += [
        ["a web process before the model (Django, the URL conf, numpy)", f"{model['before']:.0f} MB"],
        [f"the model loaded, {model['chunks']} chunks and 50 messages embedded: added",
         f"{added:.0f} MB (peak {model['peak'] - model['before']:.0f} MB)"],
        ["every model of the agent (with the language identifiers and the decisions): added",
         f"{every['used'] - every['before']:.0f} MB (peak {every['peak'] - every['before']:.0f} MB)"],
    ]
    check("embeddings", "resident memory the embedding model adds to a process", added,
          MEMORY_AIM_MB, unit=" MB")


def _handbook(rng: random.Random, number: int) -> str:
    return corpus.markdown_document(rng, sections=SECTIONS,
                                    title=f"{corpus.PRODUCT} handbook {number}")


def _pdf(rng: random.Random) -> bytes:
    pages = []
    for _ in range(PDF_PAGES):
        lines, line = [], ""
        for word in " ".join(corpus.paragraph(rng, 5) for _ in range(5)).split():
            if len(line) + len(word) > 90:
                lines.append(line)
                line = ""
            line = f"{line} {word}".strip()
        pages.append([*lines, line])
    return make_pdf(pages, compress=True)


def _index(tenant: Tenant, *, title: str, type: str, data: bytes) -> tuple[float, Document]:
    """Seconds the task took to make the document ready, and the document."""
    document = Document.objects.create(tenant=tenant, livemode=True, title=title, type=type,
                                       size=len(data))
    DocumentSource.objects.create(document=document, data=data)
    started = time.perf_counter()
    index_document(str(document.pk))
    seconds = time.perf_counter() - started
    document.refresh_from_db()
    assert document.status == DocumentStatus.READY, document.failure_reason
    return seconds, document


def test_indexing_embeds_at_least_200_chunks_a_second(django_db_setup, django_db_blocker):
    rng = random.Random(int(time.time()))  # new texts every run: none in the model's cache
    with django_db_blocker.unblock():
        tenant = Tenant.objects.filter(name="Indexing benchmark").first() or tenant_create(
            name="Indexing benchmark", plan="enterprise")[0]
        embeddings.warm_up()
        _, warm = _index(tenant, title="Warm-up", type="markdown",
                         data=corpus.markdown_document(rng, sections=5, title="Warm").encode())
        done = [warm]
        rates, sizes = [], []
        for number in range(HANDBOOKS):
            seconds, document = _index(tenant, title=f"Handbook {number}", type="markdown",
                                       data=_handbook(rng, number).encode())
            done.append(document)
            rates.append(document.chunk_count / seconds)
            sizes += [len(text) for text in document.chunks.values_list("text", flat=True)]
        chunks = chunk_sections(parse_markdown(_handbook(rng, HANDBOOKS)))
        started = time.perf_counter()
        made = vectors.embed_document(tenant=tenant, title="Handbook", chunks=chunks)
        embedding_rate = len(chunks) / (time.perf_counter() - started)
        assert len(made[embeddings.MODEL_ID]) == len(chunks)
        pdf_seconds, pdf = _index(tenant, title="Manual", type="pdf", data=_pdf(rng))
        done.append(pdf)
        pdf_sizes = [len(text) for text in pdf.chunks.values_list("text", flat=True)]
        for document in done:
            document_delete(document=document)
    rate = statistics.median(rates)
    table = harness.table("embeddings", ["Measure", "Result"])
    table.rows += [
        [f"indexing a Markdown handbook ({len(sizes) // HANDBOOKS} chunks, median "
         f"{statistics.median(sizes):.0f} characters): the whole task, median of {HANDBOOKS}",
         f"{rate:.0f} chunks/s ({', '.join(f'{r:.0f}' for r in rates)})"],
        [f"embedding alone, a handbook's {len(chunks)} chunks", f"{embedding_rate:.0f} chunks/s"],
        [f"indexing a {PDF_PAGES}-page PDF ({pdf.chunk_count} chunks, median "
         f"{statistics.median(pdf_sizes):.0f} characters): the whole task",
         f"{pdf.chunk_count / pdf_seconds:.0f} chunks/s"],
    ]
    table.notes.append(f"- The embedding model's BLAS threads: {harness.embedding_threads()}.")
    print("\n" + table.markdown())
    check("embeddings", "indexing (the task, one worker process): chunks a second", rate,
          INDEXING_AIM, at_most=False, unit=" chunks/s")
