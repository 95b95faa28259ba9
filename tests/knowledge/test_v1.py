"""v1 knowledge base over HTTP: ``/api/v1/knowledge-base`` (list, create in both forms) and
``/api/v1/knowledge-base/{id}`` (get, delete): shapes, scopes, validation, limits, strangers
and test mode."""

from __future__ import annotations

import base64

import pytest

from knowledge.models import Document, DocumentStatus
from tests import knowledge_files as files
from tests.knowledge_helpers import V1, index_pending, upload, upload_file

PDF = files.make_pdf([["Our widget installs with one script tag."]])
DOCX = files.make_docx([("h1", "Install"), ("p", "Paste the script tag before </body>.")])


def _detail(r, field):
    return {d["field"]: d["code"] for d in r.json()["error"]["details"]}.get(field)


def test_create_text_answers_at_once_with_the_document_processing(api, kit):
    r = upload(api, kit, "Pricing", "Plans start at 49 dollars per seat.", type="markdown",
               url="https://acme.example/pricing", language="en")
    assert r.status_code == 201, r.text
    body = r.json()
    assert body["id"].startswith("doc_") and len(body["id"]) == 36
    assert {k: body[k] for k in ("title", "type", "filename", "size", "language", "url", "status",
                                 "failureReason", "chunkCount", "pageCount")} == {
        "title": "Pricing", "type": "markdown", "filename": None, "size": 35, "language": "en",
        "url": "https://acme.example/pricing", "status": "processing", "failureReason": None,
        "chunkCount": 0, "pageCount": None}
    assert body["createdAt"].endswith("Z") and body["updatedAt"] == body["createdAt"]

    index_pending()
    got = api.get(f"{V1}/{body['id']}", headers=kit.auth("read")).json()
    assert got["status"] == "ready" and got["chunkCount"] == 1


def test_type_defaults_to_text_for_content(api, kit):
    r = api.post(V1, json={"title": "Notes", "content": "Plain words."}, headers=kit.auth("write"))
    assert r.status_code == 201 and r.json()["type"] == "text"


def test_create_pdf_and_docx_as_multipart_files(api, kit):
    r = upload_file(api, kit, "handbook.pdf", PDF, mime="application/pdf")
    assert r.status_code == 201, r.text
    assert r.json()["type"] == "pdf" and r.json()["title"] == "handbook"
    assert r.json()["filename"] == "handbook.pdf" and r.json()["size"] == len(PDF)
    r = upload_file(api, kit, "C:\\fakepath\\guide.docx", DOCX, title="Install guide",
                    url="https://acme.example/install")
    assert r.status_code == 201, r.text
    assert (r.json()["type"], r.json()["title"], r.json()["filename"]) == (
        "docx", "Install guide", "guide.docx")
    # No extension: the first bytes tell.
    r = upload_file(api, kit, "upload", PDF)
    assert r.status_code == 201 and r.json()["type"] == "pdf"
    documents = index_pending()
    assert [d.status for d in documents] == [DocumentStatus.READY] * 3
    assert documents[0].page_count == 1


def test_create_pdf_and_docx_as_base64_content(api, kit):
    r = upload(api, kit, "Handbook", PDF, type="pdf")
    assert r.status_code == 201, r.text
    data_url = "data:application/vnd.openxmlformats-officedocument.wordprocessingml.document;base64," \
        + base64.b64encode(DOCX).decode()
    r = upload(api, kit, "Guide", data_url, type="docx")
    assert r.status_code == 201, r.text
    r = upload(api, kit, "Url-safe", base64.urlsafe_b64encode(PDF).decode().rstrip("="), type="pdf")
    assert r.status_code == 201, r.text
    assert [d.status for d in index_pending()] == [DocumentStatus.READY] * 3


@pytest.mark.parametrize(("body", "field", "code"), [
    ({"content": "text"}, "title", "required"),
    ({"title": "  ", "content": "text"}, "title", "required"),
    ({"title": "x" * 201, "content": "text"}, "title", "too_long"),
    ({"title": "T"}, "content", "required"),
    ({"title": "T", "content": ""}, "content", "required"),
    ({"title": "T", "content": "   "}, "content", "required"),
    ({"title": "T", "content": "x", "type": "html"}, "type", "invalid_enum"),
    ({"title": "T", "content": "x", "url": "not a url"}, "url", "invalid_format"),
    ({"title": "T", "content": "x", "url": "ftp://acme.example/doc"}, "url", "invalid_format"),
    ({"title": "T", "content": "x", "language": "xx"}, "language", "invalid_enum"),
    ({"title": "T", "content": "x", "language": "eng"}, "language", "too_long"),
    ({"title": "T", "content": "%%% not base64 %%%", "type": "pdf"}, "content", "invalid_format"),
])
def test_invalid_bodies_are_400_with_field_details(api, kit, body, field, code):
    r = api.post(V1, json=body, headers=kit.auth("write"))
    assert r.status_code == 400, r.text
    assert r.json()["error"]["code"] == "invalid_request"
    assert _detail(r, field) == code
    assert not Document.objects.exists()


