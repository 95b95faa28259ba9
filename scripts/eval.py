"""``make eval``: the sales evaluation (docs/agent.md, "Evaluation") on each agent there is to
measure, one table per split each, then the rows side by side for docs/agent.md:

- the builtin agent, whose run asserts the aims on the test split (``--assert-aims``): ``make
  eval`` exits 1 when one is missed, after every row, listing each miss;
- the OpenAI provider against the project's fake server (tests/fakes/openai_server.py), which
  understands nothing (every analysis is "other") and invents a price in every reply: the row
  shows what the deterministic net and the reply guard guarantee on their own;
- a real local model (llama.cpp serving SmolLM2) when the ``local-model`` extra is installed
  (tests/local_model.py); otherwise one line says how to get that row.

Each run also asks the knowledge set's test split (agent/eval/knowledge.py; ``--knowledge dev``
asks the dev split instead, ``--knowledge-only`` skips the conversations).

Extra arguments go to every ``eval_agent`` run (``--verbose``, ``--split dev|test|all``, ``--cases
PATH``); the test split is the default, and the aims are asserted only when the run has it.
"""

from __future__ import annotations

import io
import json
import os
import sys
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FAKE_REPLY = ("Thanks for your message! Our plans start at $29 per month, and most teams are live "
              "within 2 days. Would you like to know more?")


def main(extra: list[str]) -> int:
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    aims = ["--assert-aims"] if _has_test_split(extra) else []
    missed = ""
    try:
        rows = [("builtin", _run(["--provider", "builtin", *aims], extra))]
    except _AimsMissed as exc:
        rows, missed = [("builtin", exc.summary)], exc.message
    with _fake_server() as base_url:
        rows.append(("fake server", _run(["--provider", "openai", "--base-url", base_url,
                                          "--model", "fake-model"], extra)))
    local = _local_model()
    if local is None:
        print("\nNo local-model row: `make install-local-model` installs llama.cpp and SmolLM2, "
              "then `make eval` adds it.")
    else:
        with local.serve() as base_url:
            rows.append(("local model (SmolLM2, llama.cpp)",
                         _run(["--provider", "openai", "--base-url", base_url, "--model", "smollm2"],
                              extra)))
    from agent.eval.knowledge import markdown as knowledge_markdown

    if "--knowledge-only" not in extra:
        print("\n" + markdown(rows))
    print("\n" + knowledge_markdown([(name, summary["knowledge"]) for name, summary in rows]))
    if missed:
        print(f"\nThe builtin agent misses the aims (docs/agent.md, \"Aims\"): {missed}")
        return 1
    return 0


def _has_test_split(extra: list[str]) -> bool:
    """Whether the runs include the test split, which the aims are measured on."""
    if any(a == "--cases" or a.startswith("--cases=") for a in extra):
        return False
    if "--knowledge-only" in extra:
        return True
    split = next((extra[i + 1] for i, a in enumerate(extra[:-1]) if a == "--split"),
                 next((a.split("=", 1)[1] for a in extra if a.startswith("--split=")), "test"))
    return split in ("test", "all")


class _AimsMissed(Exception):
    def __init__(self, summary: dict, message: str):
        super().__init__(message)
        self.summary, self.message = summary, message


def _run(args: list[str], extra: list[str]) -> dict:
    """One ``eval_agent`` run: its table printed, its JSON returned (``_AimsMissed`` carries it
    when the run asserted the aims and missed one)."""
    from django.core.management import call_command

    from agent.eval.knowledge import knowledge_table
    from agent.eval.report import table
    from agent.management.commands.eval_agent import AimsMissed

    out = io.StringIO()
    failed = None
    chosen = any(a == "--knowledge" or a.startswith("--knowledge=") for a in extra)
    knowledge = [] if chosen else ["--knowledge", "test"]
    try:
        call_command("eval_agent", *args, *knowledge, *[a for a in extra if a != "--verbose"],
                     "--json", stdout=out)
    except AimsMissed as exc:
        failed = str(exc)
    summary = json.loads(out.getvalue())
    if "--knowledge-only" not in extra:
        print("\n" + table(summary, verbose="--verbose" in extra))
    print("\n" + knowledge_table(summary["knowledge"], verbose="--verbose" in extra))
    if failed:
        raise _AimsMissed(summary, failed)
    return summary


@contextmanager
def _fake_server():
    from tests.fakes.openai_server import FakeOpenAI

    fake = FakeOpenAI()
    fake.reply = FAKE_REPLY
    try:
        yield fake.base_url
    finally:
        fake.close()


def _local_model():
    """``tests.local_model`` when it is there and its model installed, else None."""
    try:
        from tests import local_model
    except ImportError:
        return None
    return local_model if local_model.installed() else None


def _pr(figures: dict) -> str:
    return " / ".join("n/a" if figures[k] is None else f"{figures[k]:.2f}"
                      for k in ("precision", "recall"))


def markdown(rows: list[tuple[str, dict]]) -> str:
    """The runs side by side (a row per agent and split), then each run's decisions per
    language."""
    lines = ["| Agent | Split | Capture P / R | Handoff P / R | Booking offers P / R | "
             "Reply language | Grounding violations (guard stopped) | Turn median / p95 | "
             "Reply chars median / max |",
             "|---|---|---|---|---|---|---|---|---|"]
    for name, summary in rows:
        for split, s in summary["splits"].items():
            accuracy = s["replyLanguage"]["accuracy"]
            lines.append(
                f"| {name} | {split} | {_pr(s['capture'])} | {_pr(s['handoff'])} | "
                f"{_pr(s['bookingOffer'])} | {'n/a' if accuracy is None else f'{accuracy:.2f}'} | "
                f"{s['grounding']['violations']} ({s['grounding']['guardStopped']}) | "
                f"{s['turnSeconds']['median'] * 1000:.0f} / {s['turnSeconds']['p95'] * 1000:.0f} ms | "
                f"{s['replyChars']['median']} / {s['replyChars']['max']} |")
    for name, summary in rows:
        for split, s in summary["splits"].items():
            if s["decisionCases"]:
                lines += ["", *decisions_markdown(f"{name}, {split} split", s)]
    return "\n".join(lines)


def decisions_markdown(title: str, split: dict) -> list[str]:
    """Precision / recall of each decision and of capture, overall and per language."""
    languages = split["languages"]
    lines = [f"| {title} | all | {' | '.join(languages)} |",
             "|---|" + "---|" * (len(languages) + 1)]
    figures = [*split["decisions"].items(), ("capture (fields)", split["capture"])]
    for decision, f in figures:
        cells = [_pr(f), *(_pr(f["byLanguage"][lang]) for lang in languages)]
        lines.append(f"| {decision} | {' | '.join(cells)} |")
    return lines


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
