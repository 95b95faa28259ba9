"""Files in a conversation (docs/conversations.md, "Attachments"): the widget's upload with its
chat message, the rep's with their reply, the limits and the type read from the bytes, the
headers and the access rules of each way to download one, and their removal with the
conversation (its deletion, an erasure)."""

from __future__ import annotations

import hashlib
import json
import uuid
from pathlib import Path

import pytest

from conversations.models import Attachment, Conversation, Message
from conversations.services import conversation_take_over
from tests.dashboard.client import signed_in

# Real headers of each type, padded: what is accepted is what the bytes say.
PNG = (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00"
       b"\x1f\x15\xc4\x89\x00\x00\x00\rIDATx\x9cc\xf8\xcf\xc0\xf0\x1f\x00\x05\x00\x01\xff\x89\x99"
       b"=\x1d\x00\x00\x00\x00IEND\xaeB`\x82")
PDF = b"%PDF-1.4\n1 0 obj<</Type/Catalog>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n"
JPEG = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00" + b"\x00" * 64
GIF = b"GIF89a\x01\x00\x01\x00" + b"\x00" * 32
WEBP = b"RIFF\x24\x00\x00\x00WEBPVP8 " + b"\x00" * 32
SVG = (b'<svg xmlns="http://www.w3.org/2000/svg"><script>alert(document.cookie)</script>'
       b'<rect width="10" height="10"/></svg>')
HTML = b"<!doctype html><script>alert(1)</script>"


@pytest.fixture(autouse=True)
def files_dir(settings, tmp_path) -> Path:
    """The attachments' storage in a folder of the test's own."""
    folder = tmp_path / "attachments"
    settings.STORAGES = {**settings.STORAGES, "attachments": {
        "BACKEND": "django.core.files.storage.FileSystemStorage",
        "OPTIONS": {"location": str(folder)}}}
    return folder


def stored(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file()) if folder.exists() else []


def send_file(api, kit, data: bytes, name: str, *, message: str = "", session: str | None = None,
              visitor: str = "v_1", declared: str = "image/png", **payload):
    body = {"message": message, "visitorId": visitor, "stream": False, **payload}
    if session:
        body["sessionId"] = session
    return api.post(f"/api/chat?tenant={kit.tenant.public_id}",
                    data={"payload": json.dumps(body)}, files={"file": (name, data, declared)})


def widget_url(kit, attachment_id, session, visitor="v_1") -> str:
    return (f"/api/chat/attachments/{attachment_id}?tenant={kit.tenant.public_id}"
            f"&sessionId={session}&visitorId={visitor}")


def assert_safe_headers(r, *, inline: bool, content_type: str) -> None:
    assert r.headers["content-type"] == content_type
    assert r.headers["x-content-type-options"] == "nosniff"
    assert "sandbox" in r.headers["content-security-policy"]
    assert "default-src 'none'" in r.headers["content-security-policy"]
    disposition = r.headers["content-disposition"]
    assert disposition.startswith("inline;" if inline else "attachment;"), disposition


def test_a_visitor_sends_an_image_alone_and_the_turn_still_answers(api, kit, files_dir):
    r = send_file(api, kit, PNG, "../../etc/My photo<1>.png")
    assert r.status_code == 200, r.text
    reply = r.json()
    assert reply["content"]  # the agent answered a message that is a file alone
    session = reply["sessionId"]
    attachment = Attachment.objects.get()
    assert attachment.conversation_id == uuid.UUID(session) and attachment.tenant == kit.tenant
    assert attachment.livemode and attachment.role == "user" and attachment.author is None
    assert attachment.message.content == "" and attachment.message.role == "user"
    assert attachment.name == "My photo_1_.png"  # no path, no markup
    assert attachment.content_type == "image/png" and attachment.size == len(PNG)
    assert attachment.sha256 == hashlib.sha256(PNG).hexdigest()
    assert [p.read_bytes() for p in stored(files_dir)] == [PNG]
    assert attachment.name not in attachment.storage_key  # the key never holds the visitor's name

    r = api.get(widget_url(kit, attachment.pk, session))
    assert r.status_code == 200 and r.content == PNG
    assert_safe_headers(r, inline=True, content_type="image/png")
    assert r.headers["cross-origin-resource-policy"] == "cross-origin"  # the widget's <img>


