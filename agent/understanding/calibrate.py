"""The thresholds of ``agent.understanding`` from the evaluation's dev split, never the test
split: ``python -m agent.understanding.calibrate`` prints, for each decision, the lowest
probability threshold whose precision is at least ``PRECISION`` in a five-fold cross-validation
(each fold's cases read by a model trained without them), and the recall it gets there.

A case takes a decision when any of its visitor's messages does; it expects the decision when
its ``expect.decisions`` names it. The printout is what ``THRESHOLDS`` holds.
"""

from __future__ import annotations

import sys

import numpy as np
import yaml

from . import DECISIONS, DEV_PATH, THRESHOLDS, Model, dev_examples, load_examples, understand

PRECISION = 0.95
FOLDS = 5


def calibrate() -> dict[str, tuple[float, float, float]]:
    """decision → (threshold, precision, recall)."""
    cases = [case for case in yaml.safe_load(DEV_PATH.read_text(encoding="utf-8"))["cases"]
             if "decisions" in case.get("expect", {})]
    order = np.random.default_rng(0).permutation(len(cases))
    scored: dict[str, list[tuple[float, bool]]] = {d: [] for d in DECISIONS}
    for fold in np.array_split(order, FOLDS):
        held_out = [cases[i] for i in fold]
        model = Model(load_examples() + dev_examples(exclude=[c["id"] for c in held_out]))
        for case in held_out:
            readings = [understand(turn, model=model).evidence for turn in case["turns"]]
            for decision in DECISIONS:
                score = max((r[decision].score for r in readings
                             if decision in r and not r[decision].vetoed), default=0.0)
                scored[decision].append((score, decision in case["expect"]["decisions"]))
    found = {}
    for decision, pairs in scored.items():
        best = None
        for threshold in np.arange(0.30, 0.99, 0.02):
            tp = sum(1 for s, g in pairs if s >= threshold and g)
            fp = sum(1 for s, g in pairs if s >= threshold and not g)
            fn = sum(1 for s, g in pairs if s < threshold and g)
            precision = tp / (tp + fp) if tp + fp else 1.0
            recall = tp / (tp + fn) if tp + fn else 0.0
            if precision >= PRECISION and (best is None or recall > best[2]):
                best = (round(float(threshold), 2), precision, recall)
        if best:
            found[decision] = best
    return found


def main() -> int:
    for decision, (threshold, precision, recall) in calibrate().items():
        print(f"{decision:15} threshold {threshold:.2f} precision {precision:.2f} "
              f"recall {recall:.2f} (in use: {THRESHOLDS.get(decision)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
