"""The rogue-agents paper's Table 1 (CodeGen, §5), and our CodeGen runs set beside it.

Table 1 reports Pass@1 of LLAMA-3.1-70B on HumanEval and LiveCodeBench for zero-shot
prompting, the multi-agent debate and the debate with the monitor (trained on HumanEval).
:data:`TABLE1` quotes the table. The paper's §5 prose gives two different LiveCodeBench
numbers (multi-agent 20.4%, with the monitor 21.6%); the table is what we compare with.

Ours is Pass@1 on the test problems only (HumanEval's held-out test split: the monitors were
fitted and selected on the other, disjoint problems; :mod:`.splits`), repeats averaged per
problem, with a 95% bootstrap interval over problems (:func:`.report.table1_rows`).
LiveCodeBench cells stay empty unless the run tested on LiveCodeBench (LLM roles only).

The monitor's gain over the two controls every monitor report shows (the turn-count-only
and the best single-feature monitor) is computed by the monitor pipeline's own
:func:`~byzllm.experiments.monitor.ablations.control_gain_rows`, on the problems read as
games (:func:`as_games`): a problem is the game, Pass@1 its success.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from byzllm.experiments.codegen.report import CONDITION_NAMES, table1_rows, test_only
from byzllm.monitor.dataset import game_flag

from ._diff import shown_difference

__all__ = ["BENCHMARKS", "TABLE1", "as_games", "control_gains", "table1_comparison"]

#: Table 1: benchmark -> condition -> Pass@1 (%), LLAMA-3.1-70B. ``none`` is the multi-agent
#: debate without intervention, ``monitor-1`` the debate with the monitor.
TABLE1: dict[str, dict[str, float]] = {
    "HumanEval": {"zero-shot": 80.5, "none": 81.6, "monitor-1": 83.5},
    "LiveCodeBench": {"zero-shot": 18.2, "none": 19.3, "monitor-1": 21.8},
}
#: Table 1's column -> the ``source`` of our problem records.
BENCHMARKS: dict[str, str] = {"HumanEval": "humaneval", "LiveCodeBench": "livecodebench"}


def _cell(row: dict[str, Any], ours: Mapping[str, Any] | None, paper: float) -> None:
    """Pass@1 in percent with its interval, the paper's number and the difference."""
    if ours is None:
        value = low = high = None
    else:
        value = round(100 * float(ours["pass_at_1"]), 1)
        low = round(100 * float(ours["ci_low"]), 1)
        high = round(100 * float(ours["ci_high"]), 1)
    row["pass_at_1"] = value
    row["pass_at_1_low"] = low
    row["pass_at_1_high"] = high
    row["pass_at_1_paper"] = paper
    row["pass_at_1_diff"] = None if value is None else shown_difference(value - paper)


def table1_comparison(problems: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Table 1 cell by cell: per benchmark and condition, our Pass@1 [95% interval] on the
    test problems beside the paper's, and the difference in points (``None`` where we did not
    run the benchmark or the condition)."""
    ours = {(r["source"], r["condition"]): r for r in table1_rows(problems)}
    simulated = any(bool(r.get("simulated")) for r in test_only(problems))
    rows: list[dict[str, Any]] = []
    for benchmark, cells in TABLE1.items():
        for condition, paper in cells.items():
            row: dict[str, Any] = {
                "benchmark": benchmark,
                "condition": condition,
                "method": CONDITION_NAMES[condition],
                "simulated": simulated,
            }
            _cell(row, ours.get((BENCHMARKS[benchmark], condition)), paper)
            rows.append(row)
    return rows


def as_games(problems: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """CodeGen problem records in the shape of the monitor pipeline's game records (a
    problem is the game, Pass@1 its success), so that the monitor's paired gains are
    computed by the same code in every environment."""
    return [
        {
            "game_id": f"{r['source']}:{r['problem_id']}",
            "repeat": int(r.get("repeat", 0)),
            "condition": r["condition"],
            "split": r.get("split", "test"),
            "success": game_flag(r, "passed"),
            "simulated": bool(r.get("simulated")),
        }
        for r in problems
    ]


def control_gains(
    problems: Sequence[Mapping[str, Any]], conditions: Iterable[str] | None = None
) -> list[dict[str, Any]]:
    """``monitor-1`` minus the turn-count-only and minus the best single-feature monitor, in
    points of Pass@1 with paired 95% intervals over test problems and "not significant" where
    the interval contains 0 or the problems fail the sign test
    (:func:`~byzllm.experiments.monitor.ablations.control_gain_rows`);
    ``conditions`` (the run's) says why a missing control is missing."""
    from byzllm.experiments.monitor.ablations import control_gain_rows, not_evaluated

    games = as_games(problems)
    return control_gain_rows(
        games, not_evaluated(games, conditions), metric="Pass@1", units="test problems"
    )
