"""The evaluation's figures as readable tables, one per split, and each failed case for
``--verbose``."""

from __future__ import annotations

from typing import Any

RULE = "-" * 72


def _show(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def _pr(figures: dict[str, Any]) -> str:
    return (f"precision {_show(figures['precision'])}  recall {_show(figures['recall'])}"
            f"   (tp {figures['tp']}, fp {figures['fp']}, fn {figures['fn']})")


def _cell(figures: dict[str, Any]) -> str:
    """"P/R" in two decimals; "-" for a side with nothing to measure."""
    def two(value: float | None) -> str:
        return "-" if value is None else f"{value:.2f}"

    if figures["precision"] is None and figures["recall"] is None:
        return "n/a"
    return f"{two(figures['precision'])}/{two(figures['recall'])}"


def table(summary: dict[str, Any], *, verbose: bool = False) -> str:
    agent = summary["agent"]
    name = agent["provider"] + (f" ({agent['model']} at {agent['baseUrl']})"
                                if agent.get("baseUrl") else "")
    lines = [f"Sales evaluation: {name}", f"({', '.join(summary['casesFiles'])})"]
    for split in summary["splits"].values():
        lines += ["", *split_table(split, verbose=verbose)]
    aims = summary.get("aims")
    if aims is not None:
        lines += ["", f"Aims ({aims['split']} split): " + ("all met" if aims["met"] else
                                                          f"{len(aims['missed'])} missed")]
        lines += [f"  ✗ {miss}" for miss in aims["missed"]]
    return "\n".join(lines)


def split_table(split: dict[str, Any], *, verbose: bool = False) -> list[str]:
    grounding = split["grounding"]
    seconds, chars = split["turnSeconds"], split["replyChars"]
    lines = [
        f"{split['split']} split: {split['cases']} conversations, {split['turns']} turns",
        RULE,
        f"{'capture':<16}{_pr(split['capture'])}",
        f"{'handoff':<16}{_pr(split['handoff'])}",
        f"{'booking offers':<16}{_pr(split['bookingOffer'])}",
        f"{'grounding':<16}{grounding['violations']} replies with unsupported figures; "
        f"the guard stopped {grounding['guardStopped']}",
        f"{'turn time':<16}median {seconds['median'] * 1000:.0f} ms, p95 {seconds['p95'] * 1000:.0f} ms",
        f"{'reply length':<16}median {chars['median']} characters, max {chars['max']}",
        *_by_language(split),
        RULE,
        f"{len(split['failures'])} cases with a failure"
        + ("" if verbose or not split["failures"] else " (--verbose lists them)"),
    ]
    if verbose:
        lines += [line for failure in split["failures"] for line in _failure(failure)]
    return lines


def _by_language(split: dict[str, Any]) -> list[str]:
    """Precision / recall of each decision, and of capture, overall and per language; the
    replies in the expected language."""
    languages = split["languages"]
    width = 11

    def row(label: str, cells: list[str]) -> str:
        return (f"{label:<18}" + "".join(f"{cell:<{width}}" for cell in cells)).rstrip()

    lines = ["", row(f"P/R ({split['decisionCases']} cases with decisions)", []),
             row("", ["all", *languages])]
    for decision, figures in split["decisions"].items():
        lines.append(row(decision, [_cell(figures),
                                    *(_cell(figures["byLanguage"][lang]) for lang in languages)]))
    capture = split["capture"]
    lines.append(row("capture (fields)", [_cell(capture), *(_cell(capture["byLanguage"][lang])
                                                            for lang in languages)]))
    replies = split["replyLanguage"]
    lines.append(row("reply language", [_show(replies["accuracy"]),
                                        *(_show(replies["byLanguage"][lang]["accuracy"])
                                          for lang in languages)]))
    lines.append(f"{'':<18}(replies in the expected language: {replies['correct']} of "
                 f"{replies['replies']}; {replies['undetermined']} too short to tell)")
    return lines


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
