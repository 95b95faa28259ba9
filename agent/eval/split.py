"""The split check (docs/agent.md, "Evaluation", "The split rule"): nothing the agent is built
from may hold a sentence of the test split, or a near copy of one. ``offences`` compares every
test-split sentence with

- the example phrasings: every YAML, JSON or text file under ``agent/`` outside ``agent/eval/``
  (``agent/understanding/examples.yaml`` and any other tenant-independent phrasing file);
- the rules: the string literals and the regex sources of the agent's Python outside
  ``agent/eval/`` (``agent/rules.py``, ``agent/phrases.py``, the prompts, the understanding),
  read with ``ast``, never imported;
- the dev split: ``cases.yaml`` and ``data/conversations/dev.yaml``.

A test sentence is a visitor's message of a test case, and each sentence within it. Both sides
are normalised (casefolded, accents and punctuation removed, spaces collapsed); a pair is an
offence when the test sentence has at least ``MIN_WORDS`` words (greetings such as "hi" may
coincide) and the two are equal, or their character 4-gram Jaccard similarity is at least
``JACCARD``, or their ``difflib`` ratio at least ``RATIO``. A rule's regex is also an offence
when it matches a whole test sentence of ``MIN_WORDS`` words or more and holds at least
``REGEX_WORDS`` of its words literally, in order: a rule written from the sentence, not a keyword.

An offence names the test case and the place of the offending text, never the test text
itself, so that the check's failures can be read without reading the test split.
"""

from __future__ import annotations

import ast
import difflib
import re
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from .cases import SPLIT_FILES, load_cases

AGENT = Path(__file__).resolve().parent.parent
ROOT = AGENT.parent
MIN_WORDS = 4
JACCARD = 0.8
RATIO = 0.9
REGEX_WORDS = 4
GRAM = 4
PHRASING_SUFFIXES = (".yaml", ".yml", ".json", ".txt")
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_SENTENCE_END = re.compile(r"(?<=[.!?;…])\s+|\n+")


@dataclass(frozen=True)
class Offence:
    """A test sentence found in what the agent is built from (no test text: ids and places)."""

    case: str  # the test case's id
    turn: int  # which of its messages, from 1
    kind: str  # "equal", "near copy" or "rule regex"
    source: str  # the offending file, relative to the project
    line: int
    similarity: float

    def __str__(self) -> str:
        return (f"{self.case} (message {self.turn}): {self.kind} in {self.source}:{self.line} "
                f"(similarity {self.similarity:.2f})")


def default_phrasing_files(agent: Path = AGENT) -> list[Path]:
    return sorted(path for path in agent.rglob("*") if path.suffix in PHRASING_SUFFIXES
                  and _outside_eval(path, agent))


def default_rule_modules(agent: Path = AGENT) -> list[Path]:
    return sorted(path for path in agent.rglob("*.py") if _outside_eval(path, agent)
                  and "migrations" not in path.parts)


def _outside_eval(path: Path, agent: Path) -> bool:
    relative = path.relative_to(agent).parts
    return relative[:1] != ("eval",) and "__pycache__" not in relative


def offences(*, test_files: Iterable[Path] = SPLIT_FILES["test"],
             phrasing_files: Iterable[Path] | None = None,
             rule_modules: Iterable[Path] | None = None,
             dev_files: Iterable[Path] = SPLIT_FILES["dev"],
             root: Path = ROOT) -> list[Offence]:
    """Every test sentence found in the phrasings, the rules or the dev split (module
    docstring), at most one of each kind per test message and offending place, best first.
    ``None`` for the phrasings or the rules means the project's own (``default_…``)."""
    sources: list[_Text] = []
    for path in [*(default_phrasing_files() if phrasing_files is None else phrasing_files),
                 *dev_files]:
        sources += _yaml_texts(path, root) if path.suffix in (".yaml", ".yml") else \
            _plain_texts(path, root)
    patterns: list[_Pattern] = []
    for path in default_rule_modules() if rule_modules is None else rule_modules:
        texts, found = _python_texts(path, root)
        sources += texts
        patterns += found
    tests = list(_test_sentences(test_files))
    found: dict[tuple[str, int, str, str, int], Offence] = {}
    for offence in [*_near_copies(tests, sources), *_regex_matches(tests, patterns)]:
        key = (offence.case, offence.turn, offence.kind, offence.source, offence.line)
        if key not in found or offence.similarity > found[key].similarity:
            found[key] = offence
    return sorted(found.values(), key=lambda o: (-o.similarity, o.case, o.source, o.line))


