"""Reading an upload, the same on both surfaces: a JSON (or form) body whose ``content`` is the
text — or, for ``pdf`` and ``docx``, the file in base64 — or a ``multipart/form-data`` body with
the file in a ``file`` field (docs/knowledge.md, "Uploading").
"""

from __future__ import annotations

import base64
import re
from pathlib import PurePath
from typing import Any

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.core.validators import RegexValidator
from drf_spectacular.utils import PolymorphicProxySerializer, extend_schema_field
from rest_framework import serializers
from rest_framework.exceptions import ErrorDetail, ValidationError
from rest_framework.parsers import FormParser, MultiPartParser

from config.api.fields import NOT_BLANK_TEXT, LanguageField, V1Input
from config.api.input import JSONParser
from core.errors import FieldError, InvalidRequest, Unprocessable

from ..models import BINARY_TYPES, DOCUMENT_TYPES

PARSERS = [JSONParser, MultiPartParser, FormParser]

_EXTENSIONS = {".pdf": "pdf", ".docx": "docx", ".md": "markdown", ".markdown": "markdown",
               ".txt": "text", ".text": "text"}
_DATA_URL = re.compile(r"^data:[\w.+/-]*(?:;[\w=.+-]+)*;base64,", re.I)
# Room for the form fields and multipart framing around the file.
_BODY_SLACK = 64 * 1024


_URL_HELP = "Public address of the document: replies that use it link to it."
_LANGUAGE_HELP = "ISO 639-1 code of the text (case-insensitive); detected when omitted."


class _Common(serializers.Serializer):
    title = serializers.CharField(max_length=200, required=False, help_text=(
        "1 to 200 characters. Required with content; with a file, defaults to its name."))
    type = serializers.ChoiceField(choices=DOCUMENT_TYPES, required=False, help_text=(
        "text, markdown, faq, pdf or docx. Default: from the file's extension or first bytes; "
        "text for content."))
    url = serializers.URLField(max_length=2000, required=False, allow_blank=True, allow_null=True,
                               help_text=_URL_HELP)
    language = LanguageField(required=False, allow_blank=True, allow_null=True,
                             help_text=_LANGUAGE_HELP)


# Base64 in either alphabet, padded or not (nothing after the padding): what
# ``_decode_base64`` reads once a data: URL prefix and whitespace are dropped. The schema states
# the standard alphabet (``_BASE64``); the description mentions the rest.
_BASE64_OF = "(?:[{0}]{{4}})*(?:[{0}]{{2}}(?:==)?|[{0}]{{3}}=?)?"
_STANDARD = re.compile(_BASE64_OF.format("A-Za-z0-9+/"))
_URLSAFE = re.compile(_BASE64_OF.format("A-Za-z0-9_-"))
_BASE64 = RegexValidator(f"^{_STANDARD.pattern}$")


class TextContentInput(_Common):
    """A text, Markdown or FAQ document as JSON: ``content`` is the text."""

    title = serializers.CharField(max_length=200, help_text="1 to 200 characters.")
    type = serializers.ChoiceField(choices=[t for t in DOCUMENT_TYPES if t not in BINARY_TYPES],
                                   required=False, help_text="Default: text.")
    content = serializers.CharField(trim_whitespace=False,
                                    validators=[RegexValidator(NOT_BLANK_TEXT)],
                                    help_text="The text, not blank.")


class BinaryContentInput(_Common):
    """A PDF or DOCX document as JSON: ``content`` is the file in base64."""

    title = serializers.CharField(max_length=200, help_text="1 to 200 characters.")
    type = serializers.ChoiceField(choices=list(BINARY_TYPES))
    content = serializers.CharField(trim_whitespace=False, validators=[_BASE64], help_text=(
        "The file in base64 (a data: URL prefix, line breaks and the URL-safe alphabet are "
        "read too). A file that is not a PDF or DOCX is 422."))


# The JSON body, for the schema: one of the two (the view reads it with DocumentUploadInput).
DocumentContentInput = PolymorphicProxySerializer(
    component_name="DocumentContentInput", serializers=[TextContentInput, BinaryContentInput],
    resource_type_field_name=None)


@extend_schema_field({"type": "string", "format": "binary", "minLength": 1})
class _FileSchema(serializers.FileField):
    """A file of at least one byte (an empty one is refused by the service)."""