def test_a_title_taken_from_a_long_file_name_is_400(api, kit):
    r = upload_file(api, kit, "x" * 201 + ".txt", b"Plain words.")
    assert r.status_code == 400, r.text
    assert r.json()["error"]["details"] == [
        {"field": "title", "code": "too_long", "message": "At most 200 characters."}]
    assert not Document.objects.exists()


def test_content_and_file_together_are_refused(api, kit):
    r = api.post(V1, files={"file": ("a.txt", b"hello", "text/plain")},
                 data={"title": "T", "content": "hello"}, headers=kit.auth("write"))
    assert r.status_code == 400 and _detail(r, "content") == "invalid_format"


@pytest.mark.parametrize(("make", "field"), [
    (lambda api, kit: upload(api, kit, "Fake", b"GIF89a not a pdf", type="pdf"), "content"),
    (lambda api, kit: upload_file(api, kit, "fake.docx", b"%PDF-1.4 a pdf"), "file"),
    (lambda api, kit: upload_file(api, kit, "latin1.txt", "caf\xe9".encode("latin-1")), "file"),
    (lambda api, kit: upload_file(api, kit, "old.doc", b"\xd0\xcf\x11\xe0 binary"), "file"),
])
def test_files_that_are_not_what_they_claim_are_422(api, kit, make, field):
    r = make(api, kit)
    assert r.status_code == 422, r.text
    assert r.json()["error"]["code"] == "unprocessable"
    assert _detail(r, field) == "invalid_format"


@pytest.mark.parametrize(("name", "data", "kind"), [
    ("screenshot.png", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "PNG"),
    ("photo.jpg", b"\xff\xd8\xff\xe0\x00\x10JFIF", "JPEG"),
    ("brochure", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "Word 97-2003 (.doc)"),
])
def test_a_file_of_an_unsupported_type_is_named_in_the_refusal(api, kit, name, data, kind):
    r = upload_file(api, kit, name, data)
    assert r.status_code == 422, r.text
    assert r.json()["error"]["message"].startswith(
        f"{kind} files are not supported (PDF, DOCX, text, Markdown).")
    assert _detail(r, "file") == "invalid_format"
    assert not Document.objects.exists()


def test_oversize_uploads_are_422_before_anything_is_stored(api, kit, settings):
    settings.KNOWLEDGE_MAX_DOCUMENT_BYTES = 4096
    big = files.make_pdf([["word " * 200] for _ in range(5)])
    assert len(big) > 4096
    for r in (upload_file(api, kit, "big.pdf", big), upload(api, kit, "Big", big, type="pdf")):
        assert r.status_code == 422, r.text
        assert r.json()["error"]["details"][0]["code"] == "too_long"
        assert "4,096 bytes" in r.json()["error"]["message"]
    # Just under the limit by Content-Length, over it once decoded.
    r = upload(api, kit, "Text", "é" * 3000)
    assert r.status_code == 422 and _detail(r, "content") == "too_long"
    assert not Document.objects.exists()


def test_text_over_the_character_limit_is_422(api, kit, settings):
    settings.KNOWLEDGE_MAX_CHARACTERS = 1000
    r = upload(api, kit, "Long", "word " * 300)
    assert r.status_code == 422 and _detail(r, "content") == "too_long"
    assert "1,000" in r.json()["error"]["message"]


def test_the_document_count_limit_is_422(api, kit, settings):
    settings.KNOWLEDGE_MAX_DOCUMENTS = 2
    for n in range(2):
        assert upload(api, kit, f"Doc {n}", "text").status_code == 201
    r = upload(api, kit, "One too many", "text")
    assert r.status_code == 422 and "limit" in r.json()["error"]["message"]
    # The limit is per mode: test data has its own.
    assert upload(api, kit, "Test doc", "text", mode="test").status_code == 201


