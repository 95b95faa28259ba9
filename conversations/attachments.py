"""Files in a conversation (docs/conversations.md, "Attachments"): reading an upload within its
limit, telling its type from its bytes, and serving it safely.

An upload is read by ``LimitedUploadHandler`` straight to a temporary file, counting bytes as
they come: past ``ATTACHMENTS_MAX_BYTES`` the request is refused there and then, so an oversize
body is never held in memory or kept. The type is what the first bytes say (PNG, JPEG, GIF, WebP,
PDF), whatever the name or the browser's declared type; anything else (SVG, HTML, an executable
renamed ``.png``) is refused. Served, an image is inline with its own type; a PDF is always a
download; both with ``nosniff`` and a policy that runs nothing.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any
from urllib.parse import quote

from django.conf import settings
from django.core.files.storage import Storage, storages
from django.core.files.uploadedfile import UploadedFile
from django.core.files.uploadhandler import StopFutureHandlers, TemporaryFileUploadHandler
from django.http import FileResponse

from core.errors import FieldError, InvalidRequest, Unprocessable

# Type -> the extension the stored name gets. Nothing else is accepted.
EXTENSIONS = {"image/png": ".png", "image/jpeg": ".jpg", "image/gif": ".gif",
              "image/webp": ".webp", "application/pdf": ".pdf"}
ACCEPTED = "PNG, JPEG, GIF, WebP or PDF"
# What a browser's file picker is offered (``accept``): the same types.
ACCEPT_ATTRIBUTE = ",".join([*EXTENSIONS, ".png", ".jpg", ".jpeg", ".gif", ".webp", ".pdf"])
# Room for the other form fields and the multipart framing around the file.
BODY_SLACK = 64 * 1024
# The policy of a served file: nothing runs, nothing loads, even if a browser rendered it.
FILE_POLICY = "default-src 'none'; img-src 'self'; style-src 'unsafe-inline'; sandbox"


def sniff(head: bytes) -> str | None:
    """The type the first bytes of a file say, among the accepted ones; None for any other."""
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head[:6] in (b"GIF87a", b"GIF89a"):
        return "image/gif"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    if head.startswith(b"%PDF-"):
        return "application/pdf"
    return None


_UNSAFE = re.compile(r"[^\w .()+,=@-]+")


def clean_name(raw: str, content_type: str) -> str:
    """The original name as it may be shown and sent back in a header: its last path part, no
    control or unusual characters, at most 100 characters, with the extension of its real type
    (``invoice.pdf.exe`` read as a PDF is ``invoice.pdf.exe.pdf``)."""
    name = PurePath(unicodedata.normalize("NFC", raw or "").replace("\\", "/")).name
    name = _UNSAFE.sub("_", "".join(c for c in name if unicodedata.category(c)[0] != "C"))
    name = name.strip(" ._") or "file"
    extension = EXTENSIONS[content_type]
    stem, suffix = (name[: -len(PurePath(name).suffix)], PurePath(name).suffix.lower()
                    ) if PurePath(name).suffix else (name, "")
    if suffix == extension or (suffix == ".jpeg" and extension == ".jpg"):
        extension = suffix
    else:
        stem = name
    return stem[: 100 - len(extension)] + extension


class AttachmentTooLarge(Unprocessable):
    """The upload passed the size limit while it was read (v1 422, legacy and dashboard 400)."""

    def __init__(self, field: str = "file"):
        limit = settings.ATTACHMENTS_MAX_BYTES
        super().__init__("This file is too large.",
                         details=[FieldError(field, "too_long", f"At most {limit:,} bytes.")])


class LimitedUploadHandler(TemporaryFileUploadHandler):
    """Writes the upload to a temporary file, refusing it once it passes the limit (a declared
    Content-Length past it is refused before a byte is read)."""

    def handle_raw_input(self, input_data, META, content_length, boundary, encoding=None):
        if content_length and content_length > settings.ATTACHMENTS_MAX_BYTES + BODY_SLACK:
            raise AttachmentTooLarge()
        return None

    def new_file(self, *args, **kwargs):
        super().new_file(*args, **kwargs)
        raise StopFutureHandlers()

    def receive_data_chunk(self, raw_data, start):
        if start + len(raw_data) > settings.ATTACHMENTS_MAX_BYTES:
            self.file.close()
            raise AttachmentTooLarge()
        return super().receive_data_chunk(raw_data, start)


def limit_uploads(request) -> None:
    """Reads this request's files with ``LimitedUploadHandler`` only (before its body is read)."""
    request.upload_handlers = [LimitedUploadHandler(request)]


@dataclass(frozen=True)
class Upload:
    """An upload read and accepted: its bytes still in the temporary file."""

    file: UploadedFile
    name: str
    content_type: str
    size: int
    sha256: str


def read_upload(upload: UploadedFile, *, field: str = "file") -> Upload:
    """Checks an uploaded file (size, type by its bytes) and hashes it, a chunk at a time.
    Raises the surface-neutral errors with ``field`` as the detail's field."""
    limit = settings.ATTACHMENTS_MAX_BYTES
    if upload.size > limit:  # a handler other than ours read it (a test client, say)
        raise AttachmentTooLarge(field)
    if upload.size == 0:
        raise InvalidRequest("The file is empty.",
                             details=[FieldError(field, "required", "The file is empty.")])
    upload.seek(0)
    content_type = sniff(upload.read(16))
    if content_type is None:
        raise Unprocessable(f"Only {ACCEPTED} files can be sent.", details=[FieldError(
            field, "invalid_format", "Read from its content, this file is none of these.")])
    upload.seek(0)
    digest = hashlib.sha256()
    for chunk in upload.chunks():
        digest.update(chunk)
    upload.seek(0)
    return Upload(file=upload, name=clean_name(upload.name or "", content_type),
                  content_type=content_type, size=upload.size, sha256=digest.hexdigest())


def attachment_payload(attachment) -> dict[str, Any]:
    """A file as the live streams and the widget show it (legacy surface: a UUID)."""
    return {"id": str(attachment.pk), "name": attachment.name,
            "contentType": attachment.content_type, "size": attachment.size}


def storage() -> Storage:
    return storages["attachments"]


def file_response(attachment, *, cross_origin: bool = False) -> FileResponse:
    """The file: an image inline with its type, anything else as a download; never sniffed,
    never run. ``cross_origin``: a customer's page may show it (the widget's ``<img>``)."""
    response = FileResponse(storage().open(attachment.storage_key, "rb"),
                            content_type=attachment.content_type)
    disposition = "inline" if attachment.is_image else "attachment"
    ascii_name = attachment.name.encode("ascii", "replace").decode().replace('"', "_")
    response["Content-Disposition"] = (f'{disposition}; filename="{ascii_name}"; '
                                       f"filename*=UTF-8''{quote(attachment.name)}")
    response["Content-Length"] = str(attachment.size)
    response["X-Content-Type-Options"] = "nosniff"
    response["Content-Security-Policy"] = FILE_POLICY
    response["Cache-Control"] = "no-store"  # as every answer with tenant data (docs/security.md)
    response["Referrer-Policy"] = "no-referrer"
    response["Cross-Origin-Resource-Policy"] = "cross-origin" if cross_origin else "same-origin"
    return response