def test_a_pdf_is_always_a_download(api, kit):
    r = send_file(api, kit, PDF, "quote.pdf", message="Here is our RFP", declared="application/pdf")
    session = r.json()["sessionId"]
    attachment = Attachment.objects.get()
    assert attachment.message.content == "Here is our RFP"
    r = api.get(widget_url(kit, attachment.pk, session))
    assert r.status_code == 200 and r.content == PDF
    assert_safe_headers(r, inline=False, content_type="application/pdf")
    assert 'filename="quote.pdf"' in r.headers["content-disposition"]


@pytest.mark.parametrize("data,name,declared", [
    (SVG, "logo.svg", "image/svg+xml"),
    (SVG, "logo.png", "image/png"),  # script in an image, whatever its name
    (HTML, "photo.jpg", "image/jpeg"),
    (b"MZ\x90\x00" + b"\x00" * 60, "invoice.pdf", "application/pdf"),
])
def test_a_file_is_accepted_by_its_bytes_not_its_name(api, kit, files_dir, data, name, declared):
    r = send_file(api, kit, data, name, message="see attached", declared=declared)
    assert r.status_code == 400
    assert "PNG, JPEG, GIF, WebP or PDF" in r.json()["error"]
    assert not Attachment.objects.exists() and not Message.objects.exists()
    assert not Conversation.objects.exists() and stored(files_dir) == []


@pytest.mark.parametrize("data,content_type,name", [
    (JPEG, "image/jpeg", "scan.jpeg"), (GIF, "image/gif", "wave.gif"),
    (WEBP, "image/webp", "pic.webp"), (PDF, "application/pdf", "photo.png.pdf"),
])
def test_each_accepted_type_is_read_from_the_bytes(api, kit, data, content_type, name):
    upload_name = "photo.png" if content_type == "application/pdf" else name
    assert send_file(api, kit, data, upload_name, declared="image/png").status_code == 200
    attachment = Attachment.objects.get()
    assert (attachment.content_type, attachment.name) == (content_type, name)


def test_the_size_limit_refuses_and_keeps_nothing(api, kit, files_dir, settings):
    settings.ATTACHMENTS_MAX_BYTES = 2048
    big = PNG + b"\x00" * 4096
    r = send_file(api, kit, big, "big.png")
    assert r.status_code == 400 and "2,048 bytes" in r.json()["error"]
    # Without a Content-Length (chunked), the reading itself stops at the limit.
    boundary = "b0undary"
    body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"payload\"\r\n\r\n"
            + json.dumps({"message": "", "visitorId": "v_1", "stream": False})
            + f"\r\n--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; "
              f"filename=\"big.png\"\r\nContent-Type: image/png\r\n\r\n").encode() + big + (
        f"\r\n--{boundary}--\r\n").encode()

    async def chunks():
        for i in range(0, len(body), 1000):
            yield body[i:i + 1000]

    r = api.post(f"/api/chat?tenant={kit.tenant.public_id}", content=chunks(),
                 headers={"Content-Type": f"multipart/form-data; boundary={boundary}"})
    assert r.status_code == 400 and "2,048 bytes" in r.json()["error"]
    assert "content-length" not in {k.lower() for k in r.request.headers}
    assert not Attachment.objects.exists() and not Message.objects.exists()
    assert stored(files_dir) == []
    # Within it, accepted.
    assert send_file(api, kit, PNG, "small.png").status_code == 200


def test_the_count_limit_per_conversation(api, kit, files_dir, settings):
    settings.ATTACHMENTS_MAX_PER_CONVERSATION = 2
    session = send_file(api, kit, PNG, "1.png").json()["sessionId"]
    assert send_file(api, kit, PDF, "2.pdf", session=session).status_code == 200
    messages = Message.objects.count()
    r = send_file(api, kit, GIF, "3.gif", message="one more", session=session)
    assert r.status_code == 400 and "At most 2 files per conversation" in r.json()["error"]
    assert Attachment.objects.count() == 2 and Message.objects.count() == messages
    assert len(stored(files_dir)) == 2  # the refused one's bytes were removed
    # Another conversation has its own count.
    assert send_file(api, kit, GIF, "3.gif", visitor="v_2").status_code == 200


