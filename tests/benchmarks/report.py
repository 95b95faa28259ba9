"""The closing table of ``make bench``: every aim the run measured, and whether it was met.
Exits 1 if one was missed (beyond the tolerance) or none was measured."""

from __future__ import annotations

import sys

from tests.benchmarks.harness import TOLERANCE, aims_markdown, recorded_aims


def main() -> int:
    aims = recorded_aims()
    if not aims:
        print("make bench: no aim was measured")
        return 1
    print(f"\nmake bench: every aim (tolerance {TOLERANCE:.0%})\n")
    print(aims_markdown(aims))
    missed = [aim for aim in aims if not aim.within_tolerance]
    print(f"\n{len(aims) - len(missed)} of {len(aims)} aims met"
          + (f"; missed: {', '.join(aim.name for aim in missed)}" if missed else ""))
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
