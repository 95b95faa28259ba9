"""The knowledge evaluation: questions about a set of documents, asked of the service's real
retrieval and chat turn (docs/agent.md, "Evaluation", "The knowledge set").

A run uploads the set's documents to a throwaway tenant, as a tenant would (``document_create``
with type ``markdown``, then ``document_index``, as the worker would), inside one transaction
that is always rolled back (for why, see ``runner``). Then, for each question of the chosen split:

- retrieval: ``retrieve(..., limit=3)``, and the rank of the expected document among the
  distinct documents it returned: recall@3 and MRR, over the questions the documents answer;
- the answer: one turn of the real chat, from a visitor of its own, with the agent under test.
  It carries the asked fact when one of the question's ``facts`` occurs in it (case, whitespace
  and thousands separators aside). On a question the documents do not answer (``absent``), it
  invents when it states something of the documents as fact (``invented``).

The test split's failures are never listed (agent/eval/data/README.md, "The split rule"): its
figures are reported, not read for tuning.
"""

from __future__ import annotations

import re
import statistics
import time
import unicodedata
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from django.db import transaction

from knowledge.models import DocumentStatus
from knowledge.retrieval import retrieve
from knowledge.services import document_create, document_index
from tenants.services import tenant_create, tenant_set_agent

from ..phrases import PHRASES
from ..providers import provider_for
from .cases import CaseError
from .chat import the_chat
from .metrics import numbers
from .runner import Agent, eval_staff

DEFAULT_DIR = Path(__file__).with_name("data") / "knowledge"
QUESTIONS_FILE = "questions.yaml"
SPLITS = ("dev", "test")
KINDS = ("lexical", "paraphrase", "crosslingual", "absent")
ABSENT = "absent"
RETRIEVED = 3  # passages asked of retrieval: recall@3
TENANT_NAME = "Quayline"
# Only the dev split's failures are shown: reading the test split's would be tuning on it.
LISTED_SPLITS = ("dev",)
# A document's sentence this short ("Yes, it is.") proves no quotation.
QUOTE_WORDS = 5

# issue 27, "Aims": the builtin agent on the test split.
AIMS_SPLIT = "test"
AIMS_PROVIDER = "builtin"
AIMS: tuple[tuple[str, tuple[str, ...], str, float], ...] = (
    ("paraphrase retrieval recall@3", ("byKind", "paraphrase", "recallAt3"), ">=", 0.90),
    ("crosslingual retrieval recall@3", ("byKind", "crosslingual", "recallAt3"), ">=", 0.90),
    ("answers with the asked fact", ("overall", "factRate"), ">=", 0.85),
    ("invented facts on absent questions", ("overall", "invented"), "<=", 0),
)


class KnowledgeSetError(CaseError):
    """A knowledge set that cannot be run, and why."""


# --- the set ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class SetDocument:
    name: str  # the file name, which questions name
    title: str
    text: str


@dataclass(frozen=True)
class Question:
    id: str
    question: str
    language: str
    kind: str
    document: str | None
    facts: tuple[str, ...]


@dataclass(frozen=True)
class KnowledgeSet:
    directory: Path
    documents: tuple[SetDocument, ...]
    splits: dict[str, tuple[Question, ...]]


def load_knowledge_set(directory: str | Path = DEFAULT_DIR) -> KnowledgeSet:
    """The documents (``*.md``) and the questions (``questions.yaml``) of ``directory``,
    checked; ``KnowledgeSetError`` names what is wrong and where."""
    directory = Path(directory)
    paths = sorted(directory.glob("*.md"))
    if not paths:
        raise KnowledgeSetError(f"{directory}: no documents (*.md).")
    documents = tuple(SetDocument(name=p.name, title=_title(text, p), text=text)
                      for p in paths for text in [p.read_text(encoding="utf-8")])
    path = directory / QUESTIONS_FILE
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise KnowledgeSetError(f"{path}: cannot be read ({exc.strerror or exc}).") from exc
    except yaml.YAMLError as exc:
        raise KnowledgeSetError(f"{path}: not valid YAML ({exc}).") from exc
    if not isinstance(data, dict) or not any(data.get(split) for split in SPLITS):
        raise KnowledgeSetError(f"{path}: expected a non-empty list under 'dev' or 'test'.")
    names = {d.name for d in documents}
    seen: set[str] = set()
    splits = {split: tuple(_question(item, f"{split}[{number}]", names, seen)
                           for number, item in enumerate(data.get(split) or [], start=1))
              for split in SPLITS}
    return KnowledgeSet(directory=directory, documents=documents, splits=splits)


