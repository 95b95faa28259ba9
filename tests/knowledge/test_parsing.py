"""Reading documents: normalisation, the five types, and chunking along headings and
paragraphs with overlap. Pure functions; the files are real ones written by the tests."""

import pytest

from knowledge.chunking import MAX_CHARS, chunk_sections
from knowledge.parsing import (
    ParseFailure,
    Section,
    normalise,
    paragraphs,
    parse,
    parse_faq,
    parse_markdown,
)
from tests import knowledge_files as files

LIMITS = {"max_pages": 500, "max_characters": 2_000_000}


def test_normalise_folds_unicode_joins_broken_words_and_drops_control_characters():
    text = "The ﬁrst ｗｉｄｇｅｔ\r\nis infor-\nmation\x00 rich\u00ad.\t\tWell-\nKnown   spaces  "
    assert normalise(text) == "The first widget\nis information rich. Well-\nKnown spaces"


def test_paragraphs_join_wrapped_lines_but_keep_list_items():
    text = "A line wrapped\nacross two.\n\nItems:\n- one\n- two\n\n\n1. first\n2. second"
    assert paragraphs(normalise(text)) == [
        "A line wrapped across two.", "Items:\n- one\n- two", "1. first\n2. second"]


def test_markdown_sections_follow_the_heading_path_and_lose_their_markup():
    text = """---
title: front matter is not content
---
# Pricing

Plans start at **$49** per [seat](https://acme.example/seats).

## Enterprise

Talk to `sales` for *volume* discounts.

```
code stays as text
```

Setext heading
--------------

Under it.
"""
    sections = parse_markdown(text)
    assert [(s.heading, s.paragraphs) for s in sections] == [
        ("Pricing", ["Plans start at $49 per seat."]),
        ("Pricing › Enterprise", ["Talk to sales for volume discounts.", "code stays as text"]),
        ("Pricing › Setext heading", ["Under it."]),
    ]


def test_faq_pairs_become_sections_with_the_question_as_heading():
    text = ("Q: Is there a free trial?\nA: Yes, 14 days.\nNo card needed.\n\n"
            "Q: Do you offer SSO?\nA: On Enterprise.")
    assert [(s.heading, s.paragraphs) for s in parse_faq(text)] == [
        ("Is there a free trial?", ["Yes, 14 days. No card needed."]),
        ("Do you offer SSO?", ["On Enterprise."]),
    ]
    blocks = "Is there a free trial?\nYes, 14 days.\n\nDo you offer SSO?\nOn Enterprise."
    assert [s.heading for s in parse_faq(blocks)] == ["Is there a free trial?", "Do you offer SSO?"]
    headings = "## Is there a free trial?\nYes.\n## Do you offer SSO?\nOn Enterprise."
    assert [s.heading for s in parse_faq(headings)] == ["Is there a free trial?", "Do you offer SSO?"]


def test_text_must_be_utf8():
    with pytest.raises(ParseFailure, match="UTF-8"):
        parse("caf\xe9".encode("latin-1"), type="text", **LIMITS)
    assert parse("\ufeffbyte order mark".encode(), type="text", **LIMITS).sections[0].paragraphs == [
        "byte order mark"]


def test_a_pdf_is_read_page_by_page():
    pdf = files.make_pdf([
        ["Getting started", "", "The widget installs with one script tag and answers your",
         "visitors in real time. It captures leads for your sales team.", "",
         "Every plan includes the analytics dashboard."],
        ["Security", "", "All data is encrypted at rest."],
    ], compress=True)
    parsed = parse(pdf, type="pdf", **LIMITS)
    assert parsed.pages == 2
    first, second = parsed.sections
    assert "installs with one script tag and answers your visitors in real time." in " ".join(
        first.paragraphs)
    assert second.paragraphs[-1].endswith("All data is encrypted at rest.")


