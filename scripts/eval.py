"""``make eval``: the sales evaluation (docs/agent.md, "Evaluation") on each agent there is to
measure, one table each, then the rows side by side for docs/agent.md:

- the builtin agent;
- the OpenAI provider against the project's fake server (tests/fakes/openai_server.py), which
  understands nothing (every analysis is "other") and invents a price in every reply: the row
  shows what the deterministic net and the reply guard guarantee on their own;
- a real local model (llama.cpp serving SmolLM2) when the ``local-model`` extra is installed
  (tests/local_model.py); otherwise one line says how to get that row.

Each run also asks the knowledge set's test split (agent/eval/knowledge.py; ``--knowledge dev``
asks the dev split instead, ``--knowledge-only`` skips the conversations).

Extra arguments go to every ``eval_agent`` run (``--verbose``, ``--cases PATH``). With
``--assert-aims`` the script exits 1 when a run misses issue 27's aims.
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
    rows = [("builtin", _run(["--provider", "builtin"], extra))]
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
    if MISSED:
        print("\n" + "\n".join(MISSED))
        return 1
    return 0


MISSED: list[str] = []  # the aims each run missed (--assert-aims)


def _run(args: list[str], extra: list[str]) -> dict:
    """One ``eval_agent`` run: its tables printed, its JSON returned."""
    from django.core.management import CommandError, call_command

    out = io.StringIO()
    chosen = any(a == "--knowledge" or a.startswith("--knowledge=") for a in extra)
    knowledge = [] if chosen else ["--knowledge", "test"]
    try:
        call_command("eval_agent", *args, *knowledge, *[a for a in extra if a != "--verbose"],
                     "--json", stdout=out)
    except CommandError as exc:
        if not out.getvalue():  # not a missed aim: the run itself failed
            raise
        MISSED.append(f"{' '.join(args[:2])}: {exc}")  # --assert-aims: the figures were printed
    summary = json.loads(out.getvalue())
    from agent.eval.knowledge import knowledge_table
    from agent.eval.report import table

    if "--knowledge-only" not in extra:
        print("\n" + table(summary, verbose="--verbose" in extra))
    print("\n" + knowledge_table(summary["knowledge"], verbose="--verbose" in extra))
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


def markdown(rows: list[tuple[str, dict]]) -> str:
    def pr(figures: dict) -> str:
        return " / ".join("n/a" if figures[k] is None else f"{figures[k]:.2f}"
                          for k in ("precision", "recall"))

    lines = ["| Agent | Capture P / R | Handoff P / R | Booking offers P / R | Grounding violations "
             "(guard stopped) | Turn median / p95 | Reply chars median / max |",
             "|---|---|---|---|---|---|---|"]
    for name, s in rows:
        lines.append(
            f"| {name} | {pr(s['capture'])} | {pr(s['handoff'])} | {pr(s['bookingOffer'])} | "
            f"{s['grounding']['violations']} ({s['grounding']['guardStopped']}) | "
            f"{s['turnSeconds']['median'] * 1000:.0f} / {s['turnSeconds']['p95'] * 1000:.0f} ms | "
            f"{s['replyChars']['median']} / {s['replyChars']['max']} |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