# --- normalising --------------------------------------------------------------------------------

def normalise(text: str) -> str:
    """Casefolded, without accents or punctuation, single-spaced."""
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    bare = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return " ".join(re.sub(r"[\W_]+", " ", bare).split())


def _grams(text: str) -> frozenset[str]:
    padded = f" {text} "
    return frozenset(padded[i:i + GRAM] for i in range(max(1, len(padded) - GRAM + 1)))


def _pieces(text: str) -> list[str]:
    """A text and each of its sentences, normalised, without repeats or empty ones."""
    pieces = [normalise(text), *(normalise(part) for part in _SENTENCE_END.split(text))]
    return [piece for piece in dict.fromkeys(pieces) if piece]


@dataclass(frozen=True)
class _Text:
    text: str  # normalised
    source: str
    line: int


@dataclass(frozen=True)
class _Sentence:
    text: str  # normalised
    raw: str
    case: str
    turn: int


# --- the test split -----------------------------------------------------------------------------

def _test_sentences(paths: Iterable[Path]) -> Iterator[_Sentence]:
    for path in paths:
        for case in load_cases(path).cases:
            for turn, message in enumerate(case.turns, start=1):
                raws = [message.strip(), *(part.strip() for part in _SENTENCE_END.split(message))]
                for raw in dict.fromkeys(raws):
                    text = normalise(raw)
                    if len(text.split()) >= MIN_WORDS:
                        yield _Sentence(text=text, raw=raw, case=case.id, turn=turn)


# --- the sources ----------------------------------------------------------------------------------

def _where(path: Path, root: Path) -> str:
    try:
        return str(path.resolve().relative_to(root.resolve()))
    except ValueError:
        return str(path)


def _yaml_texts(path: Path, root: Path) -> list[_Text]:
    """Every string of a YAML file (keys and values, anchors once), with its line."""
    node = yaml.compose(path.read_text(encoding="utf-8"), Loader=_LOADER)
    where, texts, seen, stack = _where(path, root), [], set(), [node]
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.ScalarNode):
            texts += [_Text(piece, where, node.start_mark.line + 1) for piece in _pieces(node.value)]
        elif isinstance(node, yaml.SequenceNode):
            stack += node.value
        elif isinstance(node, yaml.MappingNode):
            stack += [part for pair in node.value for part in pair]
    return texts


def _plain_texts(path: Path, root: Path) -> list[_Text]:
    where = _where(path, root)
    return [_Text(piece, where, number)
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
            for piece in _pieces(line)]


@dataclass(frozen=True)
class _Pattern:
    regex: re.Pattern
    words: tuple[str, ...]  # its literal words, in order
    vocabulary: frozenset[str]
    source: str
    line: int


_REGEX_CALLS = {"compile", "search", "match", "fullmatch", "findall", "finditer", "sub", "subn",
                "split"}
_FLAGS_AT = {"compile": 1, "search": 2, "match": 2, "fullmatch": 2, "findall": 2, "finditer": 2,
             "split": 3, "sub": 4, "subn": 4}