def test_a_multipart_chat_says_which_part_is_wrong(api, kit):
    r = api.post(f"/api/chat?tenant={kit.tenant.public_id}", data={"payload": "{nope"},
                 files={"file": ("a.png", PNG, "image/png")})
    assert r.status_code == 400 and r.json()["error"].startswith("payload")
    r = api.post(f"/api/chat?tenant={kit.tenant.public_id}",
                 data={"payload": json.dumps({"visitorId": "v_1"})},
                 files={"other": ("a.png", PNG, "image/png")})
    assert r.status_code == 400 and r.json()["error"].startswith("file")
    assert not Message.objects.exists()


def test_a_multipart_chat_may_name_its_tenant_in_its_payload(api, kit, stranger):
    """As a JSON chat may name it in its body (docs/widget.md): the payload is the body."""
    body = {"message": "", "visitorId": "v_1", "stream": False, "tenant": kit.tenant.public_id}
    r = api.post("/api/chat", data={"payload": json.dumps(body)},
                 files={"file": ("a.png", PNG, "image/png")})
    assert r.status_code == 200, r.content
    assert Attachment.objects.get().tenant_id == kit.tenant.pk
    # The query's tenant wins, as for a JSON body.
    r = api.post(f"/api/chat?tenant={stranger.tenant.public_id}",
                 data={"payload": json.dumps({**body, "visitorId": "v_2"})},
                 files={"file": ("b.png", PNG, "image/png")})
    assert r.status_code in (200, 403), r.content
    assert Attachment.objects.filter(tenant=kit.tenant).count() == 1


def test_only_the_sessions_visitor_downloads_from_the_widget(api, kit, stranger):
    session = send_file(api, kit, PNG, "a.png").json()["sessionId"]
    attachment = Attachment.objects.get()
    assert api.get(widget_url(kit, attachment.pk, session)).status_code == 200
    assert api.get(widget_url(kit, attachment.pk, session, visitor="v_2")).status_code == 404
    assert api.get(widget_url(stranger, attachment.pk, session)).status_code == 404
    other = send_file(api, kit, PNG, "b.png", visitor="v_2").json()["sessionId"]
    assert api.get(widget_url(kit, attachment.pk, other, visitor="v_2")).status_code == 404
    assert api.get(widget_url(kit, uuid.uuid4(), session)).json() == {
        "error": "No such file in this visitor's chat."}


def _handed_off_to(kit, rep, session: str) -> Conversation:
    conversation = Conversation.objects.get(pk=session)
    return conversation_take_over(conversation=conversation, user=rep)


def test_a_rep_replies_with_a_file_and_the_visitor_downloads_it(api, kit, rep, files_dir):
    session = send_file(api, kit, PNG, "a.png", message="hi").json()["sessionId"]
    _handed_off_to(kit, rep, session)
    page = signed_in(rep)
    url = f"/dashboard/conversations/{session}/"
    r = page.post(url + "reply/", {"content": "", "file": _upload("terms.pdf", PDF)})
    assert r.status_code == 302
    sent = Attachment.objects.get(role="assistant")
    assert sent.author == rep and sent.message.author == rep and sent.message.content == ""
    assert sent.content_type == "application/pdf" and sent.name == "terms.pdf"
    html = page.get(url).content.decode()
    assert f"/dashboard/conversations/{session}/attachments/{sent.pk}/" in html
    assert 'enctype="multipart/form-data"' in html
    # The visitor's session reads it, as a download.
    r = api.get(widget_url(kit, sent.pk, session))
    assert r.status_code == 200 and r.content == PDF
    assert_safe_headers(r, inline=False, content_type="application/pdf")
    # The live stream's snapshot carries both files with their messages.
    snapshot = _snapshot(kit, session)
    listed = [f for m in snapshot["messages"] for f in m["attachments"]]
    assert [(f["name"], f["contentType"]) for f in listed] == [
        ("a.png", "image/png"), ("terms.pdf", "application/pdf")]


