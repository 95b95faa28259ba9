"""One harness for every aim of ``make bench`` (docs/performance.md, "How it is measured").

- The service is daphne as ``make run`` starts it, with production settings, on PostgreSQL and
  Redis (``service_server`` in conftest.py).
- Requests go over HTTP/1.1 keep-alive from this process (``tests/benchmarks/http.py``).
- The service and its baseline are measured in the same run, interleaved round by round (A B,
  B A, ...), so that both see the same machine.
- Each comparison reports the median, the p95 and the p99 of both, the ratio of the medians,
  and the interquartile range of the per-round ratios (how much the ratio moved).
- Each aim is asserted as a ratio (or, where the issue gives one, a time) with ``TOLERANCE``
  for this noisy machine; a missed aim fails ``make bench``. The session ends with one table:
  aim, measured, verdict, and writes the generated tables of docs/performance.md with the date,
  the commit and the load average.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import statistics
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
DOC = ROOT / "docs" / "performance.md"

# What a client behind the production proxy sends: the v1 surface is HTTPS only.
PROXY_HEADERS = {"X-Forwarded-Proto": "https"}

# An aim measured within this share of its limit is "met within tolerance": on a shared
# two-core virtual machine, a ratio of medians moves by about this much from run to run.
TOLERANCE = float(os.environ.get("BENCH_TOLERANCE", "0.10"))


# The benchmarks whose aim is about the production stack (PostgreSQL and Redis).
PRODUCTION_STACK = pytest.mark.skipif(
    not (os.environ.get("DATABASE_URL", "").startswith("postgres") and os.environ.get("REDIS_URL")),
    reason="set DATABASE_URL (PostgreSQL) and REDIS_URL: the aim is about the production stack")


def percentile(samples: list[float], share: float) -> float:
    """The ``share`` quantile (0 < share < 1), interpolated between the closest ranks."""
    ordered = sorted(samples)
    if len(ordered) == 1:
        return ordered[0]
    position = share * (len(ordered) - 1)
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


@dataclass
class Samples:
    values: list[float]  # milliseconds, or a rate

    @property
    def median(self) -> float:
        return statistics.median(self.values)

    @property
    def p95(self) -> float:
        return percentile(self.values, 0.95)

    @property
    def p99(self) -> float:
        return percentile(self.values, 0.99)


@dataclass
class Comparison:
    """The service against its baseline, interleaved round by round."""

    service: Samples
    baseline: Samples
    round_ratios: list[float]

    @property
    def ratio(self) -> float:
        return self.service.median / self.baseline.median

    @property
    def p95_ratio(self) -> float:
        return self.service.p95 / self.baseline.p95

    @property
    def iqr(self) -> tuple[float, float]:
        return percentile(self.round_ratios, 0.25), percentile(self.round_ratios, 0.75)


def interleave(service: Callable[[], float], baseline: Callable[[], float], *, rounds: int,
               warmup: int = 5) -> Comparison:
    """Each function makes one measurement and returns it (milliseconds, or a rate); they run
    in turns, A B then B A, so that neither always follows the other."""
    for _ in range(warmup):
        service()
        baseline()
    ours: list[float] = []
    theirs: list[float] = []
    for number in range(rounds):
        if number % 2 == 0:
            ours.append(service())
            theirs.append(baseline())
        else:
            theirs.append(baseline())
            ours.append(service())
    return Comparison(Samples(ours), Samples(theirs),
                      [a / b for a, b in zip(ours, theirs, strict=True)])


def rounds_for(one: Callable[[], float], *, budget_seconds: float = 20.0, most: int = 200,
               fewest: int = 15) -> int:
    """How many rounds fit the budget, from one timed call of a round's slower half."""
    started = time.perf_counter()
    one()
    seconds = max(time.perf_counter() - started, 1e-4)
    return max(fewest, min(most, int(budget_seconds / (2 * seconds))))


# --- Aims -----------------------------------------------------------------------------------


@dataclass
class Aim:
    section: str
    name: str
    measured: float
    limit: float
    at_most: bool = True  # the measured value must stay at or under the limit (else: over)
    unit: str = "×"

    @property
    def met(self) -> bool:
        return self.measured <= self.limit if self.at_most else self.measured >= self.limit

    @property
    def within_tolerance(self) -> bool:
        if self.at_most:
            return self.measured <= self.limit * (1 + TOLERANCE)
        return self.measured >= self.limit * (1 - TOLERANCE)

    @property
    def verdict(self) -> str:
        if self.met:
            return "met"
        return "met within tolerance" if self.within_tolerance else "MISSED"

    def describe(self) -> str:
        sign = "≤" if self.at_most else "≥"
        return f"{self.name}: {sign} {_number(self.limit)}{self.unit}"


AIMS: list[Aim] = []