def _python_texts(path: Path, root: Path) -> tuple[list[_Text], list[_Pattern]]:
    """A module's string literals (whole, each sentence, and as a regex's literal text with each
    alternative) and its regexes, as far as they can be evaluated without running the module."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    where = _where(path, root)
    texts: list[_Text] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            texts += [_Text(piece, where, node.lineno) for piece in _literal_pieces(node.value)]
    names = _module_strings(tree)
    patterns = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "re"
                and node.func.attr in _REGEX_CALLS and node.args):
            continue
        try:
            source = _evaluate(node.args[0], names)
            flags = _flags(node, names)
            regex = re.compile(source, flags)
        except (_Unknown, re.error, TypeError):
            continue
        if not isinstance(source, str):
            continue
        texts += [_Text(piece, where, node.lineno) for piece in _literal_pieces(source)]
        words = tuple(_regex_literal(source).split())
        patterns.append(_Pattern(regex=regex, words=words, vocabulary=frozenset(words),
                                 source=where, line=node.lineno))
    return texts, patterns


def _literal_pieces(value: str) -> list[str]:
    """A literal as text, its sentences, and, read as a regex, its literal text whole and per
    alternative."""
    plain = _regex_literal(value)
    alternatives = [normalise(_regex_literal(part)) for part in value.split("|")]
    return [piece for piece in dict.fromkeys([*_pieces(value), normalise(plain), *alternatives])
            if piece]


def _regex_literal(source: str) -> str:
    """The literal words of a regex source: classes, escapes, group openers and counts left out."""
    text = re.sub(r"\[(?:\\.|[^\]\\])*\]", " ", source)
    text = re.sub(r"\\[A-Za-z]", " ", text)
    text = re.sub(r"\(\?(?:P<\w+>|<[!=]|[!=:]|[aiLmsux-]+[:)])", " ", text)
    text = re.sub(r"\{\d*,?\d*\}", " ", text)
    return normalise(text)


class _Unknown(Exception):
    """An expression the check cannot evaluate without running the module."""


def _module_strings(tree: ast.Module) -> dict[str, Any]:
    """The module-level names bound to strings (or flags) the check can evaluate, in order."""
    names: dict[str, Any] = {}
    for statement in tree.body:
        if isinstance(statement, ast.Assign):
            targets, value = statement.targets, statement.value
        elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
            targets, value = [statement.target], statement.value
        else:
            continue
        for target in targets:
            if isinstance(target, ast.Name):
                try:
                    names[target.id] = _evaluate(value, names)
                except (_Unknown, TypeError):
                    names.pop(target.id, None)
    return names


def _evaluate(node: ast.AST, names: dict[str, Any]) -> Any:
    if isinstance(node, ast.Constant) and isinstance(node.value, str | int):
        return node.value
    if isinstance(node, ast.Name):
        if node.id not in names:
            raise _Unknown(node.id)
        return names[node.id]
    if isinstance(node, ast.JoinedStr):
        parts = []
        for value in node.values:
            if isinstance(value, ast.FormattedValue):
                if value.format_spec is not None or value.conversion not in (-1, None):
                    raise _Unknown("formatted")
                parts.append(str(_evaluate(value.value, names)))
            else:
                parts.append(_evaluate(value, names))
        return "".join(parts)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.BitOr):
        left, right = _evaluate(node.left, names), _evaluate(node.right, names)
        return left + right if isinstance(node.op, ast.Add) else left | right
    if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
            and node.value.id == "re" and isinstance(getattr(re, node.attr, None), re.RegexFlag)):
        return getattr(re, node.attr)
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr == "join" and len(node.args) == 1
            and isinstance(node.args[0], ast.List | ast.Tuple)):
        separator = _evaluate(node.func.value, names)
        return separator.join(_evaluate(item, names) for item in node.args[0].elts)
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name) and node.func.value.id == "re"
            and node.func.attr == "escape" and len(node.args) == 1):
        return re.escape(_evaluate(node.args[0], names))
    raise _Unknown(type(node).__name__)


def _flags(call: ast.Call, names: dict[str, Any]) -> int:
    for keyword in call.keywords:
        if keyword.arg == "flags":
            return int(_evaluate(keyword.value, names))
    at = _FLAGS_AT[call.func.attr]  # type: ignore[attr-defined]
    return int(_evaluate(call.args[at], names)) if len(call.args) > at else 0


# --- comparing ------------------------------------------------------------------------------------

def _near_copies(tests: list[_Sentence], sources: list[_Text]) -> Iterator[Offence]:
    exact: dict[str, list[_Text]] = defaultdict(list)
    postings: dict[str, list[int]] = defaultdict(list)
    grams = [_grams(source.text) for source in sources]
    lengths = [len(source.text) for source in sources]
    repeats = [_repeats(source.text, grams[i]) for i, source in enumerate(sources)]
    for index, source in enumerate(sources):
        exact[source.text].append(source)
        for gram in grams[index]:
            postings[gram].append(index)
    # difflib's ratio is 2M / (a + b), M the characters in its matching blocks. At RATIO the
    # lengths are near each other, at most (1 - RATIO)(a + b) characters are left unmatched,
    # so there are at most that many blocks and one more, and the blocks share at least
    # M - 3 per block 4-grams (fewer distinct ones where a 4-gram repeats): a pair that shares
    # fewer cannot reach RATIO and is not compared.
    per_character = RATIO / 2 - (GRAM - 1) * (1 - RATIO)
    for test in tests:
        for source in exact.get(test.text, ()):
            yield _offence(test, source, "equal", 1.0)
        mine, size = _grams(test.text), len(test.text)
        mine_repeats = _repeats(test.text, mine)
        shared = Counter(index for gram in mine for index in postings.get(gram, ()))
        matcher: difflib.SequenceMatcher | None = None
        for index, common in shared.items():
            source = sources[index]
            if source.text == test.text:
                continue
            jaccard = common / (len(mine) + len(grams[index]) - common)
            similarity = jaccard if jaccard >= JACCARD else 0.0
            total = size + lengths[index]
            if (2 * min(size, lengths[index]) >= RATIO * total
                    and common >= per_character * total - (GRAM - 1) - mine_repeats - repeats[index]):
                if matcher is None:
                    matcher = difflib.SequenceMatcher(autojunk=False)
                    matcher.set_seq2(test.text)
                matcher.set_seq1(source.text)
                if matcher.quick_ratio() >= RATIO and (ratio := matcher.ratio()) >= RATIO:
                    similarity = max(similarity, ratio)
            if similarity:
                yield _offence(test, source, "near copy", similarity)


def _repeats(text: str, grams: frozenset[str]) -> int:
    """How many of ``text``'s 4-grams (padded as ``_grams`` pads it) repeat an earlier one."""
    return max(0, len(text) + 2 - GRAM + 1 - len(grams))