class DocumentFileInput(_Common):
    """The multipart/form-data body: the file itself. (A form field is text: none is null.)"""

    url = serializers.URLField(max_length=2000, required=False, allow_blank=True,
                               help_text=_URL_HELP)
    language = LanguageField(required=False, allow_blank=True, help_text=_LANGUAGE_HELP)

    file = _FileSchema(allow_empty_file=True, help_text="The document file.")


class DocumentUploadInput(_Common):
    """What the legacy view validates: either ``content`` or ``file``."""

    content = serializers.CharField(trim_whitespace=False, required=False)
    file = serializers.FileField(required=False, allow_empty_file=True)

    def validate(self, attrs):
        has_content, has_file = "content" in attrs, "file" in attrs
        if has_content == has_file:
            raise ValidationError({"content": [ErrorDetail(
                "Send the document either as content (text, or base64 for pdf and docx) or as "
                "a multipart file field, exactly one of them.",
                code="invalid_format" if has_content else "required")]})
        if has_content and not attrs.get("title", "").strip():
            raise ValidationError({"title": [ErrorDetail("This field is required.", code="required")]})
        return attrs


class V1DocumentUploadInput(V1Input, DocumentUploadInput):
    """What the v1 view validates: the same, a JSON body typed strictly."""


def check_body_size(request) -> None:
    """Refuses an oversize upload from its Content-Length, before the body is parsed."""
    try:
        length = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return
    limit = settings.KNOWLEDGE_MAX_DOCUMENT_BYTES
    multipart = request.content_type.startswith("multipart/")
    allowed = limit + _BODY_SLACK if multipart else (limit * 4 + 2) // 3 + _BODY_SLACK
    if length > allowed:
        field = "file" if multipart else "content"
        raise Unprocessable(f"The upload is {length:,} bytes; documents are limited to "
                            f"{limit:,} bytes.",
                            details=[FieldError(field, "too_long", f"At most {limit:,} bytes.")])


def _infer_type(filename: str, data: bytes) -> str:
    by_name = _EXTENSIONS.get(PurePath(filename).suffix.lower())
    if by_name:
        return by_name
    if b"%PDF-" in data[:1024]:
        return "pdf"
    if data.startswith(b"PK\x03\x04"):
        return "docx"
    return "text"


def _decode_base64(content: str) -> bytes:
    raw = _DATA_URL.sub("", content.strip(), count=1)
    raw = re.sub(r"\s+", "", raw)
    urlsafe = "-" in raw or "_" in raw
    if not (_URLSAFE if urlsafe else _STANDARD).fullmatch(raw):
        raise InvalidRequest("content is not valid base64.", details=[FieldError(
            "content", "invalid_format",
            "For pdf and docx, content is the file in base64.")])
    decode = base64.urlsafe_b64decode if urlsafe else base64.b64decode
    return decode(raw + "=" * (-len(raw) % 4))  # well formed: it decodes


def file_values(upload: UploadedFile, *, title: str = "", type: str = "") -> dict[str, Any]:
    """The service arguments of ``document_create`` for an uploaded file: refuses an oversize
    file before reading it, takes the title from the file name and the type from the name or
    the first bytes when not given. Shared by the API and the dashboard's upload form."""
    limit = settings.KNOWLEDGE_MAX_DOCUMENT_BYTES
    if upload.size > limit:
        raise Unprocessable(f"The file is {upload.size:,} bytes; the limit is {limit:,} bytes.",
                            details=[FieldError("file", "too_long", f"At most {limit:,} bytes.")])
    data = upload.read()
    filename = PurePath(upload.name or "").name
    title = title.strip() or PurePath(filename).stem or filename
    return {"title": title, "type": type or _infer_type(filename, data), "data": data,
            "filename": filename, "source_field": "file"}


def upload_values(request, body_class: type[DocumentUploadInput]) -> dict[str, Any]:
    """The service arguments of ``document_create`` from a request validated by ``body_class``
    (the surface's)."""
    check_body_size(request)
    body = body_class(data=request.data)
    body.is_valid(raise_exception=True)
    values = body.validated_data
    common = {"url": values.get("url") or "", "language": (values.get("language") or "").lower()}
    upload = values.get("file")
    if upload is not None:
        return {**file_values(upload, title=values.get("title") or "",
                              type=values.get("type") or ""), **common}
    content: str = values["content"]
    doc_type = values.get("type") or "text"
    data = _decode_base64(content) if doc_type in BINARY_TYPES else content.encode("utf-8")
    return {"title": values["title"], "type": doc_type, "data": data, "filename": "",
            "source_field": "content", **common}