def _title(text: str, path: Path) -> str:
    """The document's first heading, else its file name."""
    match = re.search(r"^\s*#{1,6}\s+(.+?)\s*#*\s*$", text, re.MULTILINE)
    return match.group(1).strip() if match else path.stem


def _question(item: Any, where: str, documents: set[str], seen: set[str]) -> Question:
    if not isinstance(item, dict):
        raise KnowledgeSetError(f"question {where}: expected a mapping.")
    qid = item.get("id")
    if not isinstance(qid, str) or not qid:
        raise KnowledgeSetError(f"question {where}: id: required.")
    where = f"question {qid!r}"
    if qid in seen:
        raise KnowledgeSetError(f"{where}: id: used by an earlier question.")
    seen.add(qid)
    for name in ("question", "language", "kind"):
        if not isinstance(item.get(name), str) or not item[name].strip():
            raise KnowledgeSetError(f"{where}: {name}: expected a non-empty string.")
    kind, document, facts = item["kind"], item.get("document"), item.get("facts") or []
    if kind not in KINDS:
        raise KnowledgeSetError(f"{where}: kind: expected one of {', '.join(KINDS)}.")
    if not isinstance(facts, list) or not all(isinstance(f, str) and f.strip() for f in facts):
        raise KnowledgeSetError(f"{where}: facts: expected a list of strings.")
    if kind == ABSENT:
        if document is not None or facts:
            raise KnowledgeSetError(f"{where}: an absent question names no document and no facts.")
    else:
        if document not in documents:
            raise KnowledgeSetError(f"{where}: document: expected one of {', '.join(sorted(documents))}.")
        if not facts:
            raise KnowledgeSetError(f"{where}: facts: required (the strings an answer must hold).")
    return Question(id=qid, question=item["question"].strip(), language=item["language"],
                    kind=kind, document=document, facts=tuple(facts))


# --- a run --------------------------------------------------------------------------------------

@dataclass
class QuestionResult:
    question: Question
    retrieved: list[tuple[str, float | None]]  # distinct documents, best first, with the cosine
    reply: str
    seconds: float
    fact: bool  # the reply holds one of the question's facts
    invented: list[str] = field(default_factory=list)  # why the reply states something as fact
    stopped: str | None = None  # Message.turn["stopped"]: what the reply guard cut it for

    @property
    def rank(self) -> int | None:
        """The expected document's rank among the distinct documents retrieved."""
        names = [name for name, _ in self.retrieved]
        return names.index(self.question.document) + 1 if self.question.document in names else None


def run_knowledge(knowledge_set: KnowledgeSet, *, split: str, agent: Agent) -> list[QuestionResult]:
    """Every question of ``split`` against a throwaway tenant holding the set's documents."""
    questions = knowledge_set.splits.get(split) or ()
    if not questions:
        raise KnowledgeSetError(f"{knowledge_set.directory}: the {split} split has no questions.")
    with transaction.atomic():
        try:
            return _run(knowledge_set, questions, agent=agent)
        finally:
            transaction.set_rollback(True)


def _run(knowledge_set: KnowledgeSet, questions: tuple[Question, ...], *,
         agent: Agent) -> list[QuestionResult]:
    tenant, names = _tenant(knowledge_set, agent=agent)
    judge = Judge(knowledge_set)
    chat = the_chat()
    results = []
    for question in questions:
        passages = retrieve(tenant=tenant, livemode=True, query=question.question, limit=RETRIEVED)
        retrieved: dict[str, float | None] = {}
        for passage in passages:
            retrieved.setdefault(names.get(passage.document_id, "?"), passage.similarity)
        started = time.perf_counter()
        reply = chat.say(tenant=tenant, visitor=f"eval-{uuid.uuid4().hex[:12]}",
                         message=question.question, session=None, provider=provider_for(tenant))
        seconds = time.perf_counter() - started
        labels = " ".join(str(action.get("label", "")) for action in reply.actions)
        results.append(QuestionResult(
            question=question, retrieved=list(retrieved.items()), reply=reply.content,
            seconds=seconds, fact=has_fact(reply.content, question.facts),
            stopped=reply.turn.get("stopped"),
            invented=(judge.invented(reply.content, question=question.question, shown=labels)
                      if question.kind == ABSENT else [])))
    return results