def _offence(test: _Sentence, source: _Text, kind: str, similarity: float) -> Offence:
    return Offence(case=test.case, turn=test.turn, kind=kind, source=source.source,
                   line=source.line, similarity=round(similarity, 3))


def _regex_matches(tests: list[_Sentence], patterns: list[_Pattern]) -> Iterator[Offence]:
    for test in tests:
        words = test.text.split()
        candidates = {test.raw, test.raw.rstrip(".!?…"), test.text}
        for pattern in patterns:
            if len(pattern.vocabulary.intersection(words)) < REGEX_WORDS:
                continue
            common = _in_order(pattern.words, words)
            if common < REGEX_WORDS:
                continue
            if any(pattern.regex.fullmatch(text) for text in candidates):
                yield Offence(case=test.case, turn=test.turn, kind="rule regex",
                              source=pattern.source, line=pattern.line,
                              similarity=round(common / len(words), 3))


def _in_order(first: tuple[str, ...], second: list[str]) -> int:
    """How many words the two have in common in the same order (longest common subsequence)."""
    previous = [0] * (len(second) + 1)
    for word in first:
        current = [0]
        for j, other in enumerate(second, start=1):
            current.append(previous[j - 1] + 1 if word == other else max(previous[j], current[-1]))
        previous = current
    return previous[-1]
