"""CodeGen's Table 1 beside the rogue-agents paper's, on hand-made problem records."""

from __future__ import annotations

from typing import Any

import pytest

from byzllm.reproduce.codegen import (
    TABLE1,
    as_games,
    control_gains,
    table1_comparison,
)


def _record(problem: int, condition: str, passed: bool, **extra: Any) -> dict[str, Any]:
    return {
        "source": "humaneval",
        "split": "test",
        "problem_id": f"HumanEval/{problem}",
        "condition": condition,
        "repeat": 0,
        "passed": passed,
        "resets": 0,
        "resamples": 0,
        "simulated": True,
        "simulated_execution": True,
        **extra,
    }


def _records() -> list[dict[str, Any]]:
    # 10 test problems: zero-shot passes 6, the debate 8, the monitor 9; a validation record
    # that must not count anywhere.
    rows = [_record(p, "zero-shot", p < 6) for p in range(10)]
    rows += [_record(p, "none", p < 8) for p in range(10)]
    rows += [_record(p, "monitor-1", p < 9) for p in range(10)]
    rows += [_record(p, "turn-only-1", p < 9) for p in range(10)]
    rows.append(_record(99, "monitor-1", False, split="validation"))
    return rows


def test_table1_quotes_the_paper() -> None:
    # The rogue-agents paper, Table 1 (LLAMA-3.1-70B, Pass@1 %).
    assert TABLE1 == {
        "HumanEval": {"zero-shot": 80.5, "none": 81.6, "monitor-1": 83.5},
        "LiveCodeBench": {"zero-shot": 18.2, "none": 19.3, "monitor-1": 21.8},
    }


def test_comparison_cell_by_cell_on_test_problems_only() -> None:
    rows = table1_comparison(_records())
    assert [(r["benchmark"], r["condition"]) for r in rows] == [
        (b, c) for b in ("HumanEval", "LiveCodeBench") for c in ("zero-shot", "none", "monitor-1")
    ]
    he = {r["condition"]: r for r in rows if r["benchmark"] == "HumanEval"}
    # The validation record is left out: the monitor passes 9 of 10, not 9 of 11.
    assert [he[c]["pass_at_1"] for c in ("zero-shot", "none", "monitor-1")] == [60.0, 80.0, 90.0]
    assert he["monitor-1"]["pass_at_1_paper"] == 83.5
    assert he["monitor-1"]["pass_at_1_diff"] == pytest.approx(6.5)
    assert he["zero-shot"]["pass_at_1_diff"] == pytest.approx(-20.5)
    for r in he.values():
        assert r["pass_at_1_low"] <= r["pass_at_1"] <= r["pass_at_1_high"]
        assert r["simulated"] is True
    lcb = [r for r in rows if r["benchmark"] == "LiveCodeBench"]
    # Not run: no number of ours, no difference, the paper's number still shown.
    assert all(r["pass_at_1"] is None and r["pass_at_1_diff"] is None for r in lcb)
    assert [r["pass_at_1_paper"] for r in lcb] == [18.2, 19.3, 21.8]


def test_control_gains_are_paired_over_problems_with_a_verdict() -> None:
    games = as_games(_records())
    assert {g["game_id"] for g in games if g["split"] == "test"} == {
        f"humaneval:HumanEval/{p}" for p in range(10)
    }
    turn_only, single = control_gains(_records(), ["monitor-1", "turn-only-1"])
    # monitor-1 and turn-only-1 pass the same 9 problems: a gain of 0, not significant.
    assert turn_only["comparison"] == "monitor-1 - turn-only-1"
    assert turn_only["value"] == 0.0 and turn_only["verdict"] == "not significant"
    assert "points of Pass@1" in turn_only["sentence"]
    assert "over 10 test problems" in turn_only["sentence"]
    # The single-feature control was not run: n/a, and the sentence says why.
    assert single["value"] is None and single["verdict"] == "n/a"
    assert "add single-feature-1 to conditions" in single["sentence"]


def test_a_significant_gain_is_called_so() -> None:
    rows = [_record(p, "monitor-1", True) for p in range(30)]
    rows += [_record(p, "turn-only-1", p < 10) for p in range(30)]
    gain = control_gains(rows)[0]
    assert gain["value"] == pytest.approx(100 * 20 / 30, abs=0.01)
    assert gain["low"] > 0 and gain["verdict"] == "significant"
