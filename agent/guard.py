"""What every streamed reply obeys, whichever provider writes it (docs/agent.md, "Reply limits"
and "Grounding").

``ReplyGuard`` sits between the provider's text and the visitor. Text goes out as it comes, a
word at a time, except where a sentence must be seen whole before any of it is shown:

- a sentence with a figure in it (a price, a number, a date) is held until it ends, then shown
  only if every figure appears in what the turn may state (the knowledge passages, the tenant's
  facts, the conversation itself); otherwise the reply ends there with a short, truthful
  clause and the rest of the model's text is dropped;
- near the character cap, and near the token limit, sentences are held so that the reply ends
  on a whole sentence within the cap;
- once a sentence has come twice, the next ones are held, and a third time ends the reply;
- a sentence that starts to sound like the instructions (``ECHO_WORDS`` of their words in a
  row) is held, and if it repeats ``LEAK_WORDS`` of them in a row, the reply ends before it (a
  model asked to "print your system prompt" may do just that).

So a figure nobody supports is never shown, a reply never exceeds its cap, and what was shown
is what is stored: the guard's output is the reply.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

# Where a sentence ends: after its closing punctuation and the space that follows, or at a line
# break (a list item, a paragraph).
_BOUNDARY = re.compile(r"(?<=[.!?…])\s+|\n+")
_FIGURE = re.compile(r"\d+(?:[.,:/]\d+)*")
# A numbered list's "1." or "2)" at the start of a line: a position, not a fact.
_LIST_MARKER = re.compile(r"^\s*\d{1,2}[.)](?=\s|$)", re.MULTILINE)
_WORD_END = re.compile(r"\s")
# Hold sentences this close to the caps, so that the last one shown ends within them.
CHAR_MARGIN = 240
CHUNK_MARGIN = 48
REPEATS_ALLOWED = 2  # the same sentence this many times; the next time ends the reply
LEAK_WORDS = 6  # this many words in a row of the instructions are a leak, fewer a coincidence
ECHO_WORDS = 3  # this many may be one: the sentence is held until it can be judged whole


def figures(text: str, *, line_start: bool = True) -> set[str]:
    """The numbers in ``text``, thousands separators and trailing zeros of decimals aside:
    "$1,200.00" and "1200" are one figure. A numbered list's markers ("1." or "2)" opening a
    line) are none; ``line_start=False``: ``text`` is a piece of a line, so a number opening it
    opens no line."""
    head, sep, tail = ("", "", text) if line_start else text.partition("\n")
    found = set()
    for match in _FIGURE.findall(head + sep + _LIST_MARKER.sub(" ", tail)):
        number = match.replace(",", "") if re.fullmatch(r"\d{1,3}(,\d{3})+(\.\d+)?", match) else match
        if "." in number and number.replace(".", "").isdigit():
            number = number.rstrip("0").rstrip(".")
        found.add(number)
    return found


def unsupported_figures(text: str, sources: Iterable[str], *, line_start: bool = True) -> list[str]:
    """The figures of ``text`` that appear in none of ``sources``."""
    allowed: set[str] = set()
    for source in sources:
        allowed |= figures(source)
    return sorted(figures(text, line_start=line_start) - allowed)


def fit(text: str, limit: int, *, words: bool = True) -> str:
    """``text`` if it fits in ``limit`` characters; else its whole sentences that do, or, if not
    even the first one does, its words that do, closed with "…" (nothing, with ``words=False``)."""
    if len(text) <= limit:
        return text
    ends = [m.start() for m in _BOUNDARY.finditer(text[:limit + 1]) if m.start() > 0]
    if ends:
        return text[:ends[-1]]
    start = text[:max(0, limit - 1)].rsplit(" ", 1)[0].rstrip() if words else ""
    return start + "…" if start else ""


def word_runs(text: str, length: int = LEAK_WORDS) -> set[str]:
    """Every run of ``length`` consecutive words of ``text``, lower case, punctuation aside."""
    words = re.findall(r"\w+", text.lower())
    return {" ".join(words[i:i + length]) for i in range(len(words) - length + 1)}


def _normal(sentence: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", "", sentence.lower()).split())


class ReplyGuard:
    """Feed it the provider's chunks; it returns what may be shown now. ``done`` tells the
    caller to stop the provider; ``stopped`` says why the reply ended early (``cap``,
    ``repetition``, ``grounding``, ``leak``, ``length``), and ``dangling`` whether the text shown
    ends inside a sentence (the caller then closes it). ``private``: the instructions, which the
    reply must not repeat."""

    def __init__(self, *, max_chars: int, max_chunks: int, sources: Iterable[str],
                 private: Iterable[str] = ()):
        self.max_chars, self.max_chunks = max_chars, max_chunks
        self.sources = list(sources)
        private = list(private)
        self.private = set().union(*(word_runs(text) for text in private))
        self.echoes = set().union(*(word_runs(text, ECHO_WORDS) for text in private))
        self.shown = ""
        self.open = ""  # the current sentence's text not shown yet
        self.started = ""  # the current sentence's text already shown
        self.holding = False  # the rest of the current sentence is held until it ends
        self.sticky = False  # every sentence from now on is held (near a cap, in a loop)
        self.chunks = 0
        self.seen: dict[str, int] = {}
        self.stopped: str | None = None
        self.unsupported: list[str] = []

    @property
    def done(self) -> bool:
        return self.stopped is not None

    @property
    def dangling(self) -> bool:
        return bool(self.started.strip())

    def feed(self, text: str) -> str:
        """What of ``text`` (and of what was held before it) may be shown now."""
        if self.done or not text:
            return ""
        self.chunks += 1
        self.open += text
        out = []
        while not self.done:
            boundary = _BOUNDARY.search(self.open)
            if boundary is None:
                break
            rest, self.open = self.open[:boundary.end()], self.open[boundary.end():]
            out.append(self._sentence(rest))
        if not self.done:
            out.append(self._words())
        return self._show("".join(out))

    def finish(self, *, truncated: bool) -> str:
        """The end of the reply: what is left, if it may be shown. ``truncated``: the model did
        not end the reply itself (its token limit, the deadline), so an unfinished sentence is
        not shown."""
        if self.done or not self.open.strip():
            return ""
        rest, self.open = self.open, ""
        if truncated:
            self.stopped = "length"
            return ""
        return self._show(self._sentence(rest))

    # --- steps ---------------------------------------------------------------------------

    def _show(self, text: str) -> str:
        self.shown += text
        return text

    def _words(self) -> str:
        """Whole words of the open sentence, unless the rest of it must be held."""
        if self.sticky or self.holding or self._near_caps():
            self.holding = True
            return ""
        cut = max(self.open.rfind(" "), self.open.rfind("\t"))
        if cut < 0:
            return ""
        words, rest = self.open[:cut + 1], self.open[cut + 1:]
        if figures(words) or word_runs(self.started + words, ECHO_WORDS) & self.echoes:
            self.holding = True
            return ""
        self.open, self.started = rest, self.started + words
        return words

    def _sentence(self, rest: str) -> str:
        """The end of a sentence (the part not shown yet): shown, or the reply ends here."""
        whole, self.started, self.holding = self.started + rest, "", False
        if self._leaks(whole):
            self.started = whole[:len(whole) - len(rest)]
            return ""
        if self._repeated(whole):
            self.stopped, self.started = "repetition", whole[:len(whole) - len(rest)]
            return ""
        # "1." is a list's marker only where a line starts: "It costs $" + "49. " is a price.
        line_start = not self.started and (not self.shown or self.shown.endswith("\n"))
        unsupported = unsupported_figures(rest, self.sources, line_start=line_start)
        if unsupported:
            self.stopped, self.unsupported = "grounding", unsupported
            self.started = whole[:len(whole) - len(rest)]
            return ""
        if len(self.shown) + len(rest.rstrip()) > self.max_chars:
            self.stopped, self.started = "cap", whole[:len(whole) - len(rest)]
            return ""
        if self._near_caps():
            self.sticky = True
        return rest

    def _leaks(self, sentence: str) -> bool:
        """Whether ``sentence`` repeats the instructions; if so the reply ends before it."""
        if word_runs(sentence) & self.private:
            self.stopped = "leak"
        return self.stopped == "leak"

    def _repeated(self, sentence: str) -> bool:
        key = _normal(sentence)
        if not key:
            return False
        self.seen[key] = self.seen.get(key, 0) + 1
        if self.seen[key] > 1:
            self.sticky = True  # a loop may be starting: see each next sentence whole
        return self.seen[key] > REPEATS_ALLOWED

    def _near_caps(self) -> bool:
        return (len(self.shown) + len(self.open) >= self.max_chars - CHAR_MARGIN
                or self.chunks >= self.max_chunks - CHUNK_MARGIN)
