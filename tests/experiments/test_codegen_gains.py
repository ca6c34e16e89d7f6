"""CodeGen's monitor gains over no intervention and the two controls, on hand-made problems
(the rogue-agents paper, §5 Table 1; the controls of docs/monitor.md)."""

from __future__ import annotations

from typing import Any

import pytest

from byzllm.experiments.codegen.report import gain_line, gain_rows


def _p(
    condition: str, problem: str, repeat: int, passed: bool, split: str = "test"
) -> dict[str, Any]:
    return {
        "source": "humaneval",
        "condition": condition,
        "problem_id": problem,
        "repeat": repeat,
        "passed": passed,
        "split": split,
    }


# Pass@1 per problem (two repeats each):
#   monitor-1:   p1 (1, 1) 1.0, p2 (1, 0) 0.5, p3 (0, 0) 0.0, p4 (1, 1) 1.0
#   none:        p1 (1, 0) 0.5, p2 (1, 0) 0.5, p3 (0, 0) 0.0, p4 (0, 1) 0.5
#   turn-only-1: p1 (1, 1) 1.0, p2 (1, 1) 1.0, p3 (0, 0) 0.0, p4 (1, 1) 1.0
# monitor-1 - none = mean(0.5, 0, 0, 0.5) = 0.25; - turn-only-1 = mean(0, -0.5, 0, 0) = -0.125.
TABLE = {
    "monitor-1": {"p1": (1, 1), "p2": (1, 0), "p3": (0, 0), "p4": (1, 1)},
    "none": {"p1": (1, 0), "p2": (1, 0), "p3": (0, 0), "p4": (0, 1)},
    "turn-only-1": {"p1": (1, 1), "p2": (1, 1), "p3": (0, 0), "p4": (1, 1)},
}
ROWS = [
    _p(c, p, r, bool(v))
    for c, problems in TABLE.items()
    for p, outcomes in problems.items()
    for r, v in enumerate(outcomes)
] + [_p("none", "v1", 0, False, split="validation")]  # never counted


def test_gains_over_none_and_the_controls_by_hand() -> None:
    rows = {g["comparison"]: g for g in gain_rows(ROWS)}
    assert list(rows) == [
        "monitor-1 - none",
        "monitor-1 - turn-only-1",
        "monitor-1 - single-feature-1",
    ]
    none, turn, single = rows.values()
    assert none["gain"] == pytest.approx(0.25) and none["problems"] == 4
    assert none["over"] == "no intervention"
    # Differences (0.5, 0, 0, 0.5) -> resampled means from 0 (p = 1/16) to 0.5 (1/16): the
    # interval's lower end is 0, which the interval contains: not significant.
    assert none["ci_low"] == 0.0 and none["verdict"] == "not significant"
    assert turn["gain"] == pytest.approx(-0.125) and turn["ci_low"] < 0 <= turn["ci_high"]
    assert turn["verdict"] == "not significant"
    assert turn["over"] == "the turn-count-only monitor"
    assert single["gain"] is None and single["verdict"] == "n/a"
    assert "n/a (single-feature-1 not run" in gain_line(single)
    assert gain_line(turn) == (
        f"humaneval: monitor-1 - turn-only-1 = -12.5 points [{100 * turn['ci_low']:+.1f}, "
        f"{100 * turn['ci_high']:+.1f}], not significant on 4 problems (paired)"
    )


def test_a_gain_whose_interval_excludes_zero_is_not_flagged() -> None:
    rows = [_p(c, f"p{k}", 0, c == "monitor-1") for c in ("monitor-1", "none") for k in range(6)]
    (gain,) = [g for g in gain_rows(rows) if g["comparison"] == "monitor-1 - none"]
    assert (gain["gain"], gain["ci_low"], gain["ci_high"]) == (1.0, 1.0, 1.0)
    assert gain["verdict"] == "significant" and "significant" not in gain_line(gain)


def test_a_gain_that_rounds_to_zero_never_prints_negative_zero() -> None:
    # docs/codegen.md's ablation table showed "-0.0 [-7.5, +8.2]": a difference of two
    # equal Pass@1 rates computed as a tiny negative number.
    gain = {
        "source": "humaneval",
        "comparison": "monitor-1 - none",
        "gain": -1e-12,
        "ci_low": -0.075,
        "ci_high": -0.0004,
        "verdict": "significant",
        "problems": 49,
    }
    assert gain_line(gain) == (
        "humaneval: monitor-1 - none = +0.0 points [-7.5, +0.0] on 49 problems (paired)"
    )


def test_a_gain_on_three_problems_is_not_significant_however_clear() -> None:
    """Three problems the monitor wins and none it loses: the paired interval is
    [+100, +100], but three coin flips agree one time in four (sign test p = 0.25); six
    give p = 0.03."""
    from byzllm.runs import sign_test_p

    def rows(problems: int) -> list[dict[str, Any]]:
        return [
            {"source": "h", "condition": c, "problem_id": f"P{p}", "passed": c == "monitor-1"}
            for p in range(problems)
            for c in ("none", "monitor-1")
        ]

    three = next(g for g in gain_rows(rows(3)) if g["comparison"] == "monitor-1 - none")
    assert (three["ci_low"], three["ci_high"], three["better"], three["worse"]) == (1, 1, 3, 0)
    assert sign_test_p(3, 0) == 0.25 and three["verdict"] == "not significant"
    assert gain_line(three) == (
        "h: monitor-1 - none = +100.0 points [+100.0, +100.0], not significant "
        "(sign test: 3 better, 0 worse, p = 0.25) on 3 problems (paired)"
    )
    six = next(g for g in gain_rows(rows(6)) if g["comparison"] == "monitor-1 - none")
    assert six["verdict"] == "significant"


def test_without_the_monitor_no_control_row_asks_for_the_control() -> None:
    rows = [{"source": "h", "condition": "none", "problem_id": "P0", "passed": True}]
    assert gain_rows(rows) == []


def test_a_gain_whose_units_lean_the_other_way_is_not_significant() -> None:
    """Eight big wins and 24 small losses: the mean gain's interval is above 0, but more
    problems got worse; the two-sided sign test alone called it significant."""
    from byzllm.experiments.monitor.ablations import interval_verdict

    assert interval_verdict(0.037, 0.347, better=8, worse=24) == "not significant"
    assert interval_verdict(0.1, 0.3, better=20, worse=2) == "significant"
    assert interval_verdict(-0.3, -0.1, better=2, worse=20) == "significant"
