"""The builtin agent's answers from the knowledge base (docs/agent.md, "Providers").

An answer is one or two whole sentences of the best passages, the ones closest in meaning to
the visitor's question (the cosine of their embeddings, ``core.embeddings``; the visitor's words
they hold break near-ties), and only sentences close enough to answer it (``ANSWER_FLOOR``): a
passage that was retrieved but answers nothing is not quoted. They are written as the document
writes them (its figures included, so that the answer states no figure its passage does not
hold) but without Markdown: no quote, heading or list markers, no emphasis. A piece of a
sentence, which a passage may begin or end with, is never quoted. Nor is a sentence the agent
already said in the conversation: asked again, it says what it has not said yet, or that it
answered above.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from core import embeddings
from knowledge.index import query_terms
from knowledge.parsing import TABLE_ROW
from knowledge.retrieval import Passage

ANSWER_CHARS = 400  # the sentences of one answer together, at most
PASSAGES = 2  # the best passages an answer may take its sentences from
STEM = 5  # query words match by their first letters, as retrieval's excerpts do

_BOUNDARY = re.compile(r"(?<=[.!?])\s+")
_HEADING = re.compile(r"^\s*#{1,6}\s+")
_LINE_HEADING = re.compile(r"[^.!?:;,]{2,80}")
_QUOTE_OR_HEADING = re.compile(r"^\s*(?:(?:>\s*)+|#{1,6}\s+)")
_LIST_MARKER = re.compile(r"^\s*(?:[-*+•‣◦▪]|\d{1,3}[.)]|[a-z][.)])\s+")
_EMPHASIS = re.compile(r"\*\*|__|`")
_ENDS = ".!?"
_OPENERS = "\"'“„«¿¡(€$£"
# A price, a discount: what a visitor who asks what something costs wants to read.
_FIGURE = re.compile(r"[$€£¥]\s?\d|\d\s?(?:[$€£¥%]|(?:EUR|USD|GBP|dollars?|euros?)\b)", re.I)


@dataclass(frozen=True)
class Sentence:
    passage: int  # index into the passages the answer was chosen from
    position: int  # order within its passage
    text: str
    score: int  # how many of the visitor's words it holds
    similarity: float = 0.0  # the cosine of its embedding with the question's


@dataclass(frozen=True)
class Answer:
    """What to say from the passages: ``sentences``, or, when every sentence that answers the
    visitor was said already, the passage to refer back to (``repeated``)."""

    sentences: tuple[Sentence, ...] = ()
    repeated: int | None = None

    @property
    def cited(self) -> tuple[int, ...]:
        """The passages the answer names, the one it leads with first."""
        if self.sentences:
            return tuple(dict.fromkeys(s.passage for s in self.sentences))
        return () if self.repeated is None else (self.repeated,)


class Said:
    """What the agent said earlier in the conversation, to tell whether a sentence would repeat
    it (punctuation and case aside)."""

    def __init__(self, replies: Iterable[str]):
        self.text = "\n".join(_key(reply) for reply in replies)

    def __call__(self, sentence: str) -> bool:
        key = _key(sentence)
        return bool(key) and key in self.text


def _key(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", "", text.lower()).split())


def sentences_of(text: str) -> list[str]:
    """The whole sentences of a passage, as plain text. A list item without a full stop is a
    sentence with one; a piece that starts in lower case (the end of a sentence that began
    before the passage), ends in "…" or without punctuation (a heading, a cut) is none."""
    # Excerpts join a passage's lines, so a list item may follow a sentence on one line.
    pieces = (_sentence(piece) for line in text.splitlines()
              for piece in _pieces(_QUOTE_OR_HEADING.sub("", line)))
    return [piece for piece in pieces if piece]


def headed_sentences_of(text: str, heading: str = "") -> list[tuple[str, str]]:
    """``sentences_of`` with the heading each sentence stands under (``heading`` before the
    text's first Markdown heading): "The widget speaks four languages" means more under
    "Languages" than alone. A table's rows (cells joined by " | ", as the parsers write them)
    become sentences that name their cells by the header row's: "Essentials: Monthly billing
    $19 per agent; Minimum 1 agent." A question (a FAQ's, say) is no answer and is left out."""
    found: list[tuple[str, str]] = []
    header: list[str] | None = None
    for line in text.splitlines():
        if _HEADING.match(line):
            heading = _HEADING.sub("", line).strip()
            header = None
            continue
        if not line.strip():
            continue  # a blank line does not end a table
        if TABLE_ROW.search(line):
            cells = [cell.strip() for cell in line.split(" | ")]
            if header is None:
                header = cells
            else:
                found.append((heading, _row_sentence(header, cells)))
            continue
        header = None
        sentences = sentences_of(line)
        if not sentences and _LINE_HEADING.fullmatch(line.strip()):
            # A short line that is no sentence: a heading of a PDF or a Word file, which has no
            # Markdown marks ("Installing the widget", then how).
            heading = line.strip()
            continue
        found.extend((heading, sentence) for sentence in sentences if not sentence.endswith("?"))
    return found


def _row_sentence(header: list[str], cells: list[str]) -> str:
    named = "; ".join(f"{name} {value}" for name, value in zip(header[1:], cells[1:], strict=False)
                      if value)
    return f"{cells[0]}: {named}." if named else f"{cells[0]}."


def _sentence(piece: str) -> str | None:
    """``piece`` of a passage as a plain sentence, if it is a whole one."""
    item = bool(_LIST_MARKER.match(piece))
    piece = _EMPHASIS.sub("", _LIST_MARKER.sub("", piece)).strip()
    if not piece:
        return None
    if item and piece[-1] not in _ENDS + "…:;,":
        piece += "."
    whole = piece[-1] in _ENDS and (piece[0].isupper() or piece[0].isdigit()
                                    or piece[0] in _OPENERS)
    return piece if whole else None


def _pieces(line: str) -> list[str]:
    """``line`` cut where sentences end; "e.g. this" is one sentence, as what follows a real
    end starts in upper case (or with a list's marker)."""
    pieces: list[str] = []
    for piece in _BOUNDARY.split(line):
        piece = piece.strip()
        if not piece:
            continue
        if pieces and piece[0].islower() and not _LIST_MARKER.match(piece):
            pieces[-1] += " " + piece
        else:
            pieces.append(piece)
    return pieces


# A sentence answers the question when its closeness reaches this, and when it is at most
# ``ANSWER_SPREAD`` below the best sentence's: the second sentence of an answer answers too.
# Chosen on the knowledge set's dev split (docs/agent.md, "The knowledge set"): at 0.30 the
# answers held the asked fact 33 times in 52 and 7 of 14 unanswerable questions were answered
# with a passage; at 0.36, 26 and 4; at 0.42, 22 and 2 (adding the passage's own cosine changed
# little: 24 and 2 at best). Saying "I don't know" wrongly costs a visitor less than being told
# something that does not answer them.
ANSWER_FLOOR = 0.36
ANSWER_SPREAD = 0.10
# ... and below it, down to STANDOUT_FLOOR, when it is STANDOUT_MARGIN above every other sentence
# (dev split: one more paraphrase answered, no unanswerable question more).
STANDOUT_FLOOR = 0.28
STANDOUT_MARGIN = 0.10


def select(passages: Sequence[Passage], message: str, said: Said, *,
           figures_wanted: bool = False) -> Answer:
    """The answer to ``message`` from ``passages`` (best first): the sentence closest to it in
    meaning, and the next closest if both fit in ``ANSWER_CHARS`` and it answers too.
    ``figures_wanted``: a sentence with a price or a discount counts one word more (the visitor
    asks what something costs). No sentence close enough: no answer."""
    candidates = _candidates(passages, message, figures_wanted=figures_wanted)
    if not candidates:
        return Answer()
    # Closeness is the cosine, plus a little for each of the visitor's words a sentence holds
    # (and for a figure when a price is asked): meaning first, the words to break near-ties.
    ranked = sorted((_closeness(c) for c in candidates), reverse=True)
    best = ranked[0]
    # Below the floor, the best sentence still answers when it stands out from all the others
    # (a question in another language than the document's reads lower on every sentence).
    standout = (len(ranked) > 1 and best >= STANDOUT_FLOOR
                and best - ranked[1] >= STANDOUT_MARGIN)
    floor = min(ANSWER_FLOOR, best) if standout else ANSWER_FLOOR
    # Asked what something costs, a price that shares a word with the question answers it too.
    priced = [c for c in candidates if figures_wanted and c.score >= 2 and _FIGURE.search(c.text)]
    relevant = [c for c in candidates
                if (_closeness(c) >= floor and _closeness(c) >= best - ANSWER_SPREAD) or c in priced]
    if not relevant:
        return Answer()
    fresh = sorted((c for c in relevant if not said(c.text)), key=_rank)
    if not fresh:
        # Asked again: what else the passages say in the visitor's words, before pointing back.
        fresh = sorted((c for c in candidates if c.score and not said(c.text)), key=_rank)
    if not fresh:
        return Answer(repeated=min(relevant, key=_rank).passage)
    return Answer(sentences=_pair(fresh))


def _pair(ranked: list[Sentence]) -> tuple[Sentence, ...]:
    """The best sentence, and the next best if both fit in ``ANSWER_CHARS``; two of one
    passage in the passage's order, which reads as it was written."""
    lead = ranked[0]
    second = next((c for c in ranked[1:] if len(lead.text) + 1 + len(c.text) <= ANSWER_CHARS),
                  None)
    if second is None:
        return (lead,)
    if second.passage == lead.passage and second.position < lead.position:
        return second, lead
    return lead, second


def _candidates(passages: Sequence[Passage], message: str, *,
                figures_wanted: bool) -> list[Sentence]:
    stems = {term[:STEM] for term in query_terms(message)}
    found = [
        (index, position, heading, text)
        for index, passage in enumerate(passages[:PASSAGES])
        for position, (heading, text) in enumerate(
            headed_sentences_of(passage.text or passage.excerpt, passage.heading))
        if len(text) <= ANSWER_CHARS
    ]
    if not found:
        return []
    vectors = embeddings.encode([message] + [f"{heading}: {text}" if heading else text
                                             for _, _, heading, text in found])
    similarities = vectors[1:] @ vectors[0]
    return [
        Sentence(passage=index, position=position, text=text,
                 score=_score(text, stems) + (1 if figures_wanted and _FIGURE.search(text) else 0),
                 similarity=float(similarity))
        for (index, position, _, text), similarity in zip(found, similarities, strict=True)
    ]


WORD_WEIGHT = 0.04  # what each of the visitor's words in a sentence adds to its closeness


def _closeness(sentence: Sentence) -> float:
    return sentence.similarity + WORD_WEIGHT * sentence.score


def _rank(sentence: Sentence) -> tuple[float, int, int]:
    return -_closeness(sentence), sentence.passage, sentence.position


def _score(text: str, stems: set[str]) -> int:
    lowered = text.lower()
    return sum(1 for stem in stems if re.search(r"\b" + re.escape(stem), lowered))
