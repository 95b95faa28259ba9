"""Runs the sales evaluation against a provider (docs/agent.md, "Evaluation")."""

import json as jsonlib
import logging
from contextlib import contextmanager

from django.core.management.base import BaseCommand, CommandError

from agent.eval import Agent, CaseError, evaluate
from agent.eval.cases import DEFAULT_PATH
from agent.eval.report import table
from tenants.models import AgentProvider


class Command(BaseCommand):
    help = ("Runs scripted sales conversations through the chat turn of a throwaway tenant (rolled "
            "back: nothing is left behind) and reports capture, handoff, booking offers, "
            "grounding, turn time and reply length.")

    def add_arguments(self, parser):
        parser.add_argument("--provider", choices=AgentProvider.values, default="builtin")
        parser.add_argument("--base-url", default="",
                            help="OpenAI-compatible base URL, e.g. http://127.0.0.1:8080/v1")
        parser.add_argument("--model", default="", help="Model name (openai; default gpt-4o-mini).")
        parser.add_argument("--api-key", default="",
                            help="Provider key (openai); local servers accept any.")
        parser.add_argument("--cases", default=str(DEFAULT_PATH),
                            help="A YAML file of cases (default: the service's own set).")
        parser.add_argument("--json", action="store_true", help="Print one JSON document.")
        parser.add_argument("--verbose", action="store_true", help="List each failed case.")

    def handle(self, *args, provider, base_url, model, api_key, cases, json, verbose, **options):
        if provider == "openai" and not base_url and not api_key:
            raise CommandError("--provider openai needs --api-key, or --base-url for a local server.")
        agent = Agent(provider=provider, model=model, base_url=base_url,
                      api_key=api_key or ("not-needed" if provider == "openai" else ""))
        try:
            with _quiet():
                summary = evaluate(agent=agent, cases_path=cases)
        except CaseError as exc:
            raise CommandError(str(exc)) from exc
        if json:
            self.stdout.write(jsonlib.dumps(summary, indent=2, ensure_ascii=False))
        else:
            self.stdout.write(table(summary, verbose=verbose))


@contextmanager
def _quiet():
    """The turns' own logs (each request to the model, each reply the guard cut) would bury the
    report; the report counts what matters of them."""
    loggers = [logging.getLogger(name) for name in ("salesagent", "httpx", "httpx2", "openai")]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)
