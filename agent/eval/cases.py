"""The evaluation's cases: YAML files of scripted conversations and what a good agent does in
each (docs/agent.md, "Evaluation"). ``load_cases`` reads and checks a file, or the files of the
named splits; whatever is wrong with one is a ``CaseError`` that names the case and the field.

Every shipped case belongs to a split (agent/eval/data/README.md, "The split rule"): **dev**
(``cases.yaml`` and ``data/conversations/dev.yaml``), the only material for tuning, and **test**
(``data/conversations/test.yaml``), never tuned on, which the aims are measured on."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from core.languages import ISO_639_1

from .decisions import DECISIONS

DEFAULT_PATH = Path(__file__).with_name("cases.yaml")
CONVERSATIONS = Path(__file__).with_name("data") / "conversations"
SPLITS = ("dev", "test")
# Each split's files. Each file has its own tenant, and its own passages and facts, which its
# cases name as YAML anchors.
SPLIT_FILES = {"dev": (DEFAULT_PATH, CONVERSATIONS / "dev.yaml"),
               "test": (CONVERSATIONS / "test.yaml",)}
CONTACT_FIELDS = ("email", "name", "company", "title", "phone")
FACT_FIELDS = ("product", "pricing_url", "hours")
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml's, where PyYAML has it
ANY = "any"  # an expectation that either outcome meets
MAX_MESSAGE_CHARS = 4000  # as the chat API accepts


class CaseError(ValueError):
    """A cases file that cannot be run, and why."""


@dataclass(frozen=True)
class KnowledgePassage:
    title: str
    text: str
    url: str = ""


@dataclass(frozen=True)
class Setup:
    """What the case's throwaway tenant has: knowledge, facts the agent may state, a booking
    link."""

    knowledge: tuple[KnowledgePassage, ...] = ()
    facts: dict[str, str] = field(default_factory=dict)
    booking_url: str = ""


@dataclass(frozen=True)
class Expect:
    capture: dict[str, tuple[str, ...]] = field(default_factory=dict)  # field: accepted values
    handoff: bool | str = False
    booking_offer: bool | str = ANY
    # What the visitor's messages express over the conversation (``DECISIONS``); None when the
    # case does not say, [] when they express none.
    decisions: tuple[str, ...] | None = None
    reply_language: str | None = None  # ISO 639-1: the language every reply should be in


@dataclass(frozen=True)
class Case:
    id: str
    category: str
    language: str
    turns: tuple[str, ...]
    setup: Setup
    expect: Expect
    split: str = "dev"  # the split of the file it came from
    tenant: str = "Evaluation"  # its file's ``tenant``: the throwaway tenant's name


@dataclass(frozen=True)
class CaseSet:
    cases: tuple[Case, ...]
    files: tuple[Path, ...] = ()

    @property
    def categories(self) -> set[str]:
        return {case.category for case in self.cases}


def load_cases(path: str | Path | None = None, *,
               splits: tuple[str, ...] | list[str] | None = None) -> CaseSet:
    """The cases of the file ``path``, or of the named ``splits`` (``SPLIT_FILES``; both when
    neither is given), checked: ``CaseError`` names what is wrong and where. Ids are unique
    across everything loaded.

    A shipped file's cases are in its split; any other file's cases are in the split its
    ``split`` key names (``dev`` when it names none)."""
    if path is not None and splits is not None:
        raise ValueError("load_cases takes a path or splits, not both.")
    if path is not None:
        files = [(Path(path), _split_of(Path(path)))]
    else:
        unknown = [name for name in splits or SPLITS if name not in SPLITS]
        if unknown:
            raise CaseError(f"unknown split {unknown[0]!r}; expected one of {', '.join(SPLITS)}.")
        files = [(file, name) for name in SPLITS if name in (splits or SPLITS)
                 for file in SPLIT_FILES[name]]
    cases: list[Case] = []
    seen: dict[str, Path] = {}
    for file, split in files:
        for index, case in enumerate(_load_file(file, split=split), start=1):
            if case.id in seen:
                where = "an earlier case" + ("" if seen[case.id] == file else f" in {seen[case.id]}")
                raise CaseError(f"{file}: case {case.id!r} (#{index}): id: used by {where}.")
            seen[case.id] = file
            cases.append(case)
    return CaseSet(cases=tuple(cases), files=tuple(file for file, _ in files))


def _split_of(path: Path) -> str | None:
    """The split of a shipped file; None for any other (its own ``split`` key decides)."""
    resolved = path.resolve()
    return next((name for name, files in SPLIT_FILES.items()
                 if any(resolved == file.resolve() for file in files)), None)


def _load_file(path: Path, *, split: str | None) -> list[Case]:
    data = _read(path)
    tenant = data.get("tenant", "Evaluation")
    if not isinstance(tenant, str) or not tenant.strip():
        raise CaseError(f"{path}: tenant: expected the tenant's name, a string.")
    if split is None:
        split = data.get("split", "dev")
        if split not in SPLITS:
            raise CaseError(f"{path}: split: expected one of {', '.join(SPLITS)}.")
    return [replace(_case(raw, where=_Where(path, index)), split=split,
                    tenant=tenant.strip()[:200])
            for index, raw in enumerate(data["cases"], start=1)]


def _read(path: Path) -> dict[str, Any]:
    try:
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=_LOADER)
    except OSError as exc:
        raise CaseError(f"{path}: cannot be read ({exc.strerror or exc}).") from exc
    except yaml.YAMLError as exc:
        raise CaseError(f"{path}: not valid YAML: {exc}") from exc
    if not isinstance(data, dict) or not isinstance(data.get("cases"), list) or not data["cases"]:
        raise CaseError(f"{path}: expected a mapping with a non-empty list under 'cases'.")
    return data


@dataclass
class _Where:
    """Where a check is, for the error it raises."""

    path: Path
    index: int
    case_id: str | None = None

    def error(self, field_name: str, problem: str) -> CaseError:
        case = f"case {self.case_id!r} (#{self.index})" if self.case_id else f"case #{self.index}"
        return CaseError(f"{self.path}: {case}: {field_name}: {problem}")


def _case(raw: Any, *, where: _Where) -> Case:
    if not isinstance(raw, dict):
        raise where.error("case", "expected a mapping with id, turns and expect.")
    _known(raw, {"id", "category", "language", "turns", "setup", "expect"}, "case", where)
    case_id = raw.get("id")
    if not isinstance(case_id, str) or not case_id.strip():
        raise where.error("id", "required, a non-empty string.")
    where.case_id = case_id
    return Case(id=case_id, category=_text(raw, "category", where, default="other"),
                language=_text(raw, "language", where, default=""),
                turns=_turns(raw.get("turns"), where), setup=_setup(raw.get("setup"), where),
                expect=_expect(raw.get("expect"), where))


def _known(raw: dict, allowed: set[str], name: str, where: _Where) -> None:
    unknown = sorted(str(key) for key in raw if key not in allowed)
    if unknown:
        raise where.error(f"{name}.{unknown[0]}" if name != "case" else unknown[0],
                          f"unknown field; expected one of {', '.join(sorted(allowed))}.")


def _text(raw: dict, key: str, where: _Where, *, default: str, label: str | None = None) -> str:
    value = raw.get(key, default)
    if value is None:
        return default
    if not isinstance(value, str):
        raise where.error(label or key, f"expected a string, got {type(value).__name__}.")
    return value.strip()


def _turns(raw: Any, where: _Where) -> tuple[str, ...]:
    if not isinstance(raw, list) or not raw:
        raise where.error("turns", "required, a non-empty list of the visitor's messages.")
    for number, message in enumerate(raw, start=1):
        if not isinstance(message, str) or not message.strip():
            raise where.error(f"turns[{number}]", "expected a non-empty string.")
        if len(message) > MAX_MESSAGE_CHARS:
            raise where.error(f"turns[{number}]", f"at most {MAX_MESSAGE_CHARS} characters.")
    return tuple(raw)


def _setup(raw: Any, where: _Where) -> Setup:
    if raw is None:
        return Setup()
    if not isinstance(raw, dict):
        raise where.error("setup", "expected a mapping (knowledge, facts, booking_url).")
    _known(raw, {"knowledge", "facts", "booking_url"}, "setup", where)
    knowledge = raw.get("knowledge") or []
    if not isinstance(knowledge, list):
        raise where.error("setup.knowledge", "expected a list of passages (title, text, url).")
    facts = raw.get("facts") or {}
    if not isinstance(facts, dict):
        raise where.error("setup.facts", f"expected a mapping of {', '.join(FACT_FIELDS)}.")
    _known(facts, set(FACT_FIELDS), "setup.facts", where)
    return Setup(
        knowledge=tuple(_passage(p, f"setup.knowledge[{n}]", where)
                        for n, p in enumerate(knowledge, start=1)),
        facts={key: _text(facts, key, where, default="", label=f"setup.facts.{key}")
               for key in FACT_FIELDS if facts.get(key)},
        booking_url=_url(raw, "booking_url", where, label="setup.booking_url"),
    )


def _passage(raw: Any, label: str, where: _Where) -> KnowledgePassage:
    if not isinstance(raw, dict):
        raise where.error(label, "expected a mapping with title and text.")
    _known(raw, {"title", "text", "url"}, label, where)
    title = _text(raw, "title", where, default="", label=f"{label}.title")
    text = _text(raw, "text", where, default="", label=f"{label}.text")
    if not title or not text:
        raise where.error(f"{label}.{'text' if title else 'title'}", "required, a non-empty string.")
    return KnowledgePassage(title=title, text=text, url=_url(raw, "url", where, label=f"{label}.url"))


def _url(raw: dict, key: str, where: _Where, *, label: str) -> str:
    value = _text(raw, key, where, default="", label=label)
    if value and not value.startswith(("http://", "https://")):
        raise where.error(label, "expected an http(s) URL.")
    return value


def _expect(raw: Any, where: _Where) -> Expect:
    if raw is None:
        return Expect()
    if not isinstance(raw, dict):
        raise where.error("expect", "expected a mapping (capture, handoff, booking_offer, "
                                    "decisions, reply_language).")
    _known(raw, {"capture", "handoff", "booking_offer", "decisions", "reply_language"}, "expect",
           where)
    return Expect(capture=_capture(raw.get("capture"), where),
                  handoff=_outcome(raw, "handoff", where, default=False),
                  booking_offer=_outcome(raw, "booking_offer", where, default=ANY),
                  decisions=_decisions(raw, where),
                  reply_language=_language(raw, where))


def _decisions(raw: dict, where: _Where) -> tuple[str, ...] | None:
    if "decisions" not in raw:
        return None
    value = raw["decisions"]
    if not isinstance(value, list):
        raise where.error("expect.decisions", f"expected a list of {', '.join(DECISIONS)}.")
    for number, decision in enumerate(value, start=1):
        if decision not in DECISIONS:
            raise where.error(f"expect.decisions[{number}]",
                              f"{decision!r} is not a decision; expected one of "
                              f"{', '.join(DECISIONS)}.")
        if decision in value[:number - 1]:
            raise where.error(f"expect.decisions[{number}]", f"{decision!r} is listed twice.")
    return tuple(value)


def _language(raw: dict, where: _Where) -> str | None:
    value = raw.get("reply_language")
    if value is None:
        return None
    if not isinstance(value, str) or value.strip().lower() not in ISO_639_1:
        raise where.error("expect.reply_language", "expected an ISO 639-1 code (en, de, it, …).")
    return value.strip().lower()


def _capture(raw: Any, where: _Where) -> dict[str, tuple[str, ...]]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise where.error("expect.capture", f"expected a mapping of {', '.join(CONTACT_FIELDS)}.")
    _known(raw, set(CONTACT_FIELDS), "expect.capture", where)
    capture: dict[str, tuple[str, ...]] = {}
    for key, value in raw.items():
        values = value if isinstance(value, list) else [value]
        if not values or not all(isinstance(v, str) and v.strip() for v in values):
            raise where.error(f"expect.capture.{key}",
                              "expected a non-empty string, or a list of accepted strings.")
        capture[key] = tuple(v.strip() for v in values)
    return capture


def _outcome(raw: dict, key: str, where: _Where, *, default: bool | str) -> bool | str:
    value = raw.get(key, default)
    if value is not None and (isinstance(value, bool) or value == ANY):
        return value
    raise where.error(f"expect.{key}", f"expected true, false or {ANY!r}.")
