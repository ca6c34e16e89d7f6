"""Report rows of CodeGen runs: Table 1 (Pass@1 per condition with bootstrap intervals), the
monitor's paired gains, per-problem outcomes (the rogue-agents paper, §4.1, §5 Table 1).

The monitor's gain is set against no intervention and against the two controls every
monitor report shows (:data:`~byzllm.experiments.monitor.ablations.CONTROLS`): the
turn-count-only monitor and the best single-feature monitor; each gain carries its 95%
interval and "not significant" when that interval contains 0 (:func:`gain_rows`).

Every row is measured on the test split only: records of the train and validation problems
(``byzllm codegen collect``, which the monitors were fitted and selected on) are left out
wherever they appear.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np

from byzllm.monitor.dataset import game_flag
from byzllm.runs import BOOTSTRAP_METHOD, bootstrap_interval, sign_counts
from byzllm.runs.reports import format_bounds, format_interval

from .._order import in_unit_order
from .config import CODEGEN_CONDITIONS

__all__ = [
    "CONDITION_NAMES",
    "INTERVAL_NOTE",
    "gain_line",
    "gain_rows",
    "not_hidden",
    "paired_gain",
    "problem_rows",
    "short_of_asked",
    "table1_rows",
    "test_only",
]

#: Table 1's row names, and the other conditions'.
CONDITION_NAMES: dict[str, str] = {
    "zero-shot": "Zero-shot prompting",
    "none": "Multi-agent",
    "monitor-1": "Multi-agent + monitor",
    "monitor-2": "Multi-agent + monitor (2 interventions)",
    "random-1": "Multi-agent + random interventions",
    "random-2": "Multi-agent + random interventions (2)",
    "resample-1": "Multi-agent + monitor, resample",
    "second-best-1": "Multi-agent + 2nd-best monitor",
    "worst-1": "Multi-agent + worst monitor",
    "turn-only-1": "Multi-agent + turn-count-only monitor",
    "single-feature-1": "Multi-agent + best single-feature monitor",
}


#: How Table 1's Pass@1 intervals are computed (:func:`table1_rows`), as its captions say.
INTERVAL_NOTE = f"{BOOTSTRAP_METHOD}; repeats averaged per problem"


def _order(condition: str) -> int:
    return CODEGEN_CONDITIONS.index(condition) if condition in CODEGEN_CONDITIONS else 99


def _key(item: tuple[tuple[str, str], Any]) -> tuple[str, int]:
    return item[0][0], _order(item[0][1])


def _reason(row: dict[str, Any]) -> str:
    """The last line of a failure's account (the assertion, for HumanEval)."""
    lines = [ln for ln in str(row.get("hidden_detail", "")).splitlines() if ln.strip()]
    return (lines[-1] if lines else str(row.get("hidden_status", "")))[:200]


