"""Writes of the agent app: the tenant's provider settings, checked before they are saved
(docs/agent.md, "When the provider fails"); a tenant's test sets and their runs (docs/agent.md,
"Testing your agent").

A set is questions for the tenant's own agent, each optionally with the fact its answer should
hold and the decision it should take. A run asks every question through the real chat turn, as
a new visitor, inside a transaction that is rolled back (``agent.eval.batch``): nothing of it
reaches leads, conversations, analytics, events, webhooks, emails, calendars or live streams.
A run is a Celery task (``agent.tasks.run_test_set``): a hundred questions to a model take
minutes. The page shows how far it got (``run_done``) and the results once it has finished.

Questions come as lines of text (pasted, or a ``.txt`` file) or as a ``.csv`` file:

- a line is ``question | expected fact | expected decision``, the two columns optional. Fact
  alternatives are more columns (``How much is Growth? | $99 | 99 dollars | pricing``): the last
  column is the decision when it is one of ``EXPECTED`` (or empty), otherwise one more
  alternative. To expect a fact that is a decision's word, end the line with an empty column.
- a CSV row is ``question, expected fact, expected decision`` (a first row whose first cell is
  "question" is a header); its fact alternatives are separated by ``|`` within the cell.
"""

from __future__ import annotations

import csv
import io
import logging
import time
import uuid
from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from core import broker
from core.errors import Conflict, FieldError, Unprocessable
from core.text import has_control
from core.timestamps import stored_timestamp
from tenants.models import AgentProvider, Tenant
from tenants.services import provider_health_record, tenant_agent_validate, tenant_set_agent

from .eval.batch import EXPECTED, Result, ask, judge
from .interface import warm_up
from .models import RUN_SECONDS, RUN_STALE, AgentTestSet
from .providers import DEFAULT_MODEL
from .providers.openai import check_connection

logger = logging.getLogger("salesagent.agent")

MAX_SETS = 20  # per tenant, both modes together
MAX_QUESTIONS = 100  # per set
MAX_QUESTION_CHARS = 500
MAX_FACT_CHARS = 500
MAX_NAME_CHARS = 100
MAX_FILE_BYTES = 128 * 1024  # a .txt or .csv of questions
FILE_TYPES = (".txt", ".csv")
# The decision column's words, as people may write them.
_DECISION_WORDS = {d.replace("_", " "): d for d in EXPECTED} | {d: d for d in EXPECTED}


# --- the provider ---------------------------------------------------------------------------

def agent_provider_check(*, tenant: Tenant, model: str, base_url: str,
                         api_key: str | None = None) -> FieldError | None:
    """Whether an OpenAI-compatible provider answers with these settings (the stored key when
    ``api_key`` is None): None, or the setting to look at and why. Outside any transaction: it
    waits for the provider (``check_connection``, a few seconds at most)."""
    key = tenant.agent_api_key if api_key is None else api_key.strip()
    if not key:
        return FieldError("api_key", "required", "The provider needs an API key (any text for a "
                                                 "local server that takes none).")
    found = check_connection(api_key=key, model=(model or "").strip() or DEFAULT_MODEL,
                             base_url=(base_url or "").strip() or None)
    return None if found is None else FieldError(found[0], "unreachable", found[1])


def agent_provider_save(*, tenant: Tenant, provider: str, model: str, base_url: str,
                        api_key: str | None, embeddings: str | None = None,
                        embedding_model: str | None = None) -> Tenant:
    """The agent's provider settings (``tenants.services.tenant_set_agent``; ``api_key``: None
    keeps the stored key, "" removes it), saved only when an OpenAI-compatible provider answers
    with them: otherwise ``Unprocessable``, with the setting to look at, and nothing is saved.
    The answer counts as the provider's first (its health, on the dashboard's home)."""
    changes = {"provider": provider, "model": model, "base_url": base_url, "api_key": api_key,
               "embeddings": embeddings, "embedding_model": embedding_model}
    tenant_agent_validate(tenant=tenant, **changes)  # what is refused anyway is not asked
    checked = provider == AgentProvider.OPENAI
    if checked:
        problem = agent_provider_check(tenant=tenant, model=model, base_url=base_url,
                                       api_key=api_key)
        if problem is not None:
            raise Unprocessable(f"Not saved: the provider does not answer. {problem.message}",
                                details=[problem])
    tenant = tenant_set_agent(tenant=tenant, **changes)
    if checked:
        provider_health_record(tenant_id=tenant.pk, at=timezone.now())
    return tenant