def _tenant(knowledge_set: KnowledgeSet, *, agent: Agent):
    tenant, _ = tenant_create(name=TENANT_NAME)
    tenant_set_agent(tenant=tenant, provider=agent.provider, model=agent.model or None,
                     api_key=agent.api_key or None, base_url=agent.base_url or None)
    # Someone to hand off to, as a real tenant has.
    eval_staff(tenant)
    names = {}
    for doc in knowledge_set.documents:
        document = document_create(tenant=tenant, livemode=True, title=doc.title, type="markdown",
                                   data=doc.text.encode(), filename=doc.name)
        # Indexed here, as a worker would: the task enqueued after commit never runs.
        indexed = document_index(document_id=document.pk)
        if indexed is None or indexed.status != DocumentStatus.READY:
            reason = indexed.failure_reason if indexed is not None else "deleted"
            raise KnowledgeSetError(f"{doc.name}: could not be indexed ({reason}).")
        names[document.pk] = doc.name
    return tenant, names


# --- judging a reply ----------------------------------------------------------------------------

# A thousands separator: between a digit and a group of exactly three that ends the number.
_THOUSANDS = re.compile(r"(?<=\d)[,.'\u00a0\u202f\u2009](?=\d{3}(?!\d))")


def normal(text: str) -> str:
    """``text`` compared as a reader would: case, runs of whitespace (no-break ones too) and
    thousands separators aside ("$1,800" is "$1800", "1.800 €" is "1800 €")."""
    # Separators first: NFKC makes the narrow no-break space an ordinary one.
    text = unicodedata.normalize("NFKC", _THOUSANDS.sub("", text)).casefold()
    return " ".join(text.split())


def has_fact(reply: str, facts: tuple[str, ...] | list[str]) -> bool:
    """Whether ``reply`` holds one of ``facts``."""
    said = normal(reply)
    return any(normal(fact) in said for fact in facts)


_HEADING = re.compile(r"^\s*#{1,6}\s")
_ITEM = re.compile(r"^\s*(?:[-*+•]|\d{1,3}[.)])\s+")
_QUOTE = re.compile(r"^\s*(?:>\s*)+")
_END = re.compile(r"(?<=[.!?])\s+")


def sentences(text: str) -> list[str]:
    """The prose sentences of a Markdown document: paragraphs and list items joined across
    their wrapped lines and cut where sentences end; headings and tables are not prose."""
    blocks: list[list[str]] = [[]]
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or _HEADING.match(line) or stripped.startswith("|"):
            blocks.append([])
            continue
        if _ITEM.match(line):
            blocks.append([])
        blocks[-1].append(_QUOTE.sub("", _ITEM.sub("", line)).strip())
    found = []
    for block in blocks:
        prose = re.sub(r"\*\*|__|`", "", " ".join(block))
        found += [s.strip() for s in _END.split(prose) if s.strip()]
    return found


def _words(text: str) -> str:
    """``normal`` text as bare words, for quotations: punctuation and Markdown aside."""
    return " ".join(re.sub(r"[^\w%$€£]+", " ", normal(text)).split())


class Judge:
    """Tells whether a reply to a question the documents do not answer states something of
    theirs as fact. It does when it

    - quotes a whole sentence of a document (of at least ``QUOTE_WORDS`` words);
    - cites a document as the builtin agent does (its ``answer`` phrase, in any language, with
      a document's title as the source);
    - states a number the question does not hold, nor the meeting times the reply offers: one
      of the documents' figures, or one found nowhere, which is invented all the more.
    """

    def __init__(self, knowledge_set: KnowledgeSet):
        self.quotes = {key for doc in knowledge_set.documents for sentence in sentences(doc.text)
                       for key in [_words(sentence)] if len(key.split()) >= QUOTE_WORDS}
        self.figures = numbers(" ".join(doc.text for doc in knowledge_set.documents))
        self.citations = _citations([doc.title for doc in knowledge_set.documents])

    def invented(self, reply: str, *, question: str, shown: str = "") -> list[str]:
        why = []
        words = f" {_words(reply)} "
        quoted = sorted(q for q in self.quotes if f" {q} " in words)
        if quoted:
            why.append(f"quotes a document: {quoted[0]!r}")
        cited = next((m.group(0) for c in self.citations for m in [c.search(reply)] if m), None)
        if cited:
            why.append(f"cites a document: {cited!r}")
        stated = sorted(numbers(reply) - numbers(question) - numbers(shown))
        ours = [n for n in stated if n in self.figures]
        if ours:
            why.append(f"states the documents' figures {', '.join(ours)}")
        others = [n for n in stated if n not in self.figures]
        if others:
            why.append(f"states figures found nowhere: {', '.join(others)}")
        return why


