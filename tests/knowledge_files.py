"""Real documents for the knowledge-base tests, written here: PDFs by hand (a minimal valid PDF
with Helvetica text and a correct cross-reference table), DOCX with python-docx, and the
hostile ones — damaged, encrypted, a decompression bomb, deep nesting, a zip bomb, a file that
takes minutes to read."""

from __future__ import annotations

import io
import zipfile
import zlib
from functools import lru_cache

import docx
from pypdf import PdfReader, PdfWriter


def _escape(text: str) -> bytes:
    raw = text.encode("cp1252", errors="replace")
    return raw.replace(b"\\", b"\\\\").replace(b"(", b"\\(").replace(b")", b"\\)")


def _content(lines: list[str]) -> bytes:
    """A page's content stream: one line of text per entry, an empty entry a blank line."""
    out = [b"BT /F1 11 Tf 14 TL 72 760 Td"]
    for line in lines:
        out.append(b"(" + _escape(line) + b") Tj T*" if line else b"T*")
    out.append(b"ET")
    return b"\n".join(out)


def build_pdf(page_streams: list[bytes], *, compress: bool = False) -> bytes:
    """A PDF whose pages have the given content streams (already written), Helvetica as F1."""
    first_page = 4
    kids = " ".join(f"{first_page + 2 * i} 0 R" for i in range(len(page_streams))).encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [" + kids + b"] /Count " + str(len(page_streams)).encode() + b" >>",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
    ]
    for i, stream in enumerate(page_streams):
        content_ref = first_page + 2 * i + 1
        objects.append(b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
                       b"/Resources << /Font << /F1 3 0 R >> >> /Contents "
                       + str(content_ref).encode() + b" 0 R >>")
        body = zlib.compress(stream, 9) if compress else stream
        flt = b"/Filter /FlateDecode " if compress else b""
        objects.append(b"<< " + flt + b"/Length " + str(len(body)).encode() + b" >>\nstream\n"
                       + body + b"\nendstream")
    return _assemble(objects)


def make_pdf(pages: list[list[str]], *, compress: bool = False) -> bytes:
    """A PDF with one list of text lines per page."""
    return build_pdf([_content(lines) for lines in pages], compress=compress)


def encrypted_pdf(pages: list[list[str]], password: str = "s3cret") -> bytes:
    reader = PdfReader(io.BytesIO(make_pdf(pages)))
    writer = PdfWriter()
    for page in reader.pages:
        writer.add_page(page)
    writer.encrypt(user_password=password, owner_password=password + "-owner")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def restricted_pdf(pages: list[list[str]]) -> bytes:
    """Encrypted with an empty user password (only permissions restricted): opens fine."""
    reader = PdfReader(io.BytesIO(make_pdf(pages)))
    writer = PdfWriter()
    for page in reader.pages:
        writer.add_page(page)
    writer.encrypt(user_password="", owner_password="owner-only")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def corrupt_pdf() -> bytes:
    """The header of a PDF and then noise: no objects, no cross-reference table."""
    good = make_pdf([["Hello"]])
    return good[:20] + bytes(range(256)) * 8


def _deflate_repeated(block: bytes, times: int) -> bytes:
    """zlib data of ``block`` repeated ``times`` times, without compressing it ``times`` times:
    after a full flush deflate starts afresh, so every block compresses to the same bytes."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    unit = compressor.compress(block) + compressor.flush(zlib.Z_FULL_FLUSH)
    checksum = 1
    for _ in range(times):
        checksum = zlib.adler32(block, checksum)
    return b"\x78\xda" + unit * times + b"\x03\x00" + checksum.to_bytes(4, "big")


@lru_cache(maxsize=1)
def bomb_pdf(expanded_bytes: int = 400 * 1024 * 1024) -> bytes:
    """A page whose content stream is a few hundred KB compressed and ``expanded_bytes`` when
    inflated: a decompression bomb."""
    body = _deflate_repeated(b" " * (1024 * 1024), expanded_bytes // (1024 * 1024))
    stream = (b"<< /Filter /FlateDecode /Length " + str(len(body)).encode() + b" >>\nstream\n"
              + body + b"\nendstream")
    return _with_extra_stream(stream)


def _with_extra_stream(stream: bytes) -> bytes:
    page = (b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            b"/Resources << /Font << /F1 3 0 R >> >> /Contents 5 0 R >>")
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [4 0 R] /Count 1 >>",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        page,
        stream,
    ]
    return _assemble(objects)


def _assemble(objects: list[bytes]) -> bytes:
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += str(number).encode() + b" 0 obj\n" + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 " + str(len(objects) + 1).encode() + b"\n0000000000 65535 f \n"
    for offset in offsets:
        out += f"{offset:010d} 00000 n \n".encode()
    out += (b"trailer\n<< /Size " + str(len(objects) + 1).encode() + b" /Root 1 0 R >>\n"
            b"startxref\n" + str(xref).encode() + b"\n%%EOF\n")
    return bytes(out)


def nested_pdf(depth: int = 200_000) -> bytes:
    """A catalog holding an array nested ``depth`` deep: a parser that recurses per level
    runs out of stack."""
    nest = b"[" * depth + b"]" * depth
    return _assemble([
        b"<< /Type /Catalog /Pages 2 0 R /Nest " + nest + b" >>",
        b"<< /Type /Pages /Kids [4 0 R] /Count 1 >>",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
        b"/Resources << /Font << /F1 3 0 R >> >> /Contents 5 0 R >>",
        b"<< /Length 34 >>\nstream\nBT /F1 11 Tf 72 760 Td (x) Tj ET\nendstream",
    ])


def slow_pdf(operators: int = 6_000_000) -> bytes:
    """A page of millions of tiny text-showing operators, compressed to a small file: reading
    it takes minutes."""
    compressor = zlib.compressobj(1)
    chunk = b"(ab) Tj " * 100_000
    body = b"".join(compressor.compress(b"BT /F1 11 Tf 72 760 Td " if i == 0 else b"")
                    + compressor.compress(chunk) for i in range(operators // 100_000))
    body += compressor.compress(b" ET") + compressor.flush()
    stream = (b"<< /Filter /FlateDecode /Length " + str(len(body)).encode() + b" >>\nstream\n"
              + body + b"\nendstream")
    return _with_extra_stream(stream)


def make_docx(blocks: list[tuple[str, str]], *, table: list[list[str]] | None = None) -> bytes:
    """A DOCX from (style, text) blocks: style "title", "h1".."h3" or "p"."""
    document = docx.Document()
    for style, text in blocks:
        if style == "title":
            document.add_heading(text, level=0)
        elif style.startswith("h"):
            document.add_heading(text, level=int(style[1:]))
        else:
            document.add_paragraph(text)
    if table:
        grid = document.add_table(rows=len(table), cols=len(table[0]))
        for r, row in enumerate(table):
            for c, value in enumerate(row):
                grid.cell(r, c).text = value
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


@lru_cache(maxsize=1)
def zip_bomb_docx(expanded_bytes: int = 300 * 1024 * 1024) -> bytes:
    """A DOCX-shaped zip whose document part inflates to ``expanded_bytes``."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        archive.writestr("[Content_Types].xml", "<Types/>")
        with archive.open("word/document.xml", "w", force_zip64=True) as member:
            block = b" " * (1024 * 1024)
            for _ in range(expanded_bytes // len(block)):
                member.write(block)
    return out.getvalue()
