"""Helpers for the knowledge-base tests: uploads through the API and the indexing task run
in-process (it is idempotent, so running it for every pending document is safe)."""

from __future__ import annotations

import base64

from knowledge.models import Document, DocumentStatus
from knowledge.tasks import index_document

V1 = "/api/v1/knowledge-base"
LEGACY = "/api/admin/knowledge-base"


def upload(api, kit, title, content, *, type="text", scope="write", mode="live", path=V1,
           **extra):
    """A JSON upload: the text itself, or bytes (sent as base64) for pdf and docx."""
    if isinstance(content, bytes):
        content = base64.b64encode(content).decode()
    body = {"title": title, "content": content, "type": type, **extra}
    return api.post(path, json=body, headers=kit.auth(scope, mode))


def upload_file(api, kit, filename, data, *, scope="write", mode="live", path=V1,
                mime="application/octet-stream", **fields):
    return api.post(path, files={"file": (filename, data, mime)}, data=fields,
                    headers=kit.auth(scope, mode))


def index_pending() -> list[Document]:
    """Runs the indexing task on every document still processing, as a worker would."""
    for pk in Document.objects.filter(status=DocumentStatus.PROCESSING).values_list("pk", flat=True):
        index_document(str(pk))
    return list(Document.objects.order_by("created_at"))


def add_document(api, kit, title, content, **kwargs) -> Document:
    """Uploads and indexes one document; returns it ready (or failed)."""
    r = upload(api, kit, title, content, **kwargs)
    assert r.status_code == 201, r.text
    index_pending()
    doc_id = r.json()["id"] if "id" in r.json() else r.json()["document"]["id"]
    pk = doc_id.split("_", 1)[1] if doc_id.startswith("doc_") else doc_id
    return Document.objects.get(pk=pk)