def _citations(titles: list[str]) -> list[re.Pattern[str]]:
    """The builtin agent's phrases that name a document as their source, in each language,
    each with one of ``titles`` in the language's quotation marks where ``{source}`` stands."""
    patterns = []
    for phrases in PHRASES.values():
        quoted = [phrases.get("title", "{title}").format(title=t) for t in titles]
        for template in phrases.values():
            if "{source}" not in template:
                continue
            before = template.split("{source}", 1)[0].strip()
            if before:
                patterns.append(re.compile(
                    re.escape(before) + r"\s*(?:" + "|".join(map(re.escape, quoted)) + ")",
                    re.IGNORECASE))
    return patterns


# --- the figures --------------------------------------------------------------------------------

def _ratio(part: float, whole: int) -> float | None:
    return round(part / whole, 3) if whole else None


def _group(results: list[QuestionResult]) -> dict[str, Any]:
    answered = [r for r in results if r.question.kind != ABSENT]
    absent = [r for r in results if r.question.kind == ABSENT]
    ranks = [r.rank for r in answered]
    return {
        "questions": len(results),
        "answerable": len(answered),
        "recallAt3": _ratio(sum(rank is not None for rank in ranks), len(answered)),
        "mrr": _ratio(sum(1 / rank for rank in ranks if rank), len(answered)),
        "facts": sum(r.fact for r in answered),
        "factRate": _ratio(sum(r.fact for r in answered), len(answered)),
        "absent": len(absent),
        "invented": sum(bool(r.invented) for r in absent),
    }


def summarize_knowledge(results: list[QuestionResult], *, split: str) -> dict[str, Any]:
    """The figures overall, per kind and per language, JSON-ready; and, for the dev split
    only, each question that failed and why."""
    kinds = [k for k in KINDS if any(r.question.kind == k for r in results)]
    languages = sorted({r.question.language for r in results})
    seconds = [r.seconds for r in results] or [0.0]
    summary: dict[str, Any] = {
        "split": split,
        "overall": _group(results),
        "byKind": {k: _group([r for r in results if r.question.kind == k]) for k in kinds},
        "byLanguage": {lang: _group([r for r in results if r.question.language == lang])
                       for lang in languages},
        "turnSeconds": {"median": round(statistics.median(seconds), 4),
                        "max": round(max(seconds), 4)},
        "guardStopped": sum(r.stopped is not None for r in results),
    }
    failures = [_failure(r) for r in results if _problems(r)]
    summary["failed"] = len(failures)
    if split in LISTED_SPLITS:
        summary["failures"] = failures
    return summary


def _problems(result: QuestionResult) -> list[str]:
    question = result.question
    if question.kind == ABSENT:
        return [f"invented: {why}" for why in result.invented]
    problems = []
    if result.rank is None:
        problems.append(f"retrieval miss: {question.document} not among the documents retrieved")
    if not result.fact:
        problems.append(f"answer without the fact (any of {', '.join(map(repr, question.facts))})")
    return problems


def _failure(result: QuestionResult) -> dict[str, Any]:
    question = result.question
    return {"id": question.id, "kind": question.kind, "language": question.language,
            "question": question.question, "document": question.document,
            "problems": _problems(result), "rank": result.rank,
            "retrieved": [{"document": name, "similarity": similarity}
                          for name, similarity in result.retrieved],
            "reply": result.reply, "guardStopped": result.stopped}


def evaluate_knowledge(*, agent: Agent, split: str = "test",
                       directory: str | Path = DEFAULT_DIR) -> dict[str, Any]:
    """Runs ``split`` of the knowledge set in ``directory`` with ``agent``; its figures."""
    if split not in SPLITS:
        raise KnowledgeSetError(f"Unknown split {split!r}: expected one of {', '.join(SPLITS)}.")
    knowledge_set = load_knowledge_set(directory)
    results = run_knowledge(knowledge_set, split=split, agent=agent)
    return {"agent": {"provider": agent.provider, "model": agent.model or None,
                      "baseUrl": agent.base_url or None},
            "directory": _shown_path(Path(directory)), "documents": len(knowledge_set.documents),
            **summarize_knowledge(results, split=split)}


def _shown_path(path: Path) -> str:
    """``path`` relative to the working directory when it is under it, as a reader typed it."""
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


# --- the aims -----------------------------------------------------------------------------------