def _number(value: float) -> str:
    if value >= 100:
        return f"{value:,.0f}"
    if value >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def check(section: str, name: str, measured: float, limit: float, *, at_most: bool = True,
          unit: str = "×") -> Aim:
    """Records the aim for the closing table and fails the benchmark if it is missed beyond the
    tolerance."""
    aim = Aim(section, name, measured, limit, at_most, unit)
    AIMS.append(aim)
    assert aim.within_tolerance, (
        f"{aim.describe()} missed: measured {_number(measured)}{unit} "
        f"(tolerance {TOLERANCE:.0%} on this noisy machine)")
    return aim


# --- Tables for docs/performance.md ---------------------------------------------------------


@dataclass
class Table:
    header: list[str]
    rows: list[list[str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def markdown(self) -> str:
        lines = ["| " + " | ".join(self.header) + " |",
                 "|" + "---|" * len(self.header)]
        lines += ["| " + " | ".join(row) + " |" for row in self.rows]
        return "\n".join(lines + ([""] + self.notes if self.notes else []))


TABLES: dict[str, Table] = {}


def table(section: str, header: list[str]) -> Table:
    """The generated table of a section of docs/performance.md, created on first use."""
    return TABLES.setdefault(section, Table(header))


def ms(value: float) -> str:
    return f"{value:.1f}" if value < 100 else f"{value:,.0f}"


def ratio_cell(comparison: Comparison) -> str:
    low, high = comparison.iqr
    return f"{comparison.ratio:.2f} ({low:.2f}–{high:.2f})"


def _commit() -> str:
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                                capture_output=True, text=True, check=True).stdout.strip()
        # The run's own writes to docs/performance.md are no change to what it measured.
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--",
                                ".", ":!docs/performance.md"],
                               cwd=ROOT, capture_output=True, text=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return f"{commit}{' with uncommitted changes' if dirty else ''}"


def embedding_threads() -> str:
    """The BLAS threads of the embedding model's forward pass in the processes of this run, in
    words: ``core.embeddings`` asks for one through threadpoolctl, which does nothing when that
    package is not installed (OpenBLAS then uses every core, and a contended machine makes each
    embedding several times slower)."""
    import importlib.util

    if os.environ.get("OPENBLAS_NUM_THREADS"):
        return f"OPENBLAS_NUM_THREADS={os.environ['OPENBLAS_NUM_THREADS']}"
    if importlib.util.find_spec("threadpoolctl"):
        return "one (threadpoolctl installed)"
    return f"OpenBLAS's default, {os.cpu_count()} (threadpoolctl not installed)"


def stamp() -> str:
    load = " ".join(f"{value:.2f}" for value in os.getloadavg())
    return (f"_Generated by `make bench` on {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, commit "
            f"{_commit()}, load average {load} ({os.cpu_count()} CPUs); "
            f"tolerance {TOLERANCE:.0%}._")


def write_doc(path: Path = DOC) -> list[str]:
    """Replaces each measured section's generated block in docs/performance.md (between
    ``<!-- bench:NAME -->`` and ``<!-- /bench:NAME -->``); returns the sections written.
    Sections this run did not measure keep their last figures, with their own stamp."""
    text = path.read_text()
    written = []
    sections = {name: table for name, table in TABLES.items() if table.rows}
    aims_by_section: dict[str, list[Aim]] = {}
    for aim in AIMS:
        aims_by_section.setdefault(aim.section, []).append(aim)
    for section in set(sections) | set(aims_by_section):
        block = [stamp(), ""]
        if section in sections:
            block += [sections[section].markdown(), ""]
        if section in aims_by_section:
            block += [aims_markdown(aims_by_section[section]), ""]
        pattern = re.compile(rf"(<!-- bench:{re.escape(section)} -->\n).*?(<!-- /bench:"
                             rf"{re.escape(section)} -->)", re.S)
        match = pattern.search(text)
        if not match:
            continue
        text = text[:match.end(1)] + "\n".join(block) + text[match.start(2):]
        written.append(section)
    path.write_text(text)
    return written


RESULTS = Path(os.environ.get("BENCH_RESULTS", ROOT / "var" / "bench" / "aims.jsonl"))


def record_aims(path: Path = RESULTS) -> None:
    """Appends this process's aims to the run's results: ``make bench`` runs each benchmark
    module in a process of its own (each seeds or opens its own database), then prints them
    all in one table (``python -m tests.benchmarks.report``)."""
    if not AIMS:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as out:
        for aim in AIMS:
            out.write(json.dumps(dataclasses.asdict(aim)) + "\n")


def recorded_aims(path: Path = RESULTS) -> list[Aim]:
    if not path.exists():
        return []
    return [Aim(**json.loads(line)) for line in path.read_text().splitlines() if line.strip()]


def aims_markdown(aims: list[Aim]) -> str:
    lines = ["| Aim | Measured | Verdict |", "|---|---|---|"]
    lines += [f"| {aim.describe()} | {_number(aim.measured)}{aim.unit} | {aim.verdict} |"
              for aim in aims]
    return "\n".join(lines)
