"""What the evaluation measures over the cases' results (docs/agent.md, "Evaluation").

- capture: each expected contact field found on the lead with an accepted value is a true
  positive; each expected field missing or different is a false negative; each captured field
  that was not expected, or differs, is a false positive.
- handoff and booking offers: per case, decided (or offered) or not, against the expectation;
  a case that accepts either outcome ("any") counts for neither.
- grounding: an independent check of every reply shown, not the guard's own: a number or amount
  that appears in none of the case's passages, its tenant's facts, the visitor's messages so far
  or the meeting times offered is a violation. The guard's interventions are counted beside it.
- decisions: per case and decision, the union of what its turns decided (``decisions.py``)
  against ``expect.decisions``: expected and taken is a true positive, taken and not expected a
  false positive, expected and not taken a false negative; cases without ``expect.decisions``
  count for none. Also per language (the case's ``language``), as capture is.
- reply language: each reply whose language can be told (``core.languages.detect_language`` on
  its text, which is what the visitor reads), against ``expect.reply_language``.
- turn time (median, p95) and reply length (median, max characters).

Every figure is per split: ``summarize`` is given one split's results.
"""

from __future__ import annotations

import re
import statistics
import unicodedata
from dataclasses import dataclass, field
from typing import Any

from core.languages import SPOKEN, detect_language

from .cases import ANY, Case
from .decisions import DECISIONS
from .runner import CaseResult, TurnResult

# A number, with thousands separators and decimals: "1,200.50", "1.200,50", "49", "10:00".
_NUMBER = re.compile(r"\d+(?:[.,:]\d+)*")
_LIST_MARKER = re.compile(r"^\s*\d{1,2}[.)]\s", re.MULTILINE)


@dataclass
class Tally:
    tp: int = 0
    fp: int = 0
    fn: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {"precision": _ratio(self.tp, self.tp + self.fp),
                "recall": _ratio(self.tp, self.tp + self.fn),
                "tp": self.tp, "fp": self.fp, "fn": self.fn}


def _ratio(part: int, whole: int) -> float | None:
    return round(part / whole, 3) if whole else None


@dataclass
class Failure:
    case: Case
    problems: list[str] = field(default_factory=list)
    replies: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"case": self.case.id, "split": self.case.split, "category": self.case.category,
                "language": self.case.language, "problems": self.problems,
                "turns": list(self.case.turns), "replies": self.replies}


# --- capture ------------------------------------------------------------------------------------

def _normal(field_name: str, value: str) -> str:
    if field_name == "phone":
        return re.sub(r"\D", "", value)
    return " ".join(unicodedata.normalize("NFC", value).casefold().split())


def score_capture(result: CaseResult, tally: Tally) -> list[str]:
    expected, captured = result.case.expect.capture, result.captured
    problems = []
    for name in sorted(set(expected) | set(captured)):
        accepted = {_normal(name, v) for v in expected.get(name, ())}
        got = captured.get(name)
        if got is not None and _normal(name, got) in accepted:
            tally.tp += 1
            continue
        if accepted:
            tally.fn += 1
        if got is not None:
            tally.fp += 1
        wanted = " or ".join(repr(v) for v in expected.get(name, ())) or "nothing"
        problems.append(f"capture {name}: expected {wanted}, got {got!r}")
    return problems


# --- decisions, reply language -----------------------------------------------------------------

def score_decisions(result: CaseResult, tallies: dict[str, Tally]) -> list[str]:
    """``result``'s decisions against its case's, into ``tallies`` (decision -> Tally)."""
    expected = result.case.expect.decisions
    if expected is None:
        return []
    taken = result.decisions
    for decision in set(expected) | taken:
        tally = tallies.setdefault(decision, Tally())
        if decision in expected and decision in taken:
            tally.tp += 1
        elif decision in taken:
            tally.fp += 1
        else:
            tally.fn += 1
    missed, extra = [d for d in expected if d not in taken], sorted(taken - set(expected))
    if not missed and not extra:
        return []
    return ["decisions: expected [" + ", ".join(expected) + "], took ["
            + ", ".join(_in_order(taken)) + "]"
            + (f"; missed {', '.join(missed)}" if missed else "")
            + (f"; not asked for {', '.join(extra)}" if extra else "")]


