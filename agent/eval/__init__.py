"""The sales evaluation: scripted conversations run through the real chat turn of any provider,
scored for capture, handoff, booking offers, grounding, speed and length (docs/agent.md,
"Evaluation"). ``evaluate`` is what ``manage.py eval_agent`` runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .cases import DEFAULT_PATH, CaseError, load_cases
from .metrics import summarize
from .runner import Agent, run_case


def evaluate(*, agent: Agent, cases_path: str | Path = DEFAULT_PATH) -> dict[str, Any]:
    """Runs every case of ``cases_path`` with ``agent``; the figures and failures, JSON-ready."""
    case_set = load_cases(cases_path)
    results = [run_case(case, agent=agent, tenant_name=case_set.tenant_name)
               for case in case_set.cases]
    summary = summarize(results, tenant_name=case_set.tenant_name)
    return {"agent": {"provider": agent.provider, "model": agent.model or None,
                      "baseUrl": agent.base_url or None},
            "casesFile": str(cases_path), **summary}


__all__ = ["Agent", "CaseError", "evaluate", "load_cases"]
