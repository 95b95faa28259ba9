"""The dashboard's knowledge-base page over HTTP: the list (newest first, statuses, passages,
pages, a fixed number of queries), uploads of pasted text and of PDF and DOCX files through
``knowledge.services`` (queued after the commit, ready once the worker has run), the same
refusals as the API, delete, who may do what, CSRF, and the tenant and mode walls."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils import timezone

from knowledge import services
from knowledge.models import Chunk, Document, DocumentStatus
from knowledge.retrieval import retrieve
from tests import knowledge_files as files
from tests.dashboard.client import Client, signed_in
from tests.knowledge_helpers import index_pending

PAGE = "/dashboard/knowledge/"
UPLOAD = "/dashboard/knowledge/upload/"
PASTE = "/dashboard/knowledge/paste/"
# The script that refreshes processing rows (static/dashboard/knowledge.js).
KNOWLEDGE_JS = '<script src="/static/dashboard/knowledge.js">'
PDF = files.make_pdf([["Our widget installs with one script tag."],
                      ["Refunds are possible within 30 days of purchase."]])
DOCX = files.make_docx([("h1", "Install"), ("p", "Paste the script tag before the closing body.")])


def document(kit, title, data=b"Plans start at 49 dollars per seat.", *, type="text", mode="live",
             minutes_ago=0, **extra) -> Document:
    created = services.document_create(tenant=kit.tenant, livemode=mode == "live", title=title,
                                       type=type, data=data, **extra)
    if minutes_ago:
        at = timezone.now() - timedelta(minutes=minutes_ago)
        Document.objects.filter(pk=created.pk).update(created_at=at, updated_at=at)
    return created


def rows(html: str) -> list[tuple[str, str]]:
    """(document id, status) of each row of the list, in order."""
    return re.findall(r'data-document="([0-9a-f-]+)" data-status="(\w+)"', html)


def file(name: str, data: bytes, mime: str = "application/octet-stream") -> SimpleUploadedFile:
    return SimpleUploadedFile(name, data, content_type=mime)


# --- the list -------------------------------------------------------------------------------

def test_the_list_shows_the_modes_documents_newest_first_with_their_status(kit, stranger, manager):
    ready = document(kit, "Pricing", minutes_ago=30)
    broken = document(kit, "Broken scan", files.corrupt_pdf(), type="pdf", filename="scan.pdf",
                      minutes_ago=20)
    index_pending()
    fresh = document(kit, "Just uploaded", minutes_ago=1)
    secret = document(kit, "Sandbox notes", mode="test")
    theirs = services.document_create(tenant=stranger.tenant, livemode=True, title="Their playbook",
                                      type="text", data=b"Stranger things.")

    page = signed_in(manager).get(PAGE)
    html = page.content.decode()
    assert page.status_code == 200 and 'aria-current="page">Knowledge base' in html
    assert rows(html) == [(str(fresh.pk), "processing"), (str(broken.pk), "failed"),
                          (str(ready.pk), "ready")]
    broken.refresh_from_db()
    assert broken.failure_reason and broken.failure_reason in html
    assert "scan.pdf" in html
    row = html[html.index(f'data-document="{ready.pk}"'):]
    row = row[:row.index("</tr>")]
    assert "<td>Plain text</td>" in row and ">Ready<" in row and "35\xa0bytes" in row
    assert "<td>1</td>" in row  # one passage
    assert secret.title not in html and theirs.title not in html

    client = signed_in(manager)
    client.post("/dashboard/mode/", {"mode": "test"})
    html = client.get(PAGE).content.decode()
    assert rows(html) == [(str(secret.pk), "processing")] and "test data" in html


def test_the_list_costs_the_same_queries_for_one_document_or_a_full_page(kit, manager,
                                                                         django_assert_max_num_queries):
    # The session, the user, the tenant, the handoffs unread beside Conversations, the count
    # and the page of documents.
    client = signed_in(manager)
    document(kit, "First")
    # 7: with the check that a person with two-factor sign-in passed it (dashboard.auth).
    with django_assert_max_num_queries(7):
        client.get(PAGE)
    for i in range(30):
        document(kit, f"Doc {i}", f"Passage number {i}.".encode(), minutes_ago=i + 1)
    index_pending()
    with django_assert_max_num_queries(7):
        html = client.get(PAGE).content.decode()
    assert len(rows(html)) == 25 and "Page 1 of 2" in html and "31 documents" in html
    html = client.get(PAGE + "?page=2").content.decode()
    assert len(rows(html)) == 6 and "Doc 29" in html


def test_a_strangers_and_the_other_modes_documents_are_404(kit, stranger, manager):
    theirs = services.document_create(tenant=stranger.tenant, livemode=True, title="Theirs",
                                      type="text", data=b"Stranger things.")
    sandbox = document(kit, "Sandbox", mode="test")
    client = signed_in(manager)
    for doc in (theirs, sandbox):
        assert client.post(f"{PAGE}{doc.pk}/delete/").status_code == 404
    assert client.post(f"{PAGE}not-a-uuid/delete/").status_code == 404
    assert Document.objects.count() == 2


# --- uploads --------------------------------------------------------------------------------

def test_pasted_text_is_uploaded_queued_and_ready_after_the_worker(kit, manager, eager_celery,
                                                                   django_capture_on_commit_callbacks):
    client = signed_in(manager)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        r = client.post(PASTE, {"title": "Pricing", "type": "markdown",
                                "content": "# Plans\n\nStarter is $49 per seat.",
                                "url": "https://acme.example/pricing"})
    assert r.status_code == 302 and r["Location"] == PAGE
    doc = Document.objects.get()
    assert (doc.title, doc.type, doc.status, doc.livemode, doc.filename, doc.url) == (
        "Pricing", "markdown", "processing", True, "", "https://acme.example/pricing")
    assert len(callbacks) == 1  # queued for the worker only once the upload committed
    html = client.get(PAGE).content.decode()
    assert "Uploaded “Pricing” — indexing" in html and rows(html) == [(str(doc.pk), "processing")]
    assert KNOWLEDGE_JS in html  # the processing row refreshes itself

    callbacks[0]()  # the worker runs
    html = client.get(PAGE).content.decode()
    assert rows(html) == [(str(doc.pk), "ready")] and KNOWLEDGE_JS not in html
    [passage] = retrieve(tenant=kit.tenant, livemode=True, query="starter seat")
    assert passage.title == "Pricing"


def test_an_upload_answers_with_a_redirect_so_a_reload_stores_nothing_more(kit, manager):
    """POST-redirect-GET: the browser's reload repeats the GET of the list, not the upload."""
    client = signed_in(manager)
    r = client.post(UPLOAD, {"file": file("handbook.pdf", PDF, "application/pdf")})
    assert r.status_code == 302 and r["Location"] == PAGE
    first = client.get(PAGE).content.decode()
    again = client.get(PAGE).content.decode()
    assert Document.objects.count() == 1 and len(rows(again)) == 1
    assert "Uploaded “handbook”" in first and "Uploaded “" not in again  # the message, once


