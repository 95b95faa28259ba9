"""The visitor's wish of a time (agent/when.py; docs/agent.md, "When the visitor would like to
meet"): every dev phrasing read as written (the parser is tuned on them), and the held-out test
phrasings, which nothing is tuned on, read at least ``TEST_AIM`` right, in each language. No test
phrasing is in the parser or in the dev split (the split rule, as the evaluation's)."""

from __future__ import annotations

import ast
import difflib
from collections import defaultdict
from datetime import date, timedelta
from pathlib import Path

import pytest
import yaml

from agent.eval.split import MIN_WORDS, RATIO, normalise
from agent.phrases import SUPPORTED
from agent.when import read_wish

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "agent" / "eval" / "data" / "when"
TEST_AIM = 0.85  # of the test phrasings, overall; each language at least LANGUAGE_AIM
LANGUAGE_AIM = 0.7


def _dates(value) -> frozenset[date] | None:
    if value is None:
        return None
    if isinstance(value, str):
        first, last = (date.fromisoformat(v) for v in value.split(".."))
        return frozenset(first + timedelta(days=i) for i in range((last - first).days + 1))
    return frozenset(v if isinstance(v, date) else date.fromisoformat(v) for v in value)


def cases(split: str) -> list[dict]:
    data = yaml.safe_load((DATA / f"{split}.yaml").read_text(encoding="utf-8"))
    today = data["today"]
    return [{**case, "today": case.get("today", today), "days": _dates(case.get("days")),
             "parts": tuple(case.get("parts") or ())} for case in data["cases"]]


def _read(case: dict) -> tuple[frozenset[date] | None, tuple[str, ...]]:
    wish = read_wish(case["text"], case["lang"], case["today"])
    return (None, ()) if wish is None else (wish.days, tuple(sorted(wish.parts)))


def _right(case: dict) -> bool:
    return _read(case) == (case["days"], tuple(sorted(case["parts"])))


def test_every_dev_phrasing_is_read_as_written():
    wrong = [(c["lang"], c["text"], _read(c)) for c in cases("dev") if not _right(c)]
    assert wrong == []


def test_the_held_out_phrasings_are_read_well_in_every_language():
    by_language: dict[str, list[bool]] = defaultdict(list)
    for case in cases("test"):
        by_language[case["lang"]].append(_right(case))
    assert set(by_language) == set(SUPPORTED)
    overall = sum(sum(v) for v in by_language.values()) / sum(len(v) for v in by_language.values())
    shares = {lang: round(sum(v) / len(v), 2) for lang, v in sorted(by_language.items())}
    print(f"\ntest split: {overall:.2f} right; by language {shares}")
    assert overall >= TEST_AIM, shares
    assert min(shares.values()) >= LANGUAGE_AIM, shares


def _texts_of_the_parser() -> list[str]:
    tree = ast.parse((ROOT / "agent" / "when.py").read_text(encoding="utf-8"))
    return [normalise(node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str)]


def test_no_test_phrasing_is_in_the_parser_or_the_dev_split():
    sources = _texts_of_the_parser() + [normalise(c["text"]) for c in cases("dev")]
    offences = []
    for number, case in enumerate(cases("test"), start=1):
        text = normalise(case["text"])
        if len(text.split()) < MIN_WORDS:
            continue  # a word or three ("next week", "demain matin") may coincide
        close = max(difflib.SequenceMatcher(None, text, source).ratio() for source in sources)
        if close >= RATIO:
            offences.append(number)  # the case's number, never its text
    assert offences == []


@pytest.mark.parametrize("language", sorted(SUPPORTED))
def test_a_message_without_a_time_is_no_wish(language):
    assert read_wish("ok", language, date(2026, 11, 25)) is None