def test_list_is_newest_first_paginated_and_filtered(api, kit, django_assert_max_num_queries):
    for n in range(3):
        upload(api, kit, f"Doc {n}", f"Text {n}")
    upload(api, kit, "Broken", b"%PDF-1.4 broken", type="pdf")
    index_pending()
    with django_assert_max_num_queries(4):
        r = api.get(f"{V1}?limit=2", headers=kit.auth("read"))
    assert r.status_code == 200
    body = r.json()
    assert [d["title"] for d in body["data"]] == ["Broken", "Doc 2"]
    assert body["pagination"] == {"page": 1, "limit": 2, "total": 4, "totalPages": 2, "hasMore": True}
    page2 = api.get(f"{V1}?limit=2&page=2", headers=kit.auth("read")).json()
    assert [d["title"] for d in page2["data"]] == ["Doc 1", "Doc 0"]
    failed = api.get(f"{V1}?status=failed", headers=kit.auth("read")).json()["data"]
    assert [(d["title"], d["status"]) for d in failed] == [("Broken", "failed")]
    assert failed[0]["failureReason"].startswith("The PDF could not be read")
    assert [d["title"] for d in api.get(f"{V1}?type=pdf", headers=kit.auth("read")).json()["data"]] == [
        "Broken"]
    bad = api.get(f"{V1}?status=done&limit=500", headers=kit.auth("read"))
    assert bad.status_code == 400
    assert {d["field"] for d in bad.json()["error"]["details"]} == {"status", "limit"}


def test_delete_needs_admin_and_removes_the_document(api, kit):
    doc_id = upload(api, kit, "Pricing", "Plans start at 49 dollars.").json()["id"]
    index_pending()
    assert api.delete(f"{V1}/{doc_id}", headers=kit.auth("write")).status_code == 403
    r = api.delete(f"{V1}/{doc_id}", headers=kit.auth("admin"))
    assert r.status_code == 204 and r.content == b""
    assert api.get(f"{V1}/{doc_id}", headers=kit.auth("read")).status_code == 404
    assert api.delete(f"{V1}/{doc_id}", headers=kit.auth("admin")).status_code == 404


def test_scopes(api, kit):
    assert upload(api, kit, "Read", "text", scope="read").status_code == 403
    assert upload(api, kit, "Write", "text", scope="write").status_code == 201
    assert api.get(V1, headers=kit.auth("read")).status_code == 200
    assert api.get(V1).status_code == 401


def test_a_stranger_neither_sees_nor_touches_the_documents(api, kit, stranger):
    doc_id = upload(api, kit, "Secret plans", "Our roadmap.").json()["id"]
    assert api.get(V1, headers=stranger.auth("read")).json()["data"] == []
    assert api.get(f"{V1}/{doc_id}", headers=stranger.auth("read")).status_code == 404
    assert api.delete(f"{V1}/{doc_id}", headers=stranger.auth("admin")).status_code == 404
    assert Document.objects.count() == 1


def test_live_and_test_documents_never_mix(api, kit):
    live_id = upload(api, kit, "Live doc", "Live text.").json()["id"]
    test_id = upload(api, kit, "Test doc", "Test text.", mode="test").json()["id"]
    assert [d["id"] for d in api.get(V1, headers=kit.auth("read", "test")).json()["data"]] == [test_id]
    assert [d["id"] for d in api.get(V1, headers=kit.auth("read")).json()["data"]] == [live_id]
    assert api.get(f"{V1}/{live_id}", headers=kit.auth("read", "test")).status_code == 404
    assert api.delete(f"{V1}/{live_id}", headers=kit.auth("admin", "test")).status_code == 404


def test_ids_of_another_kind_or_shape_are_404(api, kit):
    doc_id = upload(api, kit, "Doc", "Text.").json()["id"]
    hex_part = doc_id.split("_", 1)[1]
    for wrong in (f"lead_{hex_part}", hex_part, "doc_123", str(Document.objects.get().pk)):
        assert api.get(f"{V1}/{wrong}", headers=kit.auth("read")).status_code == 404


def test_an_idempotency_key_on_a_file_upload_counts_the_files_content(api, kit):
    headers = {**kit.auth("write"), "Idempotency-Key": "upload-handbook-1"}
    first = api.post(V1, files={"file": ("handbook.pdf", PDF, "application/pdf")}, headers=headers)
    again = api.post(V1, files={"file": ("handbook.pdf", PDF, "application/pdf")}, headers=headers)
    assert first.status_code == again.status_code == 201
    assert again.json()["id"] == first.json()["id"] and Document.objects.count() == 1
    other = files.make_pdf([["A different handbook under the same name."]])
    r = api.post(V1, files={"file": ("handbook.pdf", other, "application/pdf")}, headers=headers)
    assert r.status_code == 422 and Document.objects.count() == 1
    # The file read for the fingerprint is read again, whole, by the upload.
    index_pending()
    assert Document.objects.get().status == DocumentStatus.READY