def test_only(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The records of test problems (rows without a split are test rows)."""
    return [r for r in rows if str(r.get("split", "test")) == "test"]


def _per_problem(rows: Sequence[dict[str, Any]]) -> dict[tuple[str, str], dict[str, float]]:
    """Mean Pass@1 over repeats per (source, condition) and problem, test problems only."""
    acc: dict[tuple[str, str], dict[str, list[bool]]] = defaultdict(lambda: defaultdict(list))
    for r in test_only(rows):
        acc[(str(r["source"]), str(r["condition"]))][str(r["problem_id"])].append(
            game_flag(r, "passed")
        )
    return {k: {p: float(np.mean(v)) for p, v in d.items()} for k, d in acc.items()}


def _by_condition(
    rows: Sequence[dict[str, Any]], key: str
) -> list[tuple[tuple[str, str], list[dict[str, Any]]]]:
    """The test rows grouped by (``row[key]``, condition), in ``key`` order and then the
    conditions' order."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in test_only(rows):
        groups[(str(r[key]), str(r["condition"]))].append(r)
    return sorted(groups.items(), key=lambda kv: (kv[0][0], _order(kv[0][1])))


def table1_rows(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per (source, condition): Pass@1 with its 95% bootstrap interval over problems
    (repeats averaged per problem first; the problems in the order of their ids,
    :func:`~byzllm.experiments._order.natural_key`, whatever the records' order),
    interventions, parse fall-backs, run failures; test problems only."""
    per = _per_problem(rows)
    out = []
    for (source, condition), group in _by_condition(rows, "source"):
        values = in_unit_order(per[(source, condition)])
        ci = bootstrap_interval(values, rate=True)
        parse_calls = sum(v.get("calls", 0) for g in group for v in (g.get("parse") or {}).values())
        parse_fb = sum(
            v.get("fallbacks", 0) for g in group for v in (g.get("parse") or {}).values()
        )
        out.append(
            {
                "source": source,
                "condition": condition,
                "method": CONDITION_NAMES.get(condition, condition),
                "problems": len(values),
                "runs": len(group),
                "pass_at_1": ci.value,
                "ci_low": ci.low,
                "ci_high": ci.high,
                "interventions": sum(int(g["resets"]) + int(g["resamples"]) for g in group),
                "parse_calls": parse_calls,
                "parse_fallbacks": parse_fb,
                "run_failures": sum(sum((g.get("run_failures") or {}).values()) for g in group),
                "syntax_errors": sum(int(g.get("syntax_errors", 0)) for g in group),
                "simulated": any(bool(g["simulated"]) for g in group),
                "simulated_execution": any(bool(g["simulated_execution"]) for g in group),
                "interval_method": BOOTSTRAP_METHOD,
            }
        )
    return out


def not_hidden(rows: Sequence[dict[str, Any]]) -> list[str]:
    """A ``warning:`` line per source whose test problems were not all judged on hidden tests:
    a LiveCodeBench file whose private cases did not read (the official release's compressed
    pickles, never unpickled) tests a problem on its public cases, the examples its statement
    shows every role, or, without any case, counts it as failed. The Pass@1 of such a run is
    not the benchmark's, and the table alone does not show it."""
    kinds: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for r in test_only(rows):
        kinds[str(r["source"])][str(r.get("hidden_from", "hidden"))].add(str(r["problem_id"]))
    lines = []
    for source, found in sorted(kinds.items()):
        total = len(set().union(*found.values()))
        public, none = len(found.get("public", ())), len(found.get("none", ()))
        if public:
            lines.append(
                f"warning: {source}: {public} of {total} test problems were tested on their "
                "public cases only, which their statements show the coders, the judge and the "
                "tester: their private cases did not read (decompress private_test_cases to "
                "JSON, docs/codegen.md)"
            )
        if none:
            lines.append(
                f"warning: {source}: {none} of {total} test problems have no test case at all "
                "and count as failed"
            )
    return lines


def short_of_asked(table: Sequence[dict[str, Any]], n_test: int | None) -> str | None:
    """A warning when a Table 1 row holds fewer test problems than the run's ``n_test`` asked,
    else ``None``: a table over 12 problems must not pass for one of 40.

    Either the test split held fewer (``byzllm codegen run`` says so when it starts, but the
    report may be read long after) or the run has not finished.
    """
    if not n_test:
        return None
    short = [int(r["problems"]) for r in table if int(r["problems"]) < n_test]
    if not short:
        return None
    low, high = min(short), max(short)
    held = str(low) if low == high else f"{low} to {high}"
    return (
        f"warning: n_test={n_test}, but the table's rows hold {held} test problems "
        "(a test split shorter than n_test, or a run not finished)"
    )


def paired_gain(
    rows: Sequence[dict[str, Any]], condition: str = "monitor-1", baseline: str = "none"
) -> list[dict[str, Any]]:
    """Pass@1 of ``condition`` minus ``baseline`` on the problems both ran, per source, with
    a 95% bootstrap interval over those problems (paired: the same problems and draws)."""
    per = _per_problem(rows)
    out = []
    for source in sorted({s for s, _ in per}):
        a, b = per.get((source, condition)), per.get((source, baseline))
        if not a or not b:
            continue
        common = sorted(set(a) & set(b))
        diffs = [a[p] - b[p] for p in common]
        ci = bootstrap_interval(diffs)
        better, worse = sign_counts(diffs)  # problems where the condition did better, worse
        out.append(
            {
                "source": source,
                "comparison": f"{condition} - {baseline}",
                "problems": len(common),
                "gain": ci.value,
                "ci_low": ci.low,
                "ci_high": ci.high,
                "better": better,  # the verdict's sign test
                "worse": worse,
            }
        )
    return out


def gain_rows(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """``monitor-1`` against no intervention and against each control
    (:data:`~byzllm.experiments.monitor.ablations.CONTROLS`), per source: :func:`paired_gain`'s
    rows plus ``verdict`` ("significant", "not significant": the interval contains 0, or
    the exact sign test over the problems does not reach p < 0.05). A control that was not
    run gets a row with ``gain = None`` saying so; without ``monitor-1`` there is no row."""
    from byzllm.experiments.monitor.ablations import CONTROLS, interval_verdict

    # Only the sources where the monitor ran: elsewhere "add the control" would not help.
    sources = sorted(
        {str(r["source"]) for r in test_only(rows) if r.get("condition") == "monitor-1"}
    )
    out: list[dict[str, Any]] = []
    for baseline in ("none", *CONTROLS):
        found = {g["source"]: g for g in paired_gain(rows, "monitor-1", baseline)}
        for source in sources:
            g = found.get(source)
            if g is None and baseline == "none":
                continue
            if g is None:
                g = {
                    "source": source,
                    "comparison": f"monitor-1 - {baseline}",
                    "problems": 0,
                    "gain": None,
                    "ci_low": None,
                    "ci_high": None,
                }
            g["over"] = CONTROLS.get(baseline, "no intervention")
            g["verdict"] = interval_verdict(
                g["ci_low"], g["ci_high"], better=g.get("better"), worse=g.get("worse")
            )
            out.append(g)
    return out


def gain_line(g: dict[str, Any]) -> str:
    """One :func:`gain_rows` row as the report prints it."""
    from byzllm.experiments.monitor.ablations import verdict_flag

    if g["gain"] is None:
        return (
            f"{g['source']}: {g['comparison']} = n/a ({g['comparison'].split(' - ')[-1]} not "
            "run: add it to conditions, with a monitors file that has it)"
        )
    flag = verdict_flag(g["ci_low"], g["ci_high"], better=g.get("better"), worse=g.get("worse"))
    # The one number format of every report (runs/reports.py): never ``-0.0``.
    gain = format_interval(g["gain"], scale=100, signed=True)
    bounds = format_bounds(g["ci_low"], g["ci_high"], scale=100, signed=True)
    return (
        f"{g['source']}: {g['comparison']} = {gain} points {bounds}{flag} on "
        f"{g['problems']} problems (paired)"
    )


def problem_rows(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per test problem and condition: passed runs, and the first failure's reason."""
    out = []
    for (pid, condition), group in _by_condition(rows, "problem_id"):
        failed = [g for g in group if not game_flag(g, "passed")]
        out.append(
            {
                "problem": pid,
                "condition": condition,
                "passed": len(group) - len(failed),
                "runs": len(group),
                "interventions": sum(int(g["resets"]) + int(g["resamples"]) for g in group),
                "failure": (
                    failed[0]["hidden_detail"].splitlines() or [failed[0]["hidden_status"]]
                )[-1][:200]
                if failed
                else "",
            }
        )
    return out