def test_a_docx_is_read_along_its_heading_styles_with_tables():
    data = files.make_docx(
        [("title", "Handbook"), ("h1", "Install"), ("p", "Paste the script tag."),
         ("h2", "Advanced"), ("p", "Use the API."), ("h1", "Plans")],
        table=[["Plan", "Price"], ["Starter", "$49"]],
    )
    sections = parse(data, type="docx", **LIMITS).sections
    assert [(s.heading, s.paragraphs) for s in sections] == [
        ("Handbook › Install", ["Paste the script tag."]),
        ("Handbook › Install › Advanced", ["Use the API."]),
        ("Handbook › Plans", ["Plan | Price", "Starter | $49"]),
    ]


@pytest.mark.parametrize(("make", "type", "reason"), [
    (files.corrupt_pdf, "pdf", "looks damaged"),
    (lambda: b"just text", "pdf", "not a PDF"),
    (lambda: files.encrypted_pdf([["secret"]]), "pdf", "password-protected"),
    (lambda: files.make_pdf([[]]), "pdf", "no extractable text"),
    (files.nested_pdf, "pdf", "could not be read"),
    (files.bomb_pdf, "pdf", "expands beyond the size limit"),
    (lambda: b"PK\x03\x04 not really a zip", "docx", "not a DOCX"),
    (files.zip_bomb_docx, "docx", "expands beyond the size limit"),
    (lambda: b"   \n\n  ", "text", "no text"),
], ids=["corrupt", "not-pdf", "encrypted", "no-text", "nested", "bomb", "not-zip", "zip-bomb",
        "blank"])
def test_unreadable_files_fail_with_a_reason(make, type, reason):
    with pytest.raises(ParseFailure, match=reason):
        parse(make(), type=type, **LIMITS)


def test_a_pdf_with_an_empty_user_password_opens():
    parsed = parse(files.restricted_pdf([["Printing is restricted, reading is not."]]), type="pdf",
                   **LIMITS)
    assert parsed.sections[0].paragraphs == ["Printing is restricted, reading is not."]


def test_page_and_character_limits():
    pdf = files.make_pdf([["one"], ["two"], ["three"]])
    with pytest.raises(ParseFailure, match="3 pages; the limit is 2"):
        parse(pdf, type="pdf", max_pages=2, max_characters=1000)
    with pytest.raises(ParseFailure, match="limit of 10 characters"):
        parse(files.make_pdf([["a long line of text"]]), type="pdf", max_pages=5, max_characters=10)
    with pytest.raises(ParseFailure, match="limit of 10 characters"):
        parse(files.make_docx([("p", "a long line of text")]), type="docx", max_pages=5,
              max_characters=10)


def test_chunks_hold_whole_paragraphs_never_cross_headings_and_overlap():
    sentence = "The widget answers visitors around the clock."
    long_section = Section("Guide", [" ".join([sentence] * 6) for _ in range(10)])
    chunks = chunk_sections([Section("Intro", ["Short intro."]), long_section,
                             Section("Outro", ["Bye."])])
    assert chunks[0].heading == "Intro" and chunks[0].text == "Short intro."
    assert chunks[-1].heading == "Outro" and chunks[-1].text == "Bye."
    guide = [c for c in chunks if c.heading == "Guide"]
    assert len(guide) >= 3
    assert all(len(c.text) <= MAX_CHARS for c in chunks)
    for before, after in zip(guide, guide[1:], strict=False):
        # Each chunk starts with the last sentence of the one before it.
        assert after.text.startswith(sentence) and before.text.endswith(sentence)
    assert [c.position for c in chunks] == list(range(len(chunks)))


def test_a_paragraph_without_sentence_ends_is_cut_at_spaces():
    chunks = chunk_sections([Section("", ["word " * 1000])])
    assert len(chunks) >= 5 and all(len(c.text) <= MAX_CHARS for c in chunks)
    assert all(not c.text.startswith(" ") and "wor d" not in c.text for c in chunks)


def test_faq_pairs_keep_a_preamble_multi_line_questions_and_a_question_without_answer():
    text = ("Our FAQ.\n\nQ: Is there a\nfree trial?\nA: Yes, 14 days.\n\n"
            "Q: What about SSO?\n")
    assert [(s.heading, s.paragraphs) for s in parse_faq(text)] == [
        ("", ["Our FAQ."]),
        ("Is there a free trial?", ["Yes, 14 days."]),
        ("", ["What about SSO?"]),
    ]