def _upload(name, data):
    from django.core.files.uploadedfile import SimpleUploadedFile

    return SimpleUploadedFile(name, data, content_type="application/octet-stream")


def _snapshot(kit, session):
    from widget.api.legacy import _snapshot as read

    return read(uuid.UUID(session))


def test_a_rep_reply_is_refused_whole_on_a_bad_file(api, kit, rep, files_dir, settings):
    session = send_file(api, kit, PNG, "a.png").json()["sessionId"]
    _handed_off_to(kit, rep, session)
    page = signed_in(rep)
    url = f"/dashboard/conversations/{session}/"
    before = Message.objects.count()
    r = page.post(url + "reply/", {"content": "our logo", "file": _upload("logo.svg", SVG)},
                  follow=True)
    assert "PNG, JPEG, GIF, WebP or PDF" in r.content.decode()
    settings.ATTACHMENTS_MAX_BYTES = 1024
    r = page.post(url + "reply/", {"content": "big", "file": _upload("b.pdf", PDF + b"\0" * 2000)},
                  follow=True)
    assert "1,024 bytes" in r.content.decode()
    assert Message.objects.count() == before and len(stored(files_dir)) == 1


def test_the_dashboard_serves_files_to_its_tenants_staff_only(api, kit, rep, stranger):
    from tenants.services import user_create
    from tests.factories import PASSWORD

    session = send_file(api, kit, PNG, "a.png").json()["sessionId"]
    send_file(api, kit, PDF, "b.pdf", session=session)
    image, pdf = Attachment.objects.order_by("created_at", "name")
    page = signed_in(rep)
    r = page.get(f"/dashboard/conversations/{session}/attachments/{image.pk}/")
    assert r.status_code == 200 and b"".join(r.streaming_content) == PNG
    assert r["Content-Type"] == "image/png" and r["Content-Disposition"].startswith("inline;")
    assert r["X-Content-Type-Options"] == "nosniff" and "sandbox" in r["Content-Security-Policy"]
    r = page.get(f"/dashboard/conversations/{session}/attachments/{pdf.pk}/")
    assert r["Content-Disposition"].startswith("attachment;")
    b"".join(r.streaming_content)
    # Each file opened is in the staff access audit, as the conversation's page is.
    from tenants.models import StaffAccess

    assert StaffAccess.objects.filter(tenant=kit.tenant, user=rep, action="viewed",
                                      conversation_id=session).count() == 2
    other = user_create(tenant=stranger.tenant, email="eve@stranger.test", first_name="Eve",
                        password=PASSWORD)
    r = signed_in(other).get(f"/dashboard/conversations/{session}/attachments/{image.pk}/")
    assert r.status_code == 404
    # A file asked for under another conversation of the same tenant is not found either.
    other_session = send_file(api, kit, PNG, "c.png", visitor="v_9").json()["sessionId"]
    r = page.get(f"/dashboard/conversations/{other_session}/attachments/{image.pk}/")
    assert r.status_code == 404


def test_the_v1_api_lists_and_serves_files_by_tenant_and_mode(api, kit, stranger):
    session = send_file(api, kit, PNG, "a.png").json()["sessionId"]
    attachment = Attachment.objects.get()
    conv = f"conv_{uuid.UUID(session).hex}"
    r = api.get(f"/api/v1/conversations/{conv}/attachments", headers=kit.auth("read"))
    assert r.status_code == 200
    [item] = r.json()["data"]
    assert item == {
        "id": f"att_{attachment.pk.hex}", "messageId": f"msg_{attachment.message_id.hex}",
        "sentBy": "visitor", "name": "a.png", "contentType": "image/png", "size": len(PNG),
        "sha256": hashlib.sha256(PNG).hexdigest(),
        "url": f"/api/v1/conversations/{conv}/attachments/att_{attachment.pk.hex}",
        "createdAt": item["createdAt"]}
    r = api.get(item["url"], headers=kit.auth("read"))
    assert r.status_code == 200 and r.content == PNG
    assert_safe_headers(r, inline=True, content_type="image/png")
    for headers in (kit.auth("read", "test"), stranger.auth("read")):
        assert api.get(item["url"], headers=headers).status_code == 404
        assert api.get(f"/api/v1/conversations/{conv}/attachments",
                       headers=headers).status_code == 404
    r = api.get(f"/api/v1/conversations/{conv}/attachments/att_{uuid.uuid4().hex}",
                headers=kit.auth("read"))
    assert r.status_code == 404 and r.json()["error"]["code"] == "not_found"
    assert api.get(item["url"]).status_code == 401
    # The message objects of the specification stay as it defines them.
    detail = api.get(f"/api/v1/conversations/{conv}", headers=kit.auth("read")).json()
    assert all("attachments" not in m for m in detail["messages"])


