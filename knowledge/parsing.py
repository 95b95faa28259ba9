"""Turning an uploaded document into normalised text sections.

This module knows nothing of Django: it runs inside a short-lived child process
(``python -m knowledge.parsing``, driven by :func:`knowledge.extraction.extract`) with a time and
memory limit, so that a hostile file — a decompression bomb, a deeply nested PDF, a zip bomb —
can at worst kill that child, never the Celery worker. Its result is a list of
:class:`Section` (a heading and its paragraphs) or a :class:`ParseFailure` with a reason a tenant
can read.

Types (docs/knowledge.md): ``text``, ``markdown``, ``faq`` (UTF-8 text), ``pdf`` (pypdf),
``docx`` (python-docx).
"""

from __future__ import annotations

import io
import json
import re
import sys
import unicodedata
import zipfile
from dataclasses import asdict, dataclass, field

TEXT_TYPES = ("text", "markdown", "faq")
BINARY_TYPES = ("pdf", "docx")

# A DOCX is a zip of XML parts; these bound what unpacking it may cost before python-docx reads
# it (a zip bomb declares a small archive that inflates to gigabytes).
DOCX_MAX_UNCOMPRESSED_BYTES = 200 * 1024 * 1024
DOCX_MAX_MEMBERS = 5_000


class ParseFailure(Exception):
    """The document cannot be indexed; ``reason`` is shown to the tenant as ``failureReason``."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


@dataclass
class Section:
    heading: str
    paragraphs: list[str] = field(default_factory=list)


@dataclass
class Parsed:
    sections: list[Section]
    pages: int | None = None

    @property
    def characters(self) -> int:
        return sum(len(p) for s in self.sections for p in s.paragraphs)


# --- normalisation --------------------------------------------------------------------------

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\u200b\u200c\u200d\u2060\ufeff\u00ad]")
# "infor-\nmation" is one word broken by a line end; "well-\nknown" keeps its hyphen only if
# the next line starts with a capital, which a broken word never does.
_HYPHENATED = re.compile(r"(\w)[-\u2010\u2011]\n[ \t]*([a-zà-ÿ])")
_SPACES = re.compile(r"[ \t\u00a0\u2000-\u200a\u202f\u205f\u3000]+")
# A table's row as the parsers write it: its cells joined by " | ".
TABLE_ROW = re.compile(r"\S \| \S")
_LIST_ITEM = re.compile(r"^\s*(?:[-*+•‣◦▪]\s|\d{1,3}[.)]\s|[a-z][.)]\s)")


def normalise(text: str) -> str:
    """NFKC (ligatures, full-width forms), one kind of line end, no control characters, words
    broken across lines joined, runs of spaces collapsed, trailing spaces gone."""
    text = unicodedata.normalize("NFKC", text)
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\u2028", "\n").replace(
        "\u2029", "\n\n")
    text = text.replace("\t", " ")
    text = _CONTROL.sub("", text)
    text = _HYPHENATED.sub(r"\1\2", text)
    text = _SPACES.sub(" ", text)
    return "\n".join(line.strip() for line in text.split("\n"))


def paragraphs(text: str) -> list[str]:
    """Paragraphs of normalised text: blocks between blank lines, with hard-wrapped lines joined
    (list items and a table's rows keep their own lines)."""
    out: list[str] = []
    for block in re.split(r"\n\s*\n", text):
        lines = [line for line in block.split("\n") if line]
        if not lines:
            continue
        joined = lines[0]
        for previous, line in zip(lines, lines[1:], strict=False):
            own_line = _LIST_ITEM.match(line) or TABLE_ROW.search(line) or TABLE_ROW.search(previous)
            joined += ("\n" if own_line else " ") + line
        out.append(joined.strip())
    return [p for p in out if p]


# --- text, markdown, faq --------------------------------------------------------------------

def decode_text(data: bytes) -> str:
    """UTF-8 (with or without a byte-order mark); anything else is refused, not guessed."""
    if data.startswith(b"\xff\xfe") or data.startswith(b"\xfe\xff"):
        try:
            return data.decode("utf-16")
        except UnicodeDecodeError:
            pass
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ParseFailure("The text is not valid UTF-8.") from None


def parse_text(text: str) -> list[Section]:
    return [Section("", paragraphs(normalise(text)))]


_ATX = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
_SETEXT = re.compile(r"^(=+|-+)\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")
_FRONT_MATTER = re.compile(r"\A---\n.*?\n---\n", re.S)
_INLINE = [
    (re.compile(r"!\[([^\]]*)\]\([^)]*\)"), r"\1"),  # images: their alt text
    (re.compile(r"\[([^\]]+)\]\([^)]*\)"), r"\1"),  # links: their text
    (re.compile(r"\[([^\]]+)\]\[[^\]]*\]"), r"\1"),  # reference links
    (re.compile(r"^\s*\[[^\]]+\]:\s*\S+.*$", re.M), ""),  # link definitions
    (re.compile(r"<[^>\n]+>"), ""),  # inline HTML tags
    (re.compile(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1"), r"\2"),  # bold
    (re.compile(r"(?<![\w*])([*_])(?=\S)(.+?)(?<=\S)\1(?![\w*])"), r"\2"),  # italics
    (re.compile(r"~~(.+?)~~"), r"\1"),  # strike-through
    (re.compile(r"`([^`\n]+)`"), r"\1"),  # inline code
    (re.compile(r"^\s*>\s?", re.M), ""),  # block quotes
    (re.compile(r"^\s*(?:[-*_]\s*){3,}$", re.M), ""),  # horizontal rules
    # table rules ([ \t], not \s: a match must not swallow the line break around it)
    (re.compile(r"^[ \t]*\|?[ \t]*:?-{2,}:?[ \t]*(?:\|[ \t]*:?-{2,}:?[ \t]*)*\|?[ \t]*$", re.M), ""),
]


def _strip_inline(text: str) -> str:
    for pattern, repl in _INLINE:
        text = pattern.sub(repl, text)
    text = re.sub(r"^[ \t]*\|(.*)\|[ \t]*$",
                  lambda m: " | ".join(c.strip() for c in m.group(1).split("|")), text, flags=re.M)
    return text


class _Outline:
    """The sections of a document read from top to bottom: a heading takes the place of the
    headings of its level and below, and the text after it is filed under the path to it."""

    def __init__(self) -> None:
        self.sections: list[Section] = []
        self.path: list[tuple[int, str]] = []

    def add(self, paras: list[str]) -> None:
        if paras:
            self.sections.append(Section(" › ".join(title for _, title in self.path), paras))

    def open(self, level: int, title: str) -> None:
        while self.path and self.path[-1][0] >= level:
            self.path.pop()
        self.path.append((level, title))


def _is_setext_underline(line: str, body: list[str]) -> bool:
    """Whether ``line`` (``===`` or ``---``) makes the line above it, a line of text, a heading."""
    return bool(_SETEXT.match(line) and body and body[-1].strip() and not _LIST_ITEM.match(body[-1]))


def parse_markdown(text: str) -> list[Section]:
    """Sections along the headings (ATX ``#`` and setext underlines); the heading path
    ("Pricing › Enterprise") is each section's heading. Code blocks stay as text."""
    text = normalise(text)
    text = _FRONT_MATTER.sub("", text)
    outline = _Outline()
    body: list[str] = []
    in_fence = False

    def flush() -> None:
        outline.add(paragraphs(_strip_inline("\n".join(body))))
        body.clear()

    def open_heading(level: int, title: str) -> None:
        flush()
        outline.open(level, _strip_inline(title).strip()[:200])

    for line in text.split("\n"):
        if _FENCE.match(line):
            in_fence = not in_fence
            body.append("")  # a fence is a paragraph border
        elif in_fence:
            body.append(line)
        elif atx := _ATX.match(line):
            open_heading(len(atx.group(1)), atx.group(2))
        elif _is_setext_underline(line, body):
            title = body.pop()
            open_heading(1 if line.startswith("=") else 2, title)
        else:
            body.append(line)
    flush()
    return outline.sections


_QUESTION = re.compile(r"^\s*(?:Q|Question|Frage|F|P|Pregunta)\s*[:.)]\s*(.*)$", re.I)
_ANSWER = re.compile(r"^\s*(?:A|Answer|Antwort|R|Réponse|Reponse|Respuesta)\s*[:.)]\s*(.*)$", re.I)


def parse_faq(text: str) -> list[Section]:
    """One section per question, the question as its heading and the answer as its text.

    Accepted layouts: ``Q:``/``A:`` lines (also Question/Answer, Frage/Antwort, ...); else
    Markdown headings as questions; else blocks between blank lines whose first line is the
    question.
    """
    text = normalise(text)
    lines = text.split("\n")
    if any(_QUESTION.match(line) for line in lines) and any(_ANSWER.match(line) for line in lines):
        return _faq_pairs(lines)
    if any(_ATX.match(line) for line in lines):
        return parse_markdown(text)
    return _faq_blocks(text)


def _faq_pairs(lines: list[str]) -> list[Section]:
    """``Q:``/``A:`` layout: a question runs until its answer line, the answer until the next
    question; text before the first question is text without a heading."""
    sections: list[Section] = []
    question: list[str] = []
    answer: list[str] = []
    mode = None
    for line in lines:
        if m := _QUESTION.match(line):
            sections.append(_faq_section(question, answer))
            question, answer = [m.group(1)], []
            mode = "q"
        elif (m := _ANSWER.match(line)) and mode == "q":
            answer.append(m.group(1))
            mode = "a"
        elif mode == "q":
            question.append(line)
        else:
            answer.append(line)
    sections.append(_faq_section(question, answer))
    return [s for s in sections if s.paragraphs]


def _faq_section(question: list[str], answer: list[str]) -> Section:
    """A question with its answer; either one alone is text without a heading."""
    q = " ".join(x for x in question if x).strip()
    a = "\n".join(answer).strip()
    if q and a:
        return Section(q[:300], paragraphs(_strip_inline(a)))
    return Section("", paragraphs(_strip_inline(q + "\n\n" + a)))


def _faq_blocks(text: str) -> list[Section]:
    """Blocks between blank lines: the first line is the question, the rest its answer; a block
    of one line is text without a heading."""
    sections = []
    for block in re.split(r"\n\s*\n", text):
        block_lines = [line for line in block.split("\n") if line.strip()]
        if len(block_lines) == 1:
            sections.append(Section("", paragraphs(_strip_inline(block_lines[0]))))
        elif block_lines:
            sections.append(Section(_strip_inline(block_lines[0])[:300],
                                    paragraphs(_strip_inline("\n".join(block_lines[1:])))))
    return [s for s in sections if s.paragraphs]


# --- pdf ------------------------------------------------------------------------------------

def _pdf_page_paragraphs(text: str) -> list[str]:
    """A page's text as paragraphs. PDF text has a line break at every layout line; a paragraph
    ends at a blank line, or at a short line that ends a sentence."""
    lines = normalise(text).split("\n")
    typical = _typical_width(lines)
    if typical is None:
        return []
    out: list[str] = []
    current: list[str] = []
    for line in lines:
        if not line:
            _end_paragraph(out, current)
            continue
        if _LIST_ITEM.match(line):
            _end_paragraph(out, current)
        current.append(line)
        if line[-1] in ".!?:" and len(line) < 0.8 * typical:
            _end_paragraph(out, current)
    _end_paragraph(out, current)
    return [p.strip() for p in out if p.strip()]


def _typical_width(lines: list[str]) -> int | None:
    """The width of a full line of the page: the 90th percentile of the widths of its lines
    (the widest of three or fewer); None when the page has no text."""
    widths = sorted(len(line) for line in lines if line)
    if not widths:
        return None
    return widths[int(len(widths) * 0.9)] if len(widths) > 3 else widths[-1]


def _end_paragraph(out: list[str], current: list[str]) -> None:
    """Moves the lines gathered in ``current`` to ``out`` as one paragraph."""
    if current:
        out.append(" ".join(current))
        current.clear()


_PDF_PASSWORD = "The PDF is password-protected; upload it without a password."


def parse_pdf(data: bytes, *, max_pages: int, max_characters: int) -> Parsed:
    if b"%PDF-" not in data[:1024]:
        raise ParseFailure("The file is not a PDF.")
    try:
        reader = _open_pdf(data)
        count = len(reader.pages)
        if count > max_pages:
            raise ParseFailure(f"The PDF has {count} pages; the limit is {max_pages}.")
        sections = _pdf_sections(reader, max_characters=max_characters)
    except ParseFailure:
        raise
    except Exception as exc:  # an untrusted file: whatever breaks, it cannot be read
        raise _pdf_failure(exc) from None
    return Parsed(sections=sections, pages=count)


def _open_pdf(data: bytes):
    from pypdf import PdfReader

    reader = PdfReader(io.BytesIO(data))
    # Many PDFs are "encrypted" with an empty user password (only printing or copying is
    # restricted); those open. A real password cannot be given, so they fail.
    if reader.is_encrypted and not _opens_without_password(reader):
        raise ParseFailure(_PDF_PASSWORD)
    return reader


def _opens_without_password(reader) -> bool:
    try:
        return bool(reader.decrypt(""))
    except Exception:
        return False


def _pdf_sections(reader, *, max_characters: int) -> list[Section]:
    """One section per page: chunks follow the pages and never straddle two."""
    sections: list[Section] = []
    total = 0
    for page in reader.pages:
        paras = _pdf_page_paragraphs(page.extract_text() or "")
        total += sum(len(p) for p in paras)
        if total > max_characters:
            raise ParseFailure(f"The text is longer than the limit of {max_characters:,} "
                               "characters.")
        if paras:
            sections.append(Section("", paras))
    return sections


def _pdf_failure(exc: Exception) -> ParseFailure:
    """What the tenant is told when reading their PDF raised ``exc``."""
    from pypdf.errors import FileNotDecryptedError

    if isinstance(exc, FileNotDecryptedError):
        return ParseFailure(_PDF_PASSWORD)
    if isinstance(exc, RecursionError):
        return ParseFailure("The PDF is nested too deeply to be read.")
    if isinstance(exc, MemoryError):
        return ParseFailure("The PDF needs too much memory to be read (a compressed stream "
                            "expands beyond the limit).")
    name = type(exc).__name__
    if name == "LimitReachedError":
        if "decompress" in str(exc).lower():
            return ParseFailure("The PDF expands beyond the size limit when decompressed.")
        return ParseFailure("The PDF is too complex to read (it exceeds the PDF reader's "
                            "limits).")
    return ParseFailure(f"The PDF could not be read; it looks damaged ({name}).")


# --- docx -----------------------------------------------------------------------------------

def _check_zip(data: bytes) -> None:
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile:
        raise ParseFailure("The file is not a DOCX document (not a valid zip archive).") from None
    infos = archive.infolist()
    if len(infos) > DOCX_MAX_MEMBERS:
        raise ParseFailure("The DOCX archive has too many parts.")
    if sum(i.file_size for i in infos) > DOCX_MAX_UNCOMPRESSED_BYTES:
        raise ParseFailure("The DOCX expands beyond the size limit when unpacked.")
    if "word/document.xml" not in {i.filename for i in infos}:
        raise ParseFailure("The file is not a DOCX document (no word/document.xml).")


_HEADING_STYLE = re.compile(r"^(?:Heading|Überschrift|Titre|Título)\s*(\d)$", re.I)


def parse_docx(data: bytes, *, max_characters: int) -> Parsed:
    """Sections along the heading styles (Title, Heading 1-9); tables as rows of cells."""
    _check_zip(data)
    document = _open_docx(data)
    try:
        sections = _docx_sections(document, max_characters=max_characters)
    except ParseFailure:
        raise
    except RecursionError:
        raise ParseFailure("The DOCX is nested too deeply to be read.") from None
    except Exception as exc:
        raise ParseFailure(f"The DOCX could not be read; it looks damaged ({type(exc).__name__}).") from None
    return Parsed(sections=sections)


def _open_docx(data: bytes):
    import docx

    try:
        return docx.Document(io.BytesIO(data))
    except RecursionError:
        raise ParseFailure("The DOCX is nested too deeply to be read.") from None
    except MemoryError:
        raise ParseFailure("The DOCX needs too much memory to be read.") from None
    except Exception as exc:
        raise ParseFailure(f"The DOCX could not be read; it looks damaged ({type(exc).__name__}).") from None


def _docx_sections(document, *, max_characters: int) -> list[Section]:
    from docx.table import Table

    outline = _Outline()
    body: list[str] = []
    total = 0

    def flush() -> None:
        nonlocal total
        paras = [p for text in body for p in paragraphs(normalise(text))]
        total += sum(len(p) for p in paras)
        if total > max_characters:
            raise ParseFailure(f"The text is longer than the limit of {max_characters:,} characters.")
        outline.add(paras)
        body.clear()

    for block in document.iter_inner_content():
        if isinstance(block, Table):
            body.extend(_docx_table_rows(block))
            continue
        text = block.text
        level = _docx_heading_level(block)
        if level is not None and text.strip():
            flush()
            outline.open(level, normalise(text).strip()[:200])
        else:
            body.append(text + "\n")
    flush()
    return outline.sections


def _docx_table_rows(table) -> list[str]:
    """Each row as its cells joined by " | "; a merged cell, which python-docx repeats, once."""
    rows: list[str] = []
    for row in table.rows:
        cells: list[str] = []
        for cell in row.cells:
            text = cell.text.strip()
            if text and (not cells or cells[-1] != text):
                cells.append(text)
        if cells:
            rows.append(" | ".join(cells))
    return rows


def _docx_heading_level(paragraph) -> int | None:
    """0 for the Title style, n for Heading n (and its German, French and Spanish names), None
    for any other paragraph."""
    style = (paragraph.style.name if paragraph.style is not None else "") or ""
    if style.lower() == "title":
        return 0
    match = _HEADING_STYLE.match(style)
    return int(match.group(1)) if match else None


# --- entry points ---------------------------------------------------------------------------

def parse(data: bytes, *, type: str, max_pages: int, max_characters: int) -> Parsed:
    """The document's sections, or ParseFailure."""
    if type == "pdf":
        parsed = parse_pdf(data, max_pages=max_pages, max_characters=max_characters)
    elif type == "docx":
        parsed = parse_docx(data, max_characters=max_characters)
    elif type in TEXT_TYPES:
        text = decode_text(data)
        if len(text) > max_characters:
            raise ParseFailure(f"The text is longer than the limit of {max_characters:,} characters.")
        sections = {"markdown": parse_markdown, "faq": parse_faq}.get(type, parse_text)(text)
        parsed = Parsed(sections=sections)
    else:
        raise ParseFailure(f"Unknown document type {type!r}.")
    if parsed.characters > max_characters:
        raise ParseFailure(f"The text is longer than the limit of {max_characters:,} characters.")
    if not parsed.characters:
        if type == "pdf":
            raise ParseFailure("The PDF has no extractable text (a scanned document? Text "
                               "recognition is not supported).")
        raise ParseFailure("The document has no text.")
    return parsed


def _main() -> int:
    """Child-process entry: options as JSON in argv[1], the file on stdin; the result as JSON on
    stdout. Limits on memory and CPU time are set here, before any file byte is looked at."""
    options = json.loads(sys.argv[1])
    try:
        import resource

        memory = int(options["memory_bytes"])
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
        seconds = int(options["cpu_seconds"])
        resource.setrlimit(resource.RLIMIT_CPU, (seconds, seconds + 1))
    except (ImportError, ValueError, OSError):  # no rlimits on this platform: the timeout stays
        pass
    # pypdf reports damaged files through logging warnings; they are not ours to print.
    import logging

    logging.disable(logging.WARNING)
    data = sys.stdin.buffer.read()
    try:
        parsed = parse(data, type=options["type"], max_pages=int(options["max_pages"]),
                       max_characters=int(options["max_characters"]))
        result = {"ok": True, "pages": parsed.pages,
                  "sections": [asdict(s) for s in parsed.sections]}
    except ParseFailure as failure:
        result = {"ok": False, "reason": failure.reason}
    except MemoryError:
        result = {"ok": False, "reason": "The document needs too much memory to be read."}
    except RecursionError:
        result = {"ok": False, "reason": "The document is nested too deeply to be read."}
    except Exception as exc:  # a parser bug on a strange file is still only that file's failure
        result = {"ok": False, "reason": f"The document could not be read ({type(exc).__name__})."}
    sys.stdout.write(json.dumps(result, ensure_ascii=False))
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(_main())