def _in_order(decisions: set[str]) -> list[str]:
    return sorted(decisions, key=lambda d: (DECISIONS.index(d) if d in DECISIONS else len(DECISIONS), d))


@dataclass
class Languages:
    """Replies in the expected language, of those whose language could be told."""

    correct: int = 0
    replies: int = 0
    undetermined: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {"accuracy": _ratio(self.correct, self.replies), "correct": self.correct,
                "replies": self.replies, "undetermined": self.undetermined}


def reply_language(text: str) -> str | None:
    """The language a reply is written in, as the visitor reads it: its text identified by the
    service's own language identification. ``Message.turn`` records no language of the reply
    (the turn's is the visitor's, which the builtin's phrases fall back from to English), so the
    text is what shows which language the visitor got."""
    return detect_language(text) if text.strip() else None


def score_reply_language(result: CaseResult, tally: Languages) -> list[str]:
    expected = result.case.expect.reply_language
    if expected is None:
        return []
    problems = []
    for number, turn in enumerate(result.turns, start=1):
        found = reply_language(turn.reply)
        if found is None:
            tally.undetermined += 1
            continue
        tally.replies += 1
        if found == expected:
            tally.correct += 1
        else:
            problems.append(f"reply language: reply {number} in {found}, expected {expected}")
    return problems


# --- handoff, booking offers --------------------------------------------------------------------

def score_outcome(label: str, expected: bool | str, actual: bool, tally: Tally) -> list[str]:
    if expected == ANY:
        return []
    if expected and actual:
        tally.tp += 1
    elif actual:
        tally.fp += 1
    elif expected:
        tally.fn += 1
    if bool(expected) == actual:
        return []
    return [f"{label}: expected {'yes' if expected else 'no'}, got {'yes' if actual else 'no'}"]


# --- grounding ----------------------------------------------------------------------------------

def numbers(text: str) -> set[str]:
    """The numbers of ``text`` (ordered-list markers aside), without thousands separators or
    trailing decimal zeros: "$1,200.00", "1.200" and "1200" are one number."""
    found = set()
    for match in _NUMBER.findall(_LIST_MARKER.sub(" ", text)):
        if ":" in match:
            found.add(match)  # a time of day
            continue
        digits = match
        if re.fullmatch(r"\d{1,3}([.,])\d{3}(\1\d{3})*", digits):
            digits = re.sub(r"[.,]", "", digits)  # 1,200 or 1.200
        digits = digits.replace(",", ".")
        if "." in digits:
            digits = digits.rstrip("0").rstrip(".")
        found.add(digits)
    return found


def ungrounded(result: CaseResult, *, tenant_name: str) -> list[tuple[int, list[str]]]:
    """The replies (by turn number) that state numbers nothing in the case supports."""
    setup = result.case.setup
    allowed = numbers(" ".join([tenant_name, setup.booking_url, *setup.facts.values(),
                                *(f"{p.title} {p.text} {p.url}" for p in setup.knowledge),
                                *result.captured.values()]))  # the visitor's phone, as stored
    found = []
    for number, turn in enumerate(result.turns, start=1):
        allowed |= numbers(turn.message)
        allowed |= numbers(" ".join(str(a.get("label", "")) for a in turn.actions))
        unsupported = sorted(numbers(turn.reply) - allowed)
        if unsupported:
            found.append((number, unsupported))
    return found


# --- the summary --------------------------------------------------------------------------------

def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * fraction // 1))  # nearest rank
    return ordered[int(rank) - 1]


@dataclass
class _Tallies:
    capture: Tally = field(default_factory=Tally)
    handoff: Tally = field(default_factory=Tally)
    booking: Tally = field(default_factory=Tally)
    decisions: dict[str, Tally] = field(default_factory=dict)
    languages: Languages = field(default_factory=Languages)
    violations: int = 0
    stopped: int = 0