def test_deleting_a_conversation_removes_its_files(api, kit, files_dir,
                                                   django_capture_on_commit_callbacks):
    session = send_file(api, kit, PNG, "a.png").json()["sessionId"]
    send_file(api, kit, PDF, "b.pdf", session=session)
    kept = send_file(api, kit, GIF, "c.gif", visitor="v_2").json()["sessionId"]
    assert len(stored(files_dir)) == 3
    with django_capture_on_commit_callbacks(execute=True):
        r = api.delete(f"/api/v1/conversations/conv_{uuid.UUID(session).hex}",
                       headers=kit.auth("admin"))
    assert r.status_code == 204
    assert list(Attachment.objects.values_list("conversation_id", flat=True)) == [uuid.UUID(kept)]
    assert [p.read_bytes() for p in stored(files_dir)] == [GIF]


def test_an_erasure_removes_the_files_and_the_export_lists_them(api, kit, files_dir, eager_celery,
                                                                 django_capture_on_commit_callbacks):
    session = send_file(api, kit, PNG, "me.png", message="I'm dana@fbi.example",
                        visitor="v_dana").json()["sessionId"]
    send_file(api, kit, PDF, "cv.pdf", session=session, visitor="v_dana")
    send_file(api, kit, GIF, "other.gif", visitor="v_other")
    doc = api.get("/api/v1/privacy/exports?visitorId=v_dana", headers=kit.auth()).json()
    [conversation] = doc["conversations"]
    assert [(a["name"], a["contentType"], a["size"], a["sentBy"])
            for a in conversation["attachments"]] == [
        ("me.png", "image/png", len(PNG), "visitor"), ("cv.pdf", "application/pdf", len(PDF), "visitor")]
    assert {k for a in conversation["attachments"] for k in a} == {  # what they are, no bytes
        "id", "messageId", "sentBy", "name", "contentType", "size", "sha256", "createdAt"}
    with django_capture_on_commit_callbacks(execute=True):
        r = api.post("/api/v1/privacy/erasures", json={"visitorId": "v_dana"}, headers=kit.auth())
    assert r.status_code in (201, 202), r.text
    erasure = api.get(f"/api/v1/privacy/erasures/{r.json()['id']}", headers=kit.auth()).json()
    assert erasure["status"] == "completed", erasure
    assert erasure["counts"]["attachments"] == 2
    assert list(Attachment.objects.values_list("name", flat=True)) == ["other.gif"]
    assert [p.read_bytes() for p in stored(files_dir)] == [GIF]


def test_the_file_lists_take_a_fixed_number_of_queries(api, kit, rep):
    """The v1 list, the conversation page and the widget's snapshot read the files in one
    query, however many there are."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    session = send_file(api, kit, PNG, "1.png").json()["sessionId"]
    conv = f"conv_{uuid.UUID(session).hex}"
    page = signed_in(rep)

    def counts():
        found = []
        for read in (lambda: api.get(f"/api/v1/conversations/{conv}/attachments",
                                     headers=kit.auth("read")),
                     lambda: page.get(f"/dashboard/conversations/{session}/"),
                     lambda: _snapshot(kit, session)):
            with CaptureQueriesContext(connection) as queries:
                read()
            found.append(len(queries))
        return found

    counts()  # the first reads write what is written once (the key's last use, a read marker)
    one = counts()
    for name in ("2.png", "3.pdf"):
        send_file(api, kit, PNG if name.endswith("png") else PDF, name, session=session)
    assert counts() == one