def aims(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """Issue 27's aims for the knowledge set, each with its figure and whether it is met; none
    when the run is not the one they are set for (the builtin agent on the test split)."""
    if summary["split"] != AIMS_SPLIT or summary["agent"]["provider"] != AIMS_PROVIDER:
        return []
    found = []
    for name, path, op, target in AIMS:
        value: Any = summary
        for key in path:
            value = value.get(key) if isinstance(value, dict) else None
        met = value is not None and (value >= target if op == ">=" else value <= target)
        found.append({"aim": name, "value": value, "op": op, "target": target, "met": met})
    return found


def missed_aims(summary: dict[str, Any]) -> list[str]:
    """The aims ``summary`` misses, as sentences."""
    return [f"knowledge: {a['aim']} is {_show(a['value'])}, the aim {a['op']} {_show(a['target'])}"
            for a in aims(summary) if not a["met"]]


# --- the report ---------------------------------------------------------------------------------

RULE = "-" * 72


def _show(value: Any) -> str:
    if value is None:
        return "n/a"
    return f"{value:.3f}" if isinstance(value, float) else str(value)


def _row(label: str, group: dict[str, Any]) -> str:
    answerable, absent = group["answerable"], group["absent"]
    facts = f"{group['facts']}/{answerable} {_show(group['factRate'])}" if answerable else "-"
    invented = f"{group['invented']}/{absent}" if absent else "-"
    return (f"{label:<14}{group['questions']:>9}  {_show(group['recallAt3']) if answerable else '-':>8}"
            f"  {_show(group['mrr']) if answerable else '-':>6}  {facts:>13}  {invented:>8}")


def knowledge_table(summary: dict[str, Any], *, verbose: bool = False) -> str:
    agent = summary["agent"]
    name = agent["provider"] + (f" ({agent['model']} at {agent['baseUrl']})"
                                if agent.get("baseUrl") else "")
    header = f"{'':<14}{'questions':>9}  {'recall@3':>8}  {'MRR':>6}  {'with the fact':>13}  {'invented':>8}"
    lines = [
        f"Knowledge evaluation: {name}, {summary['split']} split",
        f"{summary['documents']} documents, {summary['overall']['questions']} questions "
        f"({summary['directory']})",
        RULE, header,
        *(_row(kind, group) for kind, group in summary["byKind"].items()),
        _row("all", summary["overall"]),
        RULE, header.replace(" " * 14, f"{'language':<14}", 1),
        *(_row(language, group) for language, group in summary["byLanguage"].items()),
        RULE,
        f"turn time: median {summary['turnSeconds']['median'] * 1000:.0f} ms, "
        f"max {summary['turnSeconds']['max'] * 1000:.0f} ms; the reply guard cut "
        f"{summary['guardStopped']} replies",
    ]
    found = aims(summary)
    if found:
        lines.append("aims (issue 27): " + "; ".join(
            f"{a['aim']} {_show(a['value'])} {a['op']} {_show(a['target'])} "
            f"{'met' if a['met'] else 'MISSED'}" for a in found))
    if "failures" not in summary:
        lines.append(f"{summary['failed']} questions with a failure (the {summary['split']} split's "
                     "are not listed: nothing is tuned on them)")
        return "\n".join(lines)
    lines.append(f"{summary['failed']} questions with a failure"
                 + ("" if verbose or not summary["failed"] else " (--verbose lists them)"))
    if verbose:
        lines += [line for failure in summary["failures"] for line in _failure_lines(failure)]
    return "\n".join(lines)


def _failure_lines(failure: dict[str, Any]) -> list[str]:
    retrieved = ", ".join(f"{r['document']} ({_show(r['similarity'])})"
                          for r in failure["retrieved"]) or "nothing"
    return ["", f"{failure['id']} [{failure['kind']}, {failure['language']}]",
            *(f"  ✗ {problem}" for problem in failure["problems"]),
            f"  visitor:   {failure['question']}",
            f"  retrieved: {retrieved}",
            *([f"  the reply guard cut the reply ({failure['guardStopped']})"]
              if failure.get("guardStopped") else []),
            f"  agent:     {' '.join(failure['reply'].split())}"]


def markdown(rows: list[tuple[str, dict[str, Any]]]) -> str:
    """The agents' knowledge figures side by side, for docs/agent.md."""
    def figure(group: dict[str, Any], key: str) -> str:
        return _show(group.get(key)) if group.get(key) is not None else "n/a"

    lines = ["| Agent | Split | Recall@3 lexical / paraphrase / crosslingual | MRR | "
             "Answers with the fact | Invented on absent |", "|---|---|---|---|---|---|"]
    for name, s in rows:
        kinds = s["byKind"]
        recall = " / ".join(figure(kinds.get(k, {}), "recallAt3")
                            for k in ("lexical", "paraphrase", "crosslingual"))
        o = s["overall"]
        lines.append(f"| {name} | {s['split']} | {recall} | {figure(o, 'mrr')} | "
                     f"{figure(o, 'factRate')} ({o['facts']}/{o['answerable']}) | "
                     f"{o['invented']}/{o['absent']} |")
    return "\n".join(lines)
