"""The builtin agent's answers from the knowledge base (docs/agent.md, "Providers").

An answer is one or two whole sentences of the best passages, the ones that hold most of the
visitor's words, written as the document writes them (its figures included, so that the answer
states no figure its passage does not hold) but without Markdown: no quote, heading or list
markers, no emphasis. A piece of a sentence, which a passage may begin or end with, is never
quoted. Nor is a sentence the agent already said in the conversation: asked again, it says
what it has not said yet, or that it answered above.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from knowledge.index import query_terms
from knowledge.retrieval import Passage

ANSWER_CHARS = 400  # the sentences of one answer together, at most
PASSAGES = 2  # the best passages an answer may take its sentences from
STEM = 5  # query words match by their first letters, as retrieval's excerpts do

_BOUNDARY = re.compile(r"(?<=[.!?])\s+")
_QUOTE_OR_HEADING = re.compile(r"^\s*(?:(?:>\s*)+|#{1,6}\s+)")
_LIST_MARKER = re.compile(r"^\s*(?:[-*+•‣◦▪]|\d{1,3}[.)]|[a-z][.)])\s+")
_EMPHASIS = re.compile(r"\*\*|__|`")
_ENDS = ".!?"
_OPENERS = "\"'“„«¿¡(€$£"
_FIGURE = re.compile(r"\d")


@dataclass(frozen=True)
class Sentence:
    passage: int  # index into the passages the answer was chosen from
    position: int  # order within its passage
    text: str
    score: int  # how many of the visitor's words it holds


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


def select(passages: Sequence[Passage], message: str, said: Said, *,
           figures_wanted: bool = False) -> Answer:
    """The answer to ``message`` from ``passages`` (best first): the sentence with most of its
    words, from the best passage among equals, and the next best if both fit in
    ``ANSWER_CHARS``. A passage that holds none of the words still answers with its first
    sentence (it was found by its heading or title). ``figures_wanted``: a sentence with a
    figure counts one word more (the visitor asks for a price)."""
    candidates = _candidates(passages, message, figures_wanted=figures_wanted)
    relevant = [c for c in candidates if c.score] or [c for c in candidates if c.passage == 0][:1]
    if not relevant:
        return Answer()
    fresh = sorted((c for c in relevant if not said(c.text)), key=_rank)
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
    return [
        Sentence(passage=index, position=position, text=text,
                 score=_score(text, stems) + (1 if figures_wanted and _FIGURE.search(text) else 0))
        for index, passage in enumerate(passages[:PASSAGES])
        for position, text in enumerate(sentences_of(passage.excerpt))
        if len(text) <= ANSWER_CHARS
    ]


def _rank(sentence: Sentence) -> tuple[int, int, int]:
    return -sentence.score, sentence.passage, sentence.position


def _score(text: str, stems: set[str]) -> int:
    lowered = text.lower()
    return sum(1 for stem in stems if re.search(r"\b" + re.escape(stem), lowered))