# --- questions ------------------------------------------------------------------------------

def questions_from_text(text: str) -> list[dict[str, str]]:
    """The questions of pasted lines (the module's docstring); blank lines are skipped.
    Refused (``Unprocessable``, a detail per line) when a line breaks a rule."""
    rows = [(number, line.split("|")) for number, line in enumerate(text.splitlines(), 1)
            if line.strip()]
    return _parsed([(number, _from_cells(cells)) for number, cells in rows])


def questions_from_file(*, name: str, data: bytes) -> list[dict[str, str]]:
    """The questions of an uploaded ``.txt`` (lines, as pasted) or ``.csv`` file."""
    extension, text = _file_text(name, data)
    if extension == ".txt":
        return questions_from_text(text)
    rows = [(number, row) for number, row in enumerate(csv.reader(io.StringIO(text)), 1)
            if any(cell.strip() for cell in row)]
    if rows and rows[0][1][0].strip().casefold() == "question":
        rows = rows[1:]
    return _parsed([(number, _from_columns(row)) for number, row in rows])


def _file_text(name: str, data: bytes) -> tuple[str, str]:
    """The file's extension and its text, or the reason it is refused."""
    extension = "." + name.rsplit(".", 1)[-1].lower() if "." in name else ""
    if extension not in FILE_TYPES:
        raise _refused("file", "invalid_format", "Upload a .txt or .csv file.")
    if len(data) > MAX_FILE_BYTES:
        raise _refused("file", "too_long",
                       f"The file is larger than {MAX_FILE_BYTES // 1024} KB.")
    try:
        return extension, data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise _refused("file", "invalid_format", "The file is not UTF-8 text.") from None


def questions_as_text(questions: list[dict[str, str]]) -> str:
    """The lines that ``questions_from_text`` reads back as ``questions`` (the edit box)."""
    lines = []
    for q in questions:
        cells = [q["question"]]
        facts = [a.strip() for a in q["expect_fact"].split("|") if a.strip()]
        cells += facts
        if q["expect_decision"]:
            cells.append(q["expect_decision"])
        elif facts and _decision_word(facts[-1]) is not None:
            cells.append("")  # the last fact is no decision
        lines.append(" | ".join(cells).rstrip())
    return "\n".join(lines)


def _decision_word(cell: str) -> str | None:
    return _DECISION_WORDS.get(" ".join(cell.casefold().replace("_", " ").split()))


def _from_cells(cells: list[str]) -> dict[str, str]:
    """A pasted line's cells: the question, fact alternatives, and a decision when the last
    cell is one (or empty)."""
    cells = [cell.strip() for cell in cells]
    question, rest = cells[0], cells[1:]
    decision = ""
    if rest and (rest[-1] == "" or _decision_word(rest[-1]) is not None):
        decision = _decision_word(rest[-1]) or ""
        rest = rest[:-1]
    return {"question": question, "expect_fact": " | ".join(c for c in rest if c),
            "expect_decision": decision}


def _from_columns(row: list[str]) -> dict[str, Any]:
    """A CSV row: question, fact (alternatives separated by ``|``), decision."""
    cells = [cell.strip() for cell in row] + ["", ""]
    word = cells[2]
    decision = _decision_word(word) if word else ""
    facts = [a.strip() for a in cells[1].split("|") if a.strip()]
    return {"question": cells[0], "expect_fact": " | ".join(facts),
            # An unknown word stays, for the check to name it.
            "expect_decision": word if decision is None else decision}


def _parsed(numbered: list[tuple[int, dict[str, str]]]) -> list[dict[str, str]]:
    problems = [FieldError("questions", code, f"Line {number}: {message}")
                for number, question in numbered for code, message in _problems(question)]
    if problems:
        raise Unprocessable("Some lines cannot be read as questions.", details=problems)
    return [question for _number, question in numbered]


def _problems(question: dict[str, Any]) -> list[tuple[str, str]]:
    """What is wrong with one question, as (code, message) pairs."""
    text = question.get("question")
    fact = question.get("expect_fact", "")
    decision = question.get("expect_decision", "")
    if not isinstance(text, str) or not isinstance(fact, str) or not isinstance(decision, str):
        return [("invalid_format", "a question, its fact and its decision are text.")]
    return _question_problems(text) + _expectation_problems(fact, decision)