def test_pdf_and_docx_files_are_uploaded_and_indexed(kit, manager):
    client = signed_in(manager)
    client.post("/dashboard/mode/", {"mode": "test"})
    r = client.post(UPLOAD, {"file": file("handbook.pdf", PDF, "application/pdf"), "title": "",
                             "type": "", "url": ""}, follow=True)
    assert b"Uploaded \xe2\x80\x9chandbook\xe2\x80\x9d \xe2\x80\x94 indexing" in r.content
    r = client.post(UPLOAD, {"file": file("guide.docx", DOCX), "title": "Install guide",
                             "type": "", "url": ""})
    assert r.status_code == 302
    # No extension: the first bytes tell, as on the API.
    client.post(UPLOAD, {"file": file("upload", PDF), "title": "Untitled PDF"})
    handbook, guide, untitled = index_pending()
    assert (handbook.title, handbook.type, handbook.filename, handbook.size) == (
        "handbook", "pdf", "handbook.pdf", len(PDF))
    assert (guide.title, guide.type, guide.filename) == ("Install guide", "docx", "guide.docx")
    assert untitled.type == "pdf"
    assert all(d.status == DocumentStatus.READY and not d.livemode for d in (handbook, guide, untitled))
    assert (handbook.page_count, handbook.chunk_count) == (2, 2)
    html = client.get(PAGE).content.decode()
    assert "(2 pages)" in html and "Word document (DOCX)" in html
    assert retrieve(tenant=kit.tenant, livemode=False, query="refunds purchase")
    assert not retrieve(tenant=kit.tenant, livemode=True, query="refunds purchase")


@pytest.mark.parametrize(("url", "fields", "error"), [
    (UPLOAD, {}, "Choose a file to upload."),
    (UPLOAD, {"file": ("empty.txt", b"")}, "The document has no content."),
    (UPLOAD, {"file": ("photo.png", b"\x89PNG\r\n\x1a\n\x00\xff\xfe" * 20)},
     "PNG files are not supported (PDF, DOCX, text, Markdown)."),
    (UPLOAD, {"file": ("notes.txt", b"Plain words."), "type": "pdf"}, "The file is not a PDF."),
    (UPLOAD, {"file": ("old.docx", b"\xd0\xcf\x11\xe0 an old binary .doc")},
     "Word 97-2003 (.doc) files are not supported (PDF, DOCX, text, Markdown)."),
    (UPLOAD, {"file": ("draft.docx", b"not a zip at all")}, "The file is not a DOCX document."),
    (UPLOAD, {"file": ("big.txt", b"x" * 1001)}, "The file is 1,001 bytes; the limit is 1,000 bytes."),
    (UPLOAD, {"file": ("big.pdf", PDF[:8] + b" " * 1000)}, "The file is 1,008 bytes;"),
    (UPLOAD, {"file": ("notes.txt", b"Plain words."), "title": "x" * 201}, "At most 200 characters."),
    (UPLOAD, {"file": ("notes.txt", b"Plain words."), "url": "ftp://acme.example/x"},
     "An http or https URL"),
    (PASTE, {"title": "Empty", "type": "text", "content": ""}, "The document has no content."),
    (PASTE, {"title": "Blank", "type": "text", "content": "  \n \n"}, "The document has no text."),
    (PASTE, {"title": "", "type": "faq", "content": "Q: Why?\nA: Because."},
     "A document needs a title."),
    (PASTE, {"title": "Big", "type": "text", "content": "x" * 1001},
     "The document is 1,001 bytes; the limit is 1,000 bytes."),
    (PASTE, {"title": "Scan", "type": "pdf", "content": "%PDF-1.4"}, "Select a valid choice."),
])
def test_a_refused_upload_shows_the_form_with_the_error_and_stores_nothing(
        kit, manager, settings, django_capture_on_commit_callbacks, url, fields, error):
    settings.KNOWLEDGE_MAX_DOCUMENT_BYTES = 1000
    data = {"title": "", "type": "", "url": "", **fields}
    if "file" in data:
        data["file"] = file(*data["file"])
    with django_capture_on_commit_callbacks() as callbacks:
        r = signed_in(manager).post(url, data)
    html = r.content.decode()
    assert r.status_code == 200 and 'class="errorlist' in html and error in html, html
    assert Document.objects.count() == 0 and callbacks == []
    if url == PASTE and fields["content"]:
        assert fields["content"] in html  # the text is kept for another try


