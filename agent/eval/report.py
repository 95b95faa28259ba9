"""The evaluation's figures as a readable table, and each failed case for ``--verbose``."""

from __future__ import annotations

from typing import Any

RULE = "-" * 72


def _pr(figures: dict[str, Any]) -> str:
    def show(value: float | None) -> str:
        return "n/a" if value is None else f"{value:.3f}"

    return (f"precision {show(figures['precision'])}  recall {show(figures['recall'])}"
            f"   (tp {figures['tp']}, fp {figures['fp']}, fn {figures['fn']})")


def table(summary: dict[str, Any], *, verbose: bool = False) -> str:
    agent = summary["agent"]
    name = agent["provider"] + (f" ({agent['model']} at {agent['baseUrl']})"
                                if agent.get("baseUrl") else "")
    grounding = summary["grounding"]
    seconds, chars = summary["turnSeconds"], summary["replyChars"]
    lines = [
        f"Sales evaluation: {name}",
        f"{summary['cases']} conversations, {summary['turns']} turns ({summary['casesFile']})",
        RULE,
        f"{'capture':<16}{_pr(summary['capture'])}",
        f"{'handoff':<16}{_pr(summary['handoff'])}",
        f"{'booking offers':<16}{_pr(summary['bookingOffer'])}",
        f"{'grounding':<16}{grounding['violations']} replies with unsupported figures; "
        f"the guard stopped {grounding['guardStopped']}",
        f"{'turn time':<16}median {seconds['median'] * 1000:.0f} ms, p95 {seconds['p95'] * 1000:.0f} ms",
        f"{'reply length':<16}median {chars['median']} characters, max {chars['max']}",
        RULE,
        f"{len(summary['failures'])} cases with a failure"
        + ("" if verbose or not summary["failures"] else " (--verbose lists them)"),
    ]
    if verbose:
        lines += [line for failure in summary["failures"] for line in _failure(failure)]
    return "\n".join(lines)


def _failure(failure: dict[str, Any]) -> list[str]:
    lines = ["", f"{failure['case']} [{failure['category']}, {failure['language'] or '?'}]"]
    lines += [f"  ✗ {problem}" for problem in failure["problems"]]
    for message, reply in zip(failure["turns"], failure["replies"], strict=False):
        lines.append(f"  visitor: {_short(message)}")
        lines.append(f"  agent:   {_short(reply)}")
    return lines


def _short(text: str, limit: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 1] + "…"
