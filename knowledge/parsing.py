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
    (list items keep their own lines)."""
    out: list[str] = []
    for block in re.split(r"\n\s*\n", text):
        lines = [line for line in block.split("\n") if line]
        if not lines:
            continue
        joined = lines[0]
        for line in lines[1:]:
            joined += ("\n" if _LIST_ITEM.match(line) else " ") + line
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
    (re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(?:\|\s*:?-{2,}:?\s*)*\|?\s*$", re.M), ""),  # table rules
]


def _strip_inline(text: str) -> str:
    for pattern, repl in _INLINE:
        text = pattern.sub(repl, text)
    text = re.sub(r"^\s*\|(.*)\|\s*$", lambda m: " | ".join(c.strip() for c in m.group(1).split("|")),
                  text, flags=re.M)
    return text


def parse_markdown(text: str) -> list[Section]:
    """Sections along the headings (ATX ``#`` and setext underlines); the heading path
    ("Pricing › Enterprise") is each section's heading. Code blocks stay as text."""
    text = normalise(text)
    text = _FRONT_MATTER.sub("", text)
    sections: list[Section] = []
    path: list[tuple[int, str]] = []
    body: list[str] = []
    in_fence = False

    def flush() -> None:
        heading = " › ".join(title for _, title in path)
        paras = paragraphs(_strip_inline("\n".join(body)))
        if paras:
            sections.append(Section(heading, paras))
        body.clear()

    def open_heading(level: int, title: str) -> None:
        flush()
        while path and path[-1][0] >= level:
            path.pop()
        path.append((level, _strip_inline(title).strip()[:200]))

    lines = text.split("\n")
    for i, line in enumerate(lines):
        if _FENCE.match(line):
            in_fence = not in_fence
            body.append("")  # a fence is a paragraph border
            continue
        if not in_fence:
            atx = _ATX.match(line)
            if atx:
                open_heading(len(atx.group(1)), atx.group(2))
                continue
            underline = _SETEXT.match(line)
            if underline and i > 0 and body and body[-1].strip() and not _LIST_ITEM.match(body[-1]):
                title = body.pop()
                open_heading(1 if underline.group(1).startswith("=") else 2, title)
                continue
        body.append(line)
    flush()
    return sections


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
        sections: list[Section] = []
        question: list[str] = []
        answer: list[str] = []
        mode = None

        def flush() -> None:
            q = " ".join(x for x in question if x).strip()
            a = "\n".join(answer).strip()
            if q and a:
                sections.append(Section(q[:300], paragraphs(_strip_inline(a))))
            elif q or a:
                sections.append(Section("", paragraphs(_strip_inline(q + "\n\n" + a))))
            question.clear()
            answer.clear()

        for line in lines:
            if m := _QUESTION.match(line):
                flush()
                question.append(m.group(1))
                mode = "q"
            elif (m := _ANSWER.match(line)) and mode == "q":
                answer.append(m.group(1))
                mode = "a"
            elif mode == "q":
                question.append(line)
            else:
                answer.append(line)
        flush()
        return [s for s in sections if s.paragraphs]
    if any(_ATX.match(line) for line in lines):
        return parse_markdown(text)
    sections = []
    for block in re.split(r"\n\s*\n", text):
        block_lines = [line for line in block.split("\n") if line.strip()]
        if not block_lines:
            continue
        if len(block_lines) == 1:
            sections.append(Section("", paragraphs(_strip_inline(block_lines[0]))))
        else:
            sections.append(Section(_strip_inline(block_lines[0])[:300],
                                    paragraphs(_strip_inline("\n".join(block_lines[1:])))))
    return [s for s in sections if s.paragraphs]


# --- pdf ------------------------------------------------------------------------------------

def _pdf_page_paragraphs(text: str) -> list[str]:
    """A page's text as paragraphs. PDF text has a line break at every layout line; a paragraph
    ends at a blank line, or at a short line that ends a sentence."""
    lines = [line for line in normalise(text).split("\n")]
    widths = sorted(len(line) for line in lines if line)
    if not widths:
        return []
    typical = widths[int(len(widths) * 0.9)] if len(widths) > 3 else widths[-1]
    out: list[str] = []
    current: list[str] = []
    for line in lines:
        if not line:
            if current:
                out.append(" ".join(current))
                current = []
            continue
        if current and _LIST_ITEM.match(line):
            out.append(" ".join(current))
            current = []
        current.append(line)
        if line[-1] in ".!?:" and len(line) < 0.8 * typical:
            out.append(" ".join(current))
            current = []
    if current:
        out.append(" ".join(current))
    return [p.strip() for p in out if p.strip()]


def parse_pdf(data: bytes, *, max_pages: int, max_characters: int) -> Parsed:
    from pypdf import PdfReader
    from pypdf.errors import FileNotDecryptedError

    if b"%PDF-" not in data[:1024]:
        raise ParseFailure("The file is not a PDF.")
    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            # Many PDFs are "encrypted" with an empty user password (only printing or copying
            # is restricted); those open. A real password cannot be given, so they fail.
            try:
                opened = reader.decrypt("")
            except Exception:
                opened = 0
            if not opened:
                raise ParseFailure("The PDF is password-protected; upload it without a password.")
        count = len(reader.pages)
        if count > max_pages:
            raise ParseFailure(f"The PDF has {count} pages; the limit is {max_pages}.")
        sections: list[Section] = []
        total = 0
        for page in reader.pages:
            paras = _pdf_page_paragraphs(page.extract_text() or "")
            total += sum(len(p) for p in paras)
            if total > max_characters:
                raise ParseFailure(f"The text is longer than the limit of {max_characters:,} "
                                   "characters.")
            if paras:
                # One section per page: chunks follow the pages and never straddle two.
                sections.append(Section("", paras))
    except ParseFailure:
        raise
    except FileNotDecryptedError:
        raise ParseFailure("The PDF is password-protected; upload it without a password.") from None
    except RecursionError:
        raise ParseFailure("The PDF is nested too deeply to be read.") from None
    except MemoryError:
        raise ParseFailure("The PDF needs too much memory to be read (a compressed stream "
                           "expands beyond the limit).") from None
    except Exception as exc:  # an untrusted file: whatever breaks, it cannot be read
        name = type(exc).__name__
        if name == "LimitReachedError":
            if "decompress" in str(exc).lower():
                raise ParseFailure("The PDF expands beyond the size limit when decompressed.") from None
            raise ParseFailure("The PDF is too complex to read (it exceeds the PDF reader's "
                               "limits).") from None
        raise ParseFailure(f"The PDF could not be read; it looks damaged ({name}).") from None
    return Parsed(sections=sections, pages=count)


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
    import docx
    from docx.table import Table

    try:
        document = docx.Document(io.BytesIO(data))
    except RecursionError:
        raise ParseFailure("The DOCX is nested too deeply to be read.") from None
    except MemoryError:
        raise ParseFailure("The DOCX needs too much memory to be read.") from None
    except Exception as exc:
        raise ParseFailure(f"The DOCX could not be read; it looks damaged ({type(exc).__name__}).") from None

    sections: list[Section] = []
    path: list[tuple[int, str]] = []
    body: list[str] = []
    total = 0

    def flush() -> None:
        nonlocal total
        paras = [p for text in body for p in paragraphs(normalise(text))]
        total += sum(len(p) for p in paras)
        if total > max_characters:
            raise ParseFailure(f"The text is longer than the limit of {max_characters:,} characters.")
        if paras:
            sections.append(Section(" › ".join(t for _, t in path), paras))
        body.clear()

    try:
        for block in document.iter_inner_content():
            if isinstance(block, Table):
                for row in block.rows:
                    cells: list[str] = []
                    for cell in row.cells:
                        text = cell.text.strip()
                        if text and (not cells or cells[-1] != text):  # merged cells repeat
                            cells.append(text)
                    if cells:
                        body.append(" | ".join(cells))
                continue
            text = block.text
            style = (block.style.name if block.style is not None else "") or ""
            match = _HEADING_STYLE.match(style)
            level = 0 if style.lower() == "title" else int(match.group(1)) if match else None
            if level is not None and text.strip():
                flush()
                while path and path[-1][0] >= level:
                    path.pop()
                path.append((level, normalise(text).strip()[:200]))
            else:
                body.append(text + "\n")
        flush()
    except ParseFailure:
        raise
    except RecursionError:
        raise ParseFailure("The DOCX is nested too deeply to be read.") from None
    except Exception as exc:
        raise ParseFailure(f"The DOCX could not be read; it looks damaged ({type(exc).__name__}).") from None
    return Parsed(sections=sections)


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
