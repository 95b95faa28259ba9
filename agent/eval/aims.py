"""The aims of issue 27 that ``make eval`` asserts (``eval_agent --assert-aims``; docs/agent.md,
"Evaluation", "Aims"), on the test split and the builtin agent: precision and recall of a
person wanted, a meeting wanted and contact details given, and of the contact details captured,
each at least ``AIM`` in every language the agent speaks. ``make test`` does not assert them:
they are what the agent is working towards, not a property the code already has."""

from __future__ import annotations

from typing import Any

from core.languages import SPOKEN

AIM = 0.95
AIM_SPLIT = "test"
AIM_DECISIONS = ("person", "meeting", "contact")


def aims_missed(split: dict[str, Any]) -> list[str]:
    """What ``split`` (one split's summary, ``metrics.summarize``) misses of the aims, one line
    each; empty when every aim is met. A language with nothing to measure for an aim (no case
    expects the decision and none took it) misses it: the aim is for every language."""
    missed = []
    for language in SPOKEN:
        figures = [(decision, split["decisions"].get(decision, {}).get("byLanguage", {})
                    .get(language)) for decision in AIM_DECISIONS]
        figures.append(("capture", split["capture"].get("byLanguage", {}).get(language)))
        for name, found in figures:
            if found is None or (found["precision"] is None and found["recall"] is None):
                missed.append(f"{name} in {language}: not measured (no case expects it, none "
                              "took it)")
                continue
            # One side alone is undefined when nothing was taken (precision) or expected
            # (recall); the other side then tells.
            missed += [f"{name} {measure} in {language}: {found[measure]:.3f} < {AIM:.2f}"
                       for measure in ("precision", "recall")
                       if found[measure] is not None and found[measure] < AIM]
    return missed