def test_faq_blocks_of_one_line_are_text_without_a_question():
    text = "\n\nWelcome to our FAQ.\n\nIs there a free trial?\nYes, 14 days."
    assert [(s.heading, s.paragraphs) for s in parse_faq(text)] == [
        ("", ["Welcome to our FAQ."]),
        ("Is there a free trial?", ["Yes, 14 days."]),
    ]


def test_a_pdf_list_item_starts_a_paragraph_of_its_own():
    pdf = files.make_pdf([["Our plans include:", "- Starter for small teams",
                           "- Growth for larger ones"]])
    assert parse(pdf, type="pdf", **LIMITS).sections[0].paragraphs == [
        "Our plans include:", "- Starter for small teams", "- Growth for larger ones"]


def _limit_reached(message):
    from pypdf.errors import LimitReachedError

    return LimitReachedError(message)


def _not_decrypted():
    from pypdf.errors import FileNotDecryptedError

    return FileNotDecryptedError("File has not been decrypted")


@pytest.mark.parametrize(("error", "reason"), [
    (_not_decrypted, "The PDF is password-protected; upload it without a password."),
    (RecursionError, "The PDF is nested too deeply to be read."),
    (MemoryError, "The PDF needs too much memory to be read (a compressed stream expands beyond "
                  "the limit)."),
    (lambda: _limit_reached("Limit reached while decompressing"),
     "The PDF expands beyond the size limit when decompressed."),
    (lambda: _limit_reached("Too many objects"),
     "The PDF is too complex to read (it exceeds the PDF reader's limits)."),
    (lambda: KeyError("/Root"), "The PDF could not be read; it looks damaged (KeyError)."),
], ids=["not-decrypted", "recursion", "memory", "decompression-limit", "other-limit", "damaged"])
def test_what_the_pdf_reader_raises_becomes_a_reason(monkeypatch, error, reason):
    """Files that make pypdf fail in these ways are slow or huge to build; a reader that fails
    the same way stands in for them."""
    def failing_reader(stream):
        raise error()

    monkeypatch.setattr("pypdf.PdfReader", failing_reader)
    with pytest.raises(ParseFailure) as failure:
        parse(files.make_pdf([["text"]]), type="pdf", **LIMITS)
    assert failure.value.reason == reason


def test_an_encrypted_pdf_whose_decryption_fails_is_password_protected(monkeypatch):
    from pypdf import PdfReader

    def failing_decrypt(self, password):
        raise NotImplementedError("an unsupported encryption algorithm")

    monkeypatch.setattr(PdfReader, "decrypt", failing_decrypt)
    with pytest.raises(ParseFailure, match="password-protected"):
        parse(files.encrypted_pdf([["secret"]]), type="pdf", **LIMITS)


@pytest.mark.parametrize(("error", "reason"), [
    (RecursionError, "The DOCX is nested too deeply to be read."),
    (MemoryError, "The DOCX needs too much memory to be read."),
    (ValueError, "The DOCX could not be read; it looks damaged (ValueError)."),
])
def test_what_the_docx_reader_raises_on_opening_becomes_a_reason(monkeypatch, error, reason):
    data = files.make_docx([("p", "text")])

    def failing_document(stream):
        raise error()

    monkeypatch.setattr("docx.Document", failing_document)
    with pytest.raises(ParseFailure) as failure:
        parse(data, type="docx", **LIMITS)
    assert failure.value.reason == reason


@pytest.mark.parametrize(("error", "reason"), [
    (RecursionError, "The DOCX is nested too deeply to be read."),
    (MemoryError, "The DOCX could not be read; it looks damaged (MemoryError)."),
    (KeyError, "The DOCX could not be read; it looks damaged (KeyError)."),
])
def test_what_the_docx_reader_raises_while_reading_becomes_a_reason(monkeypatch, error, reason):
    from docx.document import Document

    def failing_content(self):
        raise error()

    monkeypatch.setattr(Document, "iter_inner_content", failing_content)
    with pytest.raises(ParseFailure) as failure:
        parse(files.make_docx([("p", "text")]), type="docx", **LIMITS)
    assert failure.value.reason == reason
