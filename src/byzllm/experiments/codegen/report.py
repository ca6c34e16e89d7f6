"""Report rows of CodeGen runs: Table 1 (Pass@1 per condition with bootstrap intervals), the
monitor's paired gain, per-problem outcomes (the rogue-agents paper, §4.1, §5 Table 1).

Every row is measured on the test split only: records of the train and validation problems
(``byzllm codegen collect``, which the monitors were fitted and selected on) are left out
wherever they appear.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np

from .._intervals import BOOTSTRAP_METHOD, bootstrap_interval
from .config import CODEGEN_CONDITIONS

__all__ = ["CONDITION_NAMES", "paired_gain", "problem_rows", "table1_rows", "test_only"]

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
}


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
        acc[(str(r["source"]), str(r["condition"]))][str(r["problem_id"])].append(bool(r["passed"]))
    return {k: {p: float(np.mean(v)) for p, v in d.items()} for k, d in acc.items()}


def table1_rows(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per (source, condition): Pass@1 with its 95% bootstrap interval over problems
    (repeats averaged per problem first), interventions, parse fall-backs, run failures;
    test problems only."""
    per = _per_problem(rows)
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in test_only(rows):
        groups[(str(r["source"]), str(r["condition"]))].append(r)
    out = []
    for (source, condition), group in sorted(
        groups.items(), key=lambda kv: (kv[0][0], _order(kv[0][1]))
    ):
        values = list(per[(source, condition)].values())
        ci = bootstrap_interval(values)
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
        ci = bootstrap_interval([a[p] - b[p] for p in common])
        out.append(
            {
                "source": source,
                "comparison": f"{condition} - {baseline}",
                "problems": len(common),
                "gain": ci.value,
                "ci_low": ci.low,
                "ci_high": ci.high,
            }
        )
    return out


def problem_rows(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per test problem and condition: passed runs, and the first failure's reason."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in test_only(rows):
        groups[(str(r["problem_id"]), str(r["condition"]))].append(r)
    out = []
    for (pid, condition), group in sorted(
        groups.items(), key=lambda kv: (kv[0][0], _order(kv[0][1]))
    ):
        failed = [g for g in group if not g["passed"]]
        out.append(
            {
                "problem": pid,
                "condition": condition,
                "passed": sum(bool(g["passed"]) for g in group),
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
