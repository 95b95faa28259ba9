"""The split rule (docs/agent.md, "Evaluation", "The split rule"): no sentence of the test split,
nor a near copy of one, is among the agent's example phrasings, its rules or the dev split; and
the check itself catches one planted there. Nothing here prints a test sentence: an offence names
the test case and the offending place only."""

import re
from dataclasses import fields
from pathlib import Path

from agent.eval.cases import SPLIT_FILES, load_cases
from agent.eval.split import (
    MIN_WORDS,
    Offence,
    default_phrasing_files,
    default_rule_modules,
    normalise,
    offences,
)

ROOT = Path(__file__).resolve().parents[2]


def test_no_test_sentence_is_in_the_phrasings_the_rules_or_the_dev_split():
    assert ROOT / "agent" / "understanding" / "examples.yaml" in default_phrasing_files()
    modules = default_rule_modules()
    assert {ROOT / "agent" / "rules.py", ROOT / "agent" / "phrases.py"} <= set(modules)
    assert not any("eval" in path.relative_to(ROOT / "agent").parts for path in modules)
    found = offences()
    assert found == [], "\n".join(map(str, found))


def test_an_offence_carries_no_test_text():
    assert {f.name for f in fields(Offence)} == {"case", "turn", "kind", "source", "line",
                                                 "similarity"}


def test_normalising():
    assert normalise("  Ça  va, Zoë?! L'équipe_de   VENTE… ") == "ca va zoe l equipe de vente"


def _a_test_message(*, least: int = 8) -> tuple[str, int, str]:
    """A test case's id, the number of its message, and the message: the first with ``least``
    words or more and a single sentence (read by code, never shown)."""
    for case in load_cases(splits=["test"]).cases:
        for number, message in enumerate(case.turns, start=1):
            words = normalise(message).split()
            if len(words) >= least and not re.search(r"[.!?;…]\s|\n", message.strip()):
                return case.id, number, message
    raise AssertionError("no test message long enough")


def _changed(message: str) -> str:
    """A near copy: two letters of its longest word swapped, in capitals, other stops."""
    words = message.split()
    longest = max(range(len(words)), key=lambda i: len(words[i]))
    word = words[longest]
    words[longest] = word[0] + word[2] + word[1] + word[3:]
    return " ".join(words).upper() + " !!"


def _examples(tmp_path: Path, *lines: str) -> Path:
    path = tmp_path / "examples.yaml"
    body = "\n".join(f"  - {_quoted(line)}" for line in lines)
    path.write_text(f"# planted\nperson:\n{body}\n", encoding="utf-8")
    return path


def _quoted(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _check(**sources) -> list[Offence]:
    return offences(**{"phrasing_files": [], "rule_modules": [], "dev_files": [], **sources})


def test_the_check_catches_a_planted_near_copy_and_an_equal_one(tmp_path):
    case, number, message = _a_test_message()
    examples = _examples(tmp_path, "can i talk to someone from sales", _changed(message), message)
    found = _check(phrasing_files=[examples])
    assert {(o.case, o.turn, o.kind, o.line) for o in found} >= {
        (case, number, "near copy", 4), (case, number, "equal", 5)}
    assert all(o.source == str(examples) for o in found)
    near = next(o for o in found if o.kind == "near copy" and o.line == 4)
    assert 0.9 <= near.similarity < 1


def test_the_check_catches_a_planted_copy_in_the_dev_split(tmp_path):
    case, number, message = _a_test_message()
    dev = tmp_path / "dev.yaml"
    dev.write_text("cases:\n- id: dev-planted\n  turns:\n  - \"hello\"\n"
                   f"  - {_quoted('ok. ' + _changed(message))}\n", encoding="utf-8")
    found = _check(dev_files=[dev])
    assert [(o.case, o.turn, o.kind, o.line) for o in found] == [(case, number, "near copy", 5)]


def test_short_greetings_may_coincide(tmp_path):
    short = next((message for case in load_cases(splits=["test"]).cases
                  for message in case.turns if len(normalise(message).split()) < MIN_WORDS), None)
    assert short is not None
    assert _check(phrasing_files=[_examples(tmp_path, short)]) == []


def test_the_check_catches_a_rule_written_from_a_test_sentence(tmp_path):
    """A regex that matches the whole sentence and spells its words is a copy, even when its
    text reads nothing like the sentence; one that matches it by a keyword or two is not."""
    case, number, message = _a_test_message()
    words = normalise(message).split()
    gap = r"(?:\W+(?:(?:really|very|so|quite|just|um)\W+)?)"
    written = r"(?i)\W*" + gap.join(re.escape(word) for word in words) + r"\W*"
    generic = r"(?is).*\b(?:" + "|".join(re.escape(w) for w in words[:3]) + r")\b.*"
    rules = tmp_path / "rules.py"
    rules.write_text("import re\n\n"
                     f"GAP = {gap!r}\n"
                     f"WRITTEN = re.compile({written!r})\n"
                     f"GENERIC = re.compile({generic!r}, re.IGNORECASE)\n", encoding="utf-8")
    # The checker never imports the module: the regexes are what it reads in its text.
    assert re.fullmatch(written, message.strip().rstrip(".!?…")) or re.fullmatch(
        written, normalise(message))
    found = _check(rule_modules=[rules])
    assert [(o.case, o.turn, o.kind, o.line) for o in found] == [(case, number, "rule regex", 4)]


def test_the_dev_and_test_files_are_the_shipped_ones():
    assert [p.name for p in SPLIT_FILES["dev"]] == ["cases.yaml", "dev.yaml"]
    assert [p.name for p in SPLIT_FILES["test"]] == ["test.yaml"]
