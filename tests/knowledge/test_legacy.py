"""Legacy knowledge base over HTTP: ``POST``/``GET /api/admin/knowledge-base`` and
``GET``/``DELETE /api/admin/knowledge-base/:id``: the admin scope or the admin cookie, the
legacy envelope, both upload forms, 400 for every refusal, strangers and test mode."""

from __future__ import annotations

import pytest

from knowledge.models import Chunk, Document, DocumentStatus
from tests import knowledge_files as files
from tests.knowledge_helpers import LEGACY, index_pending, upload, upload_file

PDF = files.make_pdf([["Refunds are possible within 30 days."]])
DOCX = files.make_docx([("h1", "Security"), ("p", "All data is encrypted at rest.")])


def _legacy_upload(api, kit, title, content, **kwargs):
    kwargs.setdefault("scope", "admin")
    return upload(api, kit, title, content, path=LEGACY, **kwargs)


def test_upload_text_list_and_delete(api, kit):
    r = _legacy_upload(api, kit, "FAQ", "Q: Is there a trial?\nA: Yes, 14 days.", type="faq")
    assert r.status_code == 201, r.text
    document = r.json()["document"]
    assert document["status"] == "processing" and document["type"] == "faq"
    assert str(Document.objects.get().pk) == document["id"]  # the legacy id is the UUID

    index_pending()
    listing = api.get(LEGACY, headers=kit.auth("admin"))
    assert listing.status_code == 200
    [listed] = listing.json()["documents"]
    assert listed["id"] == document["id"] and listed["status"] == "ready"
    assert listed["chunkCount"] == 1
    assert listing.json()["pagination"]["total"] == 1
    single = api.get(f"{LEGACY}/{document['id']}", headers=kit.auth("admin"))
    assert single.json()["document"]["status"] == "ready"

    r = api.delete(f"{LEGACY}/{document['id']}", headers=kit.auth("admin"))
    assert r.status_code == 204
    assert not Document.objects.exists() and not Chunk.objects.exists()
    assert api.get(LEGACY, headers=kit.auth("admin")).json()["documents"] == []
    r = api.delete(f"{LEGACY}/{document['id']}", headers=kit.auth("admin"))
    assert r.status_code == 404 and r.json() == {"error": "The requested resource does not exist."}


def test_pdf_and_docx_as_multipart_or_base64(api, kit):
    r = upload_file(api, kit, "refunds.pdf", PDF, path=LEGACY, scope="admin", title="Refunds")
    assert r.status_code == 201, r.text
    assert r.json()["document"]["filename"] == "refunds.pdf"
    r = _legacy_upload(api, kit, "Security", DOCX, type="docx")
    assert r.status_code == 201, r.text
    r = upload_file(api, kit, "security.docx", DOCX, path=LEGACY, scope="admin", type="docx")
    assert r.status_code == 201, r.text
    assert [d.status for d in index_pending()] == [DocumentStatus.READY] * 3


def test_the_admin_cookie_works_and_lesser_keys_do_not(api, kit):
    assert _legacy_upload(api, kit, "Doc", "text", scope="write").status_code == 403
    assert api.get(LEGACY, headers=kit.auth("read")).status_code == 403
    assert api.get(LEGACY).status_code == 401
    assert api.post("/api/admin/auth", json={"token": kit.admin_token}).status_code == 200
    r = api.post(LEGACY, json={"title": "Via cookie", "content": "text"})
    assert r.status_code == 201, r.text
    assert api.get(LEGACY).json()["documents"][0]["title"] == "Via cookie"


@pytest.mark.parametrize(("body", "words"), [
    ({"content": "text"}, "title"),
    ({"title": "T"}, "content"),
    ({"title": "T", "content": "x", "type": "html"}, "type"),
    ({"title": "T", "content": "!!!", "type": "pdf"}, "base64"),
    ({"title": "T", "content": "aGVsbG8gd29ybGQ=", "type": "pdf"}, "not a PDF"),
])
def test_refusals_are_400_with_the_legacy_envelope(api, kit, body, words):
    r = api.post(LEGACY, json=body, headers=kit.auth("admin"))
    assert r.status_code == 400, r.text
    assert set(r.json()) == {"error"} and words in r.json()["error"]


def test_an_oversize_upload_is_400(api, kit, settings):
    settings.KNOWLEDGE_MAX_DOCUMENT_BYTES = 2048
    big = files.make_pdf([["lots of words " * 40] for _ in range(4)])
    for r in (upload_file(api, kit, "big.pdf", big, path=LEGACY, scope="admin"),
              _legacy_upload(api, kit, "Big", big, type="pdf")):
        assert r.status_code == 400 and "2,048 bytes" in r.json()["error"]
    assert not Document.objects.exists()


def test_a_stranger_gets_404_and_test_keys_see_test_data_only(api, kit, stranger):
    doc_id = _legacy_upload(api, kit, "Live doc", "Live text.").json()["document"]["id"]
    assert api.get(f"{LEGACY}/{doc_id}", headers=stranger.auth("admin")).status_code == 404
    assert api.delete(f"{LEGACY}/{doc_id}", headers=stranger.auth("admin")).status_code == 404
    assert api.get(LEGACY, headers=stranger.auth("admin")).json()["documents"] == []
    assert api.get(LEGACY, headers=kit.auth("admin", "test")).json()["documents"] == []
    assert api.delete(f"{LEGACY}/{doc_id}", headers=kit.auth("admin", "test")).status_code == 404
    assert api.get(f"{LEGACY}/not-a-uuid", headers=kit.auth("admin")).status_code == 404
    assert Document.objects.count() == 1


def test_list_is_paginated_with_bounded_queries(api, kit, django_assert_max_num_queries):
    for n in range(3):
        _legacy_upload(api, kit, f"Doc {n}", "text")
    with django_assert_max_num_queries(4):
        r = api.get(f"{LEGACY}?limit=2", headers=kit.auth("admin"))
    assert [d["title"] for d in r.json()["documents"]] == ["Doc 2", "Doc 1"]
    assert r.json()["pagination"]["hasMore"] is True
    assert api.get(f"{LEGACY}?limit=0", headers=kit.auth("admin")).status_code == 400