def test_the_knowledge_base_limit_is_the_apis(kit, manager, settings):
    settings.KNOWLEDGE_MAX_DOCUMENTS = 1
    document(kit, "Only one")
    r = signed_in(manager).post(PASTE, {"title": "Two", "type": "text", "content": "More."})
    assert r.status_code == 200 and "the limit; delete some first" in r.content.decode()
    assert Document.objects.count() == 1


# --- delete ---------------------------------------------------------------------------------

def test_delete_removes_the_document_and_its_passages(kit, manager):
    doc = document(kit, "Pricing")
    keep = document(kit, "Install", b"Paste the script tag.")
    index_pending()
    assert retrieve(tenant=kit.tenant, livemode=True, query="dollars seat")
    client = signed_in(manager)
    assert 'data-confirm="Delete “Pricing”?' in client.get(PAGE).content.decode()
    r = client.post(f"{PAGE}{doc.pk}/delete/", {"next": PAGE + "?page=1"})
    assert r.status_code == 302 and r["Location"] == PAGE + "?page=1"
    assert list(Document.objects.all()) == [keep]
    assert not Chunk.objects.filter(document_id=doc.pk).exists()
    assert retrieve(tenant=kit.tenant, livemode=True, query="dollars seat") == []
    html = client.get(PAGE).content.decode()
    assert "Deleted “Pricing”: the agent no longer answers from it." in html
    # Deleted already: 404, not an error page.
    assert client.post(f"{PAGE}{doc.pk}/delete/").status_code == 404


# --- who may do what ------------------------------------------------------------------------

def test_reps_see_and_upload_but_only_managers_and_the_admin_token_delete(kit, rep):
    doc = document(kit, "Pricing")
    client = signed_in(rep)
    html = client.get(PAGE).content.decode()
    assert "Pricing" in html and "Upload" in html and "/delete/" not in html
    r = client.post(PASTE, {"title": "Objections", "type": "faq",
                            "content": "Q: Is it secure?\nA: Yes, SOC 2."})
    assert r.status_code == 302 and Document.objects.filter(title="Objections").exists()
    r = client.post(f"{PAGE}{doc.pk}/delete/", follow=True)
    assert r.redirect_chain[-1][0] == "/dashboard/" and b"Only sales managers" in r.content
    assert Document.objects.filter(pk=doc.pk).exists()

    admin = Client()
    admin.post("/dashboard/login/token/", {"token": kit.admin_token})
    assert "/delete/" in admin.get(PAGE).content.decode()
    assert admin.post(f"{PAGE}{doc.pk}/delete/").status_code == 302
    assert not Document.objects.filter(pk=doc.pk).exists()


def test_strangers_are_sent_to_the_sign_in(kit):
    doc = document(kit, "Pricing")
    anonymous = Client()
    for r in (anonymous.get(PAGE),
              anonymous.post(PASTE, {"title": "T", "type": "text", "content": "Words."}),
              anonymous.post(f"{PAGE}{doc.pk}/delete/")):
        assert r.status_code == 302 and r["Location"].startswith("/dashboard/login/?next=")
    assert list(Document.objects.all()) == [doc]


def test_forms_are_csrf_protected(kit, manager):
    doc = document(kit, "Pricing")
    client = Client(enforce_csrf_checks=True)
    client.force_login(manager)
    assert client.post(PASTE, {"title": "T", "type": "text", "content": "Words."}).status_code == 403
    assert client.post(UPLOAD, {"file": file("a.pdf", PDF)}).status_code == 403
    assert client.post(f"{PAGE}{doc.pk}/delete/").status_code == 403
    assert list(Document.objects.all()) == [doc]
    # With the page's token the same forms work.
    html = client.get(PAGE).content.decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html).group(1)
    r = client.post(PASTE, {"title": "T", "type": "text", "content": "Words.",
                            "csrfmiddlewaretoken": token})
    assert r.status_code == 302 and Document.objects.count() == 2
