"""What the evaluation measures over the cases' results (docs/agent.md, "Evaluation").

- capture: each expected contact field found on the lead with an accepted value is a true
  positive; each expected field missing or different is a false negative; each captured field
  that was not expected, or differs, is a false positive.
- handoff and booking offers: per case, decided (or offered) or not, against the expectation;
  a case that accepts either outcome ("any") counts for neither.
- grounding: an independent check of every reply shown, not the guard's own: a number or amount
  that appears in none of the case's passages, its tenant's facts, the visitor's messages so far
  or the meeting times offered is a violation. The guard's interventions are counted beside it.
- turn time (median, p95) and reply length (median, max characters).
"""

from __future__ import annotations

import re
import statistics
import unicodedata
from dataclasses import dataclass, field
from typing import Any

from .cases import ANY, Case
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
        return {"case": self.case.id, "category": self.case.category,
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
    violations: int = 0
    stopped: int = 0


def _score(result: CaseResult, tallies: _Tallies, *, tenant_name: str) -> list[str]:
    """Scores one case into ``tallies``; what went wrong in it."""
    expect = result.case.expect
    problems = [
        *score_capture(result, tallies.capture),
        *score_outcome("handoff", expect.handoff, result.handed_off, tallies.handoff),
        *score_outcome("booking offer", expect.booking_offer, result.offered_booking,
                       tallies.booking),
    ]
    for number, unsupported in ungrounded(result, tenant_name=tenant_name):
        tallies.violations += 1
        problems.append(f"grounding: reply {number} states {', '.join(unsupported)}, "
                        "supported by nothing in the case")
    tallies.stopped += sum(turn.stopped == "grounding" for turn in result.turns)
    return problems


def summarize(results: list[CaseResult], *, tenant_name: str) -> dict[str, Any]:
    """The evaluation's figures and the failures of each case, JSON-ready."""
    tallies = _Tallies()
    failures = []
    for result in results:
        problems = _score(result, tallies, tenant_name=tenant_name)
        if problems:
            failures.append(Failure(case=result.case, problems=problems,
                                    replies=[turn.reply for turn in result.turns]))
    turns = [turn for result in results for turn in result.turns]
    return {
        "cases": len(results), "turns": len(turns),
        "capture": tallies.capture.as_dict(), "handoff": tallies.handoff.as_dict(),
        "bookingOffer": tallies.booking.as_dict(),
        "grounding": {"violations": tallies.violations, "guardStopped": tallies.stopped},
        **_timing_and_length(turns),
        "failures": [failure.as_dict() for failure in failures],
    }


def _timing_and_length(turns: list[TurnResult]) -> dict[str, Any]:
    seconds = [turn.seconds for turn in turns] or [0.0]
    lengths = [len(turn.reply) for turn in turns] or [0]
    return {"turnSeconds": {"median": round(statistics.median(seconds), 4),
                            "p95": round(_percentile(seconds, 0.95), 4)},
            "replyChars": {"median": int(statistics.median(lengths)), "max": max(lengths)}}