def _score(result: CaseResult, tallies: _Tallies, language: _Tallies) -> list[str]:
    """Scores one case into ``tallies`` and its language's ``language``; what went wrong in it.
    Each part is scored once, into a throwaway tally, and added to both."""
    expect = result.case.expect
    one = _Tallies()
    problems = [
        *score_capture(result, one.capture),
        *score_outcome("handoff", expect.handoff, result.handed_off, one.handoff),
        *score_outcome("booking offer", expect.booking_offer, result.offered_booking,
                       one.booking),
        *score_decisions(result, one.decisions),
        *score_reply_language(result, one.languages),
    ]
    for number, unsupported in ungrounded(result, tenant_name=result.case.tenant):
        one.violations += 1
        problems.append(f"grounding: reply {number} states {', '.join(unsupported)}, "
                        "supported by nothing in the case")
    one.stopped = sum(turn.stopped == "grounding" for turn in result.turns)
    for into in (tallies, language):
        _add(into, one)
    return problems


def _add(into: _Tallies, one: _Tallies) -> None:
    for name in ("capture", "handoff", "booking"):
        _add_tally(getattr(into, name), getattr(one, name))
    for decision, tally in one.decisions.items():
        _add_tally(into.decisions.setdefault(decision, Tally()), tally)
    for name in ("correct", "replies", "undetermined"):
        setattr(into.languages, name, getattr(into.languages, name) + getattr(one.languages, name))
    into.violations += one.violations
    into.stopped += one.stopped


def _add_tally(into: Tally, one: Tally) -> None:
    into.tp, into.fp, into.fn = into.tp + one.tp, into.fp + one.fp, into.fn + one.fn


def summarize(results: list[CaseResult], *, split: str = "dev") -> dict[str, Any]:
    """The evaluation's figures for one split's results and the failures of each case,
    JSON-ready: overall, and per language where a language's figures mean something on their
    own (capture, decisions, reply language)."""
    tallies = _Tallies()
    by_language: dict[str, _Tallies] = {}
    failures = []
    for result in results:
        language = by_language.setdefault(result.case.language or "?", _Tallies())
        problems = _score(result, tallies, language)
        if problems:
            failures.append(Failure(case=result.case, problems=problems,
                                    replies=[turn.reply for turn in result.turns]))
    turns = [turn for result in results for turn in result.turns]
    languages = languages_in_order(by_language)
    decided = sum(result.case.expect.decisions is not None for result in results)
    # Every decision of the vocabulary once any case names decisions, and any other one taken.
    rows = _in_order(set(tallies.decisions) | (set(DECISIONS) if decided else set()))
    return {
        "split": split, "cases": len(results), "turns": len(turns), "languages": languages,
        "capture": {**tallies.capture.as_dict(), "byLanguage": {
            lang: by_language[lang].capture.as_dict() for lang in languages}},
        "handoff": tallies.handoff.as_dict(),
        "bookingOffer": tallies.booking.as_dict(),
        "decisions": {
            decision: {**tallies.decisions.get(decision, Tally()).as_dict(), "byLanguage": {
                lang: by_language[lang].decisions.get(decision, Tally()).as_dict()
                for lang in languages}}
            for decision in rows},
        "decisionCases": decided,
        "replyLanguage": {**tallies.languages.as_dict(), "byLanguage": {
            lang: by_language[lang].languages.as_dict() for lang in languages}},
        "grounding": {"violations": tallies.violations, "guardStopped": tallies.stopped},
        **_timing_and_length(turns),
        "failures": [failure.as_dict() for failure in failures],
    }


def languages_in_order(languages) -> list[str]:
    """The agent's languages first, in their order, then any others."""
    return [*(lang for lang in SPOKEN if lang in languages),
            *sorted(lang for lang in languages if lang not in SPOKEN)]


def _timing_and_length(turns: list[TurnResult]) -> dict[str, Any]:
    seconds = [turn.seconds for turn in turns] or [0.0]
    lengths = [len(turn.reply) for turn in turns] or [0]
    return {"turnSeconds": {"median": round(statistics.median(seconds), 4),
                            "p95": round(_percentile(seconds, 0.95), 4)},
            "replyChars": {"median": int(statistics.median(lengths)), "max": max(lengths)}}
