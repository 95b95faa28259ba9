"""Cutting sections into the passages that are indexed and quoted.

A chunk never crosses a heading (or a PDF page): it holds whole paragraphs of one section, up
to about ``target`` characters. A paragraph longer than ``maximum`` is cut at sentence ends, a
sentence longer than that at spaces. Consecutive chunks of one section overlap by their last
sentences (up to ``overlap`` characters), so that an answer split across a border is still
found whole in one of them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .parsing import Section

TARGET_CHARS = 800
MAX_CHARS = 1_000
OVERLAP_CHARS = 150

_SENTENCE_END = re.compile(r"(?<=[.!?…。！？])\s+")


@dataclass(frozen=True)
class ChunkText:
    position: int
    heading: str
    text: str


def _split_long(text: str, maximum: int) -> list[str]:
    if len(text) <= maximum:
        return [text]
    pieces: list[str] = []
    for sentence in _SENTENCE_END.split(text):
        while len(sentence) > maximum:
            cut = sentence.rfind(" ", 0, maximum)
            cut = cut if cut > maximum // 2 else maximum
            pieces.append(sentence[:cut].strip())
            sentence = sentence[cut:].strip()
        if sentence:
            pieces.append(sentence)
    # Sentences are glued back together up to the maximum, so that a long paragraph becomes a
    # few long pieces rather than many one-sentence ones.
    merged: list[str] = []
    for piece in pieces:
        if merged and len(merged[-1]) + 1 + len(piece) <= maximum:
            merged[-1] += " " + piece
        else:
            merged.append(piece)
    return merged


def _tail(text: str, overlap: int) -> str:
    """The last whole sentences of ``text`` that fit in ``overlap`` characters."""
    if overlap <= 0:
        return ""
    tail = ""
    for sentence in reversed(_SENTENCE_END.split(text)):
        candidate = f"{sentence} {tail}".strip()
        if len(candidate) > overlap:
            break
        tail = candidate
    return tail


def chunk_sections(sections: list[Section], *, target: int = TARGET_CHARS,
                   maximum: int = MAX_CHARS, overlap: int = OVERLAP_CHARS) -> list[ChunkText]:
    chunks: list[ChunkText] = []
    for section in sections:
        pieces = [piece for paragraph in section.paragraphs
                  for piece in _split_long(paragraph, maximum)]
        for text in _pack(pieces, target=target, maximum=maximum, overlap=overlap):
            chunks.append(ChunkText(position=len(chunks), heading=section.heading[:300], text=text))
    return chunks


def _pack(pieces: list[str], *, target: int, maximum: int, overlap: int) -> list[str]:
    """The texts of one section's chunks: its pieces in order, a chunk closed once it reaches
    ``target`` or the next piece would take it past ``maximum``."""
    texts: list[str] = []
    current: list[str] = []
    size = 0
    for piece in pieces:
        if current and (size + 2 + len(piece) > maximum or size >= target):
            texts.append("\n\n".join(current))
            current = _overlap(texts[-1], piece, overlap=overlap, maximum=maximum)
            size = len(current[0]) if current else 0
        current.append(piece)
        size += (2 if size else 0) + len(piece)
    if current:
        texts.append("\n\n".join(current))
    return texts


def _overlap(previous: str, piece: str, *, overlap: int, maximum: int) -> list[str]:
    """What the next chunk starts with before ``piece``: the last sentences of the previous
    chunk, if they fit in front of it."""
    tail = _tail(previous, overlap)
    return [tail] if tail and len(tail) + 2 + len(piece) <= maximum else []
