"""The sales evaluation: scripted conversations run through the real chat turn of any provider,
scored per split for capture, handoff, booking offers, the decisions taken, the reply's
language, grounding, speed and length (docs/agent.md, "Evaluation"). ``evaluate`` is what
``manage.py eval_agent`` runs; ``aims_missed`` is what ``make eval`` asserts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .aims import aims_missed
from .cases import SPLITS, CaseError, load_cases
from .metrics import summarize
from .runner import Agent, run_case


def evaluate(*, agent: Agent, cases_path: str | Path | None = None,
             splits: tuple[str, ...] | None = None) -> dict[str, Any]:
    """Runs every case of ``cases_path``, or of the named ``splits``, with ``agent``; the figures
    of each split and its failures, JSON-ready."""
    case_set = load_cases(cases_path, splits=None if cases_path is not None else splits)
    results = [run_case(case, agent=agent) for case in case_set.cases]
    return {"agent": {"provider": agent.provider, "model": agent.model or None,
                      "baseUrl": agent.base_url or None},
            "casesFiles": [str(path) for path in case_set.files],
            "splits": {name: summarize([r for r in results if r.case.split == name], split=name)
                       for name in SPLITS if any(r.case.split == name for r in results)}}


__all__ = ["Agent", "CaseError", "aims_missed", "evaluate", "load_cases"]