def _question_problems(text: str) -> list[tuple[str, str]]:
    problems = []
    if not text.strip():
        problems.append(("required", "the question is empty."))
    elif len(text) > MAX_QUESTION_CHARS:
        problems.append(("too_long", f"the question is longer than {MAX_QUESTION_CHARS} "
                                     "characters."))
    if "|" in text:
        problems.append(("invalid_format", "a question cannot hold “|”, which separates the "
                                           "columns."))
    if has_control(text):
        problems.append(("invalid_format", "a question and its fact are one line each."))
    return problems


def _expectation_problems(fact: str, decision: str) -> list[tuple[str, str]]:
    problems = []
    if has_control(fact):
        problems.append(("invalid_format", "a question and its fact are one line each."))
    if len(fact) > MAX_FACT_CHARS:
        problems.append(("too_long", f"the expected fact is longer than {MAX_FACT_CHARS} "
                                     "characters."))
    if decision and decision not in EXPECTED:
        problems.append(("invalid_enum", f"“{decision}” is no decision: use one of "
                                         f"{', '.join(EXPECTED)}."))
    return problems


def _clean(name: str, questions: list[dict[str, Any]]) -> tuple[str, list[dict[str, str]]]:
    """The name and questions as a set keeps them, or every reason they are refused."""
    name = (name or "").strip()
    problems = _name_problems(name) + _questions_problems(questions)
    if problems:
        raise Unprocessable("The test set cannot be saved.", details=problems)
    return name, [{"question": q["question"].strip(),
                   "expect_fact": " | ".join(a.strip() for a in q.get("expect_fact", "").split("|")
                                             if a.strip()),
                   "expect_decision": q.get("expect_decision", "")} for q in questions]


def _name_problems(name: str) -> list[FieldError]:
    if not name:
        return [FieldError("name", "required", "Give the set a name.")]
    if len(name) > MAX_NAME_CHARS or has_control(name):
        return [FieldError("name", "too_long" if len(name) > MAX_NAME_CHARS else "invalid_format",
                           f"One line of at most {MAX_NAME_CHARS} characters.")]
    return []


def _questions_problems(questions: list[dict[str, Any]]) -> list[FieldError]:
    if not questions:
        return [FieldError("questions", "required", "Add at least one question.")]
    if len(questions) > MAX_QUESTIONS:
        return [FieldError("questions", "too_long", f"A set holds at most {MAX_QUESTIONS} "
                                                    f"questions; this one has {len(questions)}.")]
    return [FieldError("questions", code, f"Question {n}: {message}")
            for n, question in enumerate(questions, 1) for code, message in _problems(question)]


def _refused(field: str, code: str, message: str) -> Unprocessable:
    return Unprocessable(message, details=[FieldError(field, code, message)])


# --- sets -----------------------------------------------------------------------------------

@transaction.atomic
def agent_test_set_create(*, tenant: Tenant, livemode: bool, name: str,
                    questions: list[dict[str, Any]]) -> AgentTestSet:
    """A new set of the tenant in this mode; at most ``MAX_SETS`` per tenant."""
    name, questions = _clean(name, questions)
    # The tenant's row, locked: two sets created at once cannot both be the twentieth.
    Tenant.objects.select_for_update().filter(pk=tenant.pk).values_list("pk").get()
    if AgentTestSet.objects.filter(tenant=tenant).count() >= MAX_SETS:
        raise Unprocessable(f"A tenant keeps at most {MAX_SETS} test sets: delete one first.")
    now = timezone.now()
    return AgentTestSet.objects.create(tenant=tenant, livemode=livemode, name=name,
                                       questions=questions, question_count=len(questions),
                                       created_at=now, updated_at=now)


@transaction.atomic
def agent_test_set_update(*, test_set: AgentTestSet, name: str,
                    questions: list[dict[str, Any]]) -> AgentTestSet:
    """New name and questions. A run under way stops (its results would answer other
    questions); the last finished run stays, marked as older than the questions."""
    name, questions = _clean(name, questions)
    current = AgentTestSet.objects.select_for_update().get(pk=test_set.pk)
    current.name, current.questions, current.question_count = name, questions, len(questions)
    current.updated_at = timezone.now()
    if current.last_run:
        current.last_run = {**current.last_run,
                            "stale": _asked(current.last_results) != _asked(questions)}
    current.run_token, current.run_queued_at, current.run_done = None, None, 0
    current.save()
    return current


