"""Indexing: the task run for real (in-process; it is idempotent), the parser's child process
with its limits, failures with reasons, the enqueue after commit, and the sweeper."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from django.utils import timezone

from knowledge import services
from knowledge.models import Chunk, Document, DocumentSource, DocumentStatus
from knowledge.retrieval import retrieve
from knowledge.tasks import index_document, sweep_stuck_documents
from tests import knowledge_files as files
from tests.knowledge_helpers import index_pending, upload, upload_file


def _create(kit, data, *, type="pdf", title="Doc", mode="live", **extra) -> Document:
    return services.document_create(tenant=kit.tenant, livemode=mode == "live", title=title,
                                    type=type, data=data, **extra)


def test_an_upload_is_processing_until_the_task_indexes_it(kit):
    pdf = files.make_pdf([["Our widget installs with one script tag."],
                          ["Refunds are possible within 30 days of purchase."]], compress=True)
    document = _create(kit, pdf, title="Handbook", filename="handbook.pdf")
    assert document.status == DocumentStatus.PROCESSING and document.chunk_count == 0
    assert retrieve(tenant=kit.tenant, livemode=True, query="refunds purchase") == []

    assert index_document(str(document.pk)) == DocumentStatus.READY
    document.refresh_from_db()
    assert (document.status, document.page_count, document.chunk_count) == (DocumentStatus.READY, 2, 2)
    assert document.language == "en" and document.attempts == 1 and document.indexed_at
    assert list(Chunk.objects.filter(document=document).values_list("position", "text")) == [
        (0, "Our widget installs with one script tag."),
        (1, "Refunds are possible within 30 days of purchase."),
    ]
    [passage] = retrieve(tenant=kit.tenant, livemode=True, query="Can I get a refund?")
    assert passage.document_id == document.pk and "30 days" in passage.excerpt


def test_the_task_is_idempotent(kit):
    document = _create(kit, b"Plans start at 49 dollars.", type="text")
    assert index_document(str(document.pk)) == DocumentStatus.READY
    assert index_document(str(document.pk)) == DocumentStatus.READY  # a redelivered message
    document.refresh_from_db()
    assert document.attempts == 1 and Chunk.objects.filter(document=document).count() == 1
    assert len(retrieve(tenant=kit.tenant, livemode=True, query="plans dollars")) == 1
    assert index_document("8f9c1a52-9d0a-4a8e-8f7e-6f0c2b7f1b11") is None  # never existed


def test_a_document_deleted_while_it_was_being_read_stays_deleted(kit, monkeypatch):
    document = _create(kit, b"Plans start at 49 dollars.", type="text")
    real_extract = services.extract

    def extract_then_delete(**kwargs):
        parsed = real_extract(**kwargs)
        services.document_delete(document=document)  # the tenant deletes it meanwhile
        return parsed

    monkeypatch.setattr(services, "extract", extract_then_delete)
    assert index_document(str(document.pk)) is None
    assert not Document.objects.exists() and not Chunk.objects.exists()


def test_the_language_is_detected_or_taken_as_given(kit):
    german = _create(kit, "Der Preis für das Widget ist günstig und die Installation ist einfach.".encode(),
                     type="text")
    given = _create(kit, b"Just some words.", type="text", language="fr")
    index_pending()
    german.refresh_from_db()
    given.refresh_from_db()
    assert german.language == "de" and given.language == "fr"
    assert german.search_config == "german" and given.search_config == "french"


@pytest.mark.parametrize(("make", "type", "reason"), [
    (files.corrupt_pdf, "pdf", "looks damaged"),
    (lambda: files.encrypted_pdf([["secret plans"]]), "pdf", "password-protected"),
    (lambda: files.make_pdf([[], []]), "pdf", "no extractable text"),
    (files.nested_pdf, "pdf", "could not be read"),
    (files.bomb_pdf, "pdf", "expands beyond the size limit"),
    (lambda: b"PK\x03\x04" + b"\x00" * 100, "docx", "not a DOCX"),
    (files.zip_bomb_docx, "docx", "expands beyond the size limit"),
], ids=["corrupt", "encrypted", "scanned", "nested", "bomb", "broken-zip", "zip-bomb"])
def test_unreadable_files_end_failed_with_a_reason(kit, make, type, reason):
    document = _create(kit, make(), type=type)
    assert index_document(str(document.pk)) == DocumentStatus.FAILED
    document.refresh_from_db()
    assert reason in document.failure_reason and document.chunk_count == 0
    assert not Chunk.objects.exists()
    # A failed document is done: running the task again changes nothing.
    assert index_document(str(document.pk)) == DocumentStatus.FAILED


def test_a_file_that_would_take_minutes_to_read_fails_at_the_time_limit(kit, settings):
    settings.KNOWLEDGE_PARSE_TIMEOUT_SECONDS = 2
    slow = files.slow_pdf(1_000_000)  # about 15 s of pypdf work without the limit
    document = _create(kit, slow)
    started = time.monotonic()
    assert index_document(str(document.pk)) == DocumentStatus.FAILED
    assert time.monotonic() - started < 8
    document.refresh_from_db()
    assert document.failure_reason == "Reading the document took longer than the limit of 2 seconds."


def test_a_parser_that_needs_too_much_memory_is_stopped(kit, settings):
    # Within pypdf's own limits (each stream under 75 MB), a page of many large streams still
    # adds up to more memory than the child may take.
    settings.KNOWLEDGE_PARSE_MEMORY_MB = 256
    streams = [f"{n + 6} 0 R".encode() for n in range(8)]
    body = files._deflate_repeated(b"%" + b" " * (1024 * 1024 - 1), 60)
    stream = (b"<< /Filter /FlateDecode /Length " + str(len(body)).encode() + b" >>\nstream\n"
              + body + b"\nendstream")
    pdf = files._assemble([
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [4 0 R] /Count 1 >>",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R"
        b" >> >> /Contents [" + b" ".join(streams) + b"] >>",
        b"<< /Length 0 >>\nstream\n\nendstream",
        *[stream] * 8,
    ])
    document = _create(kit, pdf)
    assert index_document(str(document.pk)) == DocumentStatus.FAILED
    document.refresh_from_db()
    assert "too much memory" in document.failure_reason and document.chunk_count == 0


def test_limits_found_while_reading_fail_the_document(kit, settings):
    settings.KNOWLEDGE_MAX_PAGES = 2
    pages = _create(kit, files.make_pdf([["one"], ["two"], ["three"]]))
    settings.KNOWLEDGE_MAX_CHUNKS = 1
    chunks = _create(kit, b"First paragraph. " * 60 + b"\n\n" + b"Second paragraph. " * 60,
                     type="text")
    index_pending()
    pages.refresh_from_db()
    chunks.refresh_from_db()
    assert pages.failure_reason == "The PDF has 3 pages; the limit is 2."
    assert chunks.failure_reason.endswith(" passages; the limit is 1.")


def test_indexing_is_enqueued_after_the_upload_commits(api, kit, eager_celery,
                                                       django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        r = upload(api, kit, "Pricing", "Plans start at 49 dollars per seat.")
    assert r.status_code == 201 and r.json()["status"] == "processing"
    assert len(callbacks) == 1  # nothing was enqueued before the commit
    assert Document.objects.get().status == DocumentStatus.PROCESSING
    callbacks[0]()
    assert Document.objects.get().status == DocumentStatus.READY

    with django_capture_on_commit_callbacks(execute=True):
        r = upload_file(api, kit, "guide.docx", files.make_docx([("h1", "Install"), ("p", "Paste it.")]))
    assert r.status_code == 201
    assert Document.objects.get(title="guide").status == DocumentStatus.READY


def test_a_failed_upload_enqueues_nothing(api, kit, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks() as callbacks:
        r = upload(api, kit, "Bad", "not base64 at all!", type="pdf")
    assert r.status_code == 400 and callbacks == []


def test_the_sweeper_retries_stuck_documents_then_fails_them(kit, eager_celery,
                                                             django_capture_on_commit_callbacks):
    stuck = _create(kit, b"Plans start at 49 dollars.", type="text")
    hopeless = _create(kit, b"Never indexed.", type="text")
    fresh = _create(kit, b"Just uploaded.", type="text")
    old = timezone.now() - timedelta(hours=1)
    Document.objects.filter(pk=stuck.pk).update(updated_at=old, attempts=1)
    Document.objects.filter(pk=hopeless.pk).update(updated_at=old, attempts=3)
    with django_capture_on_commit_callbacks(execute=True):
        assert sweep_stuck_documents() == 2
    stuck.refresh_from_db()
    hopeless.refresh_from_db()
    fresh.refresh_from_db()
    assert stuck.status == DocumentStatus.READY and stuck.attempts == 2
    assert hopeless.status == DocumentStatus.FAILED
    assert hopeless.failure_reason == "Indexing did not finish after 3 attempts."
    assert fresh.status == DocumentStatus.PROCESSING  # its worker may still be on it
    assert sweep_stuck_documents() == 0


def test_deleting_removes_chunks_index_entries_and_bytes_together(kit):
    document = _create(kit, b"Plans start at 49 dollars.", type="text")
    other = _create(kit, b"Plans for teams start at 99 dollars.", type="text")
    index_pending()
    assert len(retrieve(tenant=kit.tenant, livemode=True, query="plans dollars")) == 2
    services.document_delete(document=document)
    assert not Document.objects.filter(pk=document.pk).exists()
    assert not DocumentSource.objects.filter(document_id=document.pk).exists()
    assert not Chunk.objects.filter(document_id=document.pk).exists()
    [left] = retrieve(tenant=kit.tenant, livemode=True, query="plans dollars")
    assert left.document_id == other.pk