def _asked(rows: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    return [(r["question"], r["expect_fact"], r["expect_decision"]) for r in rows]


@transaction.atomic
def agent_test_set_delete(*, test_set: AgentTestSet) -> None:
    """Deletes the set; a run under way stops at its next question."""
    AgentTestSet.objects.filter(pk=test_set.pk).delete()


@transaction.atomic
def agent_test_set_run_start(*, test_set: AgentTestSet) -> AgentTestSet:
    """Queues a run of the set (after the commit). One run at a time per tenant: a run holds a
    worker for as long as its questions take."""
    current = (AgentTestSet.objects.select_for_update().select_related("tenant")
               .get(pk=test_set.pk))
    now = timezone.now()
    if current.running:
        raise Conflict("This set is running already: its results show here when it finishes.")
    others = (AgentTestSet.objects.filter(tenant_id=current.tenant_id, run_token__isnull=False,
                                          run_queued_at__gt=now - RUN_STALE)
              .exclude(pk=current.pk).values_list("name", flat=True).first())
    if others is not None:
        raise Conflict(f"The set “{others}” is running: one set runs at a time. Run this one "
                       "when it has finished.")
    current.run_token, current.run_queued_at, current.run_done = uuid.uuid4(), now, 0
    current.save(update_fields=["run_token", "run_queued_at", "run_done"])
    pk, token = current.pk, current.run_token
    transaction.on_commit(lambda: _enqueue(pk, token))
    return current


def _enqueue(pk: uuid.UUID, token: uuid.UUID) -> None:
    from .tasks import run_test_set

    if not broker.publish(run_test_set, [[str(pk), str(token)]]):
        # Nothing will run it: the page says it is not running, and Run starts it again.
        AgentTestSet.objects.filter(pk=pk, run_token=token).update(run_token=None,
                                                                   run_queued_at=None)


def agent_test_set_run(*, test_set_id: uuid.UUID | str, token: uuid.UUID | str,
                 seconds: float = RUN_SECONDS) -> AgentTestSet | None:
    """Runs the set's questions for the run ``token`` (``agent_test_set_run_start``), each in a
    transaction rolled back, and keeps the results (``last_run``, ``last_results``). None,
    having kept nothing,
    when the set is gone or this run was replaced (a new run, an edit): it stops at the next
    question. After ``seconds`` the questions left are not asked.

    Outside any transaction of its caller (a worker's task): each question's transaction must
    end before the progress it reports is committed."""
    found = (AgentTestSet.objects.select_related("tenant")
             .filter(pk=test_set_id, run_token=token).first())
    if found is None:
        return None
    tenant, questions = found.tenant, list(found.questions)
    # The models load now, not inside the first question's turn, whose deadline they would
    # spend (a web process loads them at start-up: AGENT_WARM_UP).
    warm_up()
    started_at, started = timezone.now(), time.monotonic()
    results: list[Result] = []
    for number, question in enumerate(questions, 1):
        if time.monotonic() - started > seconds:
            results += [_not_run(q, seconds) for q in questions[len(results):]]
            break
        results.append(ask(tenant=tenant, livemode=found.livemode, question=question))
        if not AgentTestSet.objects.filter(pk=found.pk, run_token=token).update(run_done=number):
            return None
    last_run = _summary(tenant, results, started_at=started_at,
                        seconds=time.monotonic() - started)
    kept = AgentTestSet.objects.filter(pk=found.pk, run_token=token).update(
        last_run=last_run, last_results=[r.as_dict() for r in results], run_token=None,
        run_queued_at=None, run_done=0)
    if not kept:
        return None
    found.refresh_from_db()
    return found


def _not_run(question: dict[str, str], seconds: float) -> Result:
    return judge(Result(question=question["question"], expect_fact=question["expect_fact"],
                        expect_decision=question["expect_decision"],
                        error=f"Not asked: the run stops after {round(seconds / 60)} minutes."))


def _summary(tenant: Tenant, results: list[Result], *, started_at: datetime,
             seconds: float) -> dict[str, Any]:
    checked = [r for r in results if r.passed is not None]
    provider = tenant.agent_provider + (f" ({tenant.agent_model})"
                                        if tenant.agent_provider != "builtin" else "")
    return {"started_at": stored_timestamp(started_at),
            "finished_at": stored_timestamp(timezone.now()),
            "seconds": round(seconds, 2), "provider": provider,
            "total": len(results), "checked": len(checked),
            "passed": sum(1 for r in checked if r.passed),
            "errors": sum(1 for r in results if r.error), "stale": False}
