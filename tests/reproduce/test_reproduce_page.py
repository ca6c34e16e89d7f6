"""The reproduce page's gap explanations and sensitivity table, on hand-made rows."""

from __future__ import annotations

from typing import Any

import pytest

from byzllm.agents.codegen import CodeGenSimParams
from byzllm.agents.consensus import STRONG_PROFILE, WEAK_PROFILE
from byzllm.agents.govsim import FisherParams
from byzllm.reproduce.page import (
    NO_SENSITIVITY,
    REAL_UNEXPLAINED,
    SENSITIVITY,
    Sensitivity,
    gap_rows,
    page_markdown,
    sensitivity_rows,
)


def _row(topology: str, bfti: float, low: float | None, high: float | None, paper: float) -> Any:
    return {
        "protocol": "sac",
        "topology": topology,
        "BFTI": bfti,
        "BFTI_low": low,
        "BFTI_high": high,
        "BFTI_paper": paper,
        "BFTI_diff": bfti - paper,
    }


ROWS = [
    _row("merg", 4.3, 1.0, 7.0, 7.6),  # 7.6 outside [1, 7]: a gap
    _row("complete", 4.8, 1.0, 8.0, 3.8),  # inside: no gap
    _row("erdos-renyi", 4.3, None, None, 6.2),  # no interval, differs: a gap
]
ANCHORING = SENSITIVITY["consensus"][2]
SELF_TRUST = SENSITIVITY["consensus"][0]


def _sensitivity() -> Sensitivity:
    result = Sensitivity(headline="BFTI", units=12, seconds=3.0, note="hand-made")
    # anchoring 0 reaches 8.0 on MERG (spans the paper's 7.6); self_trust only lowers it.
    result.runs = [
        (ANCHORING, 0.0, [_row("merg", 8.0, 5, 11, 7.6), _row("erdos-renyi", 5.0, 2, 8, 6.2)]),
        (ANCHORING, 0.5, [_row("merg", 6.0, 3, 9, 7.6), _row("erdos-renyi", 4.5, 2, 7, 6.2)]),
        (SELF_TRUST, 0.5, [_row("merg", -3.0, -6, 0, 7.6), _row("erdos-renyi", -1.0, -4, 2, 6.2)]),
    ]
    return result


def test_gaps_outside_the_interval_are_explained_by_the_ranges_that_span_them() -> None:
    gaps = gap_rows("sac-table1", ROWS, ["BFTI"], _sensitivity())
    assert [(g["cell"], g["diff"]) for g in gaps] == [
        ("sac / merg", -3.3),
        ("sac / erdos-renyi", -1.9),
    ]
    merg, er = gaps
    assert merg["explanation"] == (
        "simulator assumptions: `anchoring` over its range gives 4.3 to 8.0, which contains 7.6"
    )
    assert "self_trust" not in merg["explanation"]
    # Nothing reaches 6.2 on Erdős–Rényi (at most 5.0): unexplained.
    assert er["explanation"] == "unexplained" and er["low"] is None
    # Without sensitivity runs every gap is unexplained.
    assert {g["explanation"] for g in gap_rows("sac-table1", ROWS, ["BFTI"])} == {"unexplained"}


def test_a_gap_line_says_the_difference_its_row_says() -> None:
    """The line recomputed the difference from rounded values: the table said 24.8 / 42.5
    (-17.8) and the line (-17.7)."""
    row = {"cell": "x", "gain": 24.8, "gain_paper": 42.5, "gain_diff": -17.8}
    row.update({"protocol": "sac", "topology": "merg", "gain_low": 20.0, "gain_high": 30.0})
    [gap] = gap_rows("ra-table3", [row], ["gain"])
    assert gap["diff"] == -17.8


def test_sensitivity_table_and_page() -> None:
    sensitivity = _sensitivity()
    table = sensitivity_rows(ROWS, sensitivity)
    assert table[0] == {
        "cell": "sac / merg",
        "paper": 7.6,
        "defaults": "4.3",
        "anchoring=0": "8.0",
        "anchoring=0.5": "6.0",
        "self_trust=0.5": "-3.0",
    }
    assert table[1]["anchoring=0"] == "-"  # no sensitivity row for that cell
    page = page_markdown(
        title="t",
        simulated=True,
        note="n",
        gaps=gap_rows("sac-table1", ROWS, ["BFTI"], sensitivity),
        sensitivity=sensitivity,
        sensitivity_table=table,
    )
    assert "## Gaps larger than their interval" in page and "unexplained." in page
    assert "## Sensitivity: BFTI as each assumption moves" in page
    assert "Cost: 3 extra simulated runs, 12 units, 3 s (hand-made)." in page
    assert "`anchoring`: default 0.9 strong, 0.3 weak; run at 0, 0.5" in page
    # A real-model page has both sections too: its gaps say why they are unexplained, its
    # sensitivity section why there is nothing to move.
    real_gaps = gap_rows("sac-table1", ROWS, ["BFTI"], unexplained=REAL_UNEXPLAINED)
    assert [g["explanation"] for g in real_gaps] == [REAL_UNEXPLAINED] * 2
    real = page_markdown(title="t", simulated=False, note="n", gaps=real_gaps, sensitivity=None)
    assert "Ours: real-model results." in real and "simulated" not in real
    assert "## Gaps larger than their interval" in real and "unexplained (real models" in real
    assert f"## Sensitivity\n\n{NO_SENSITIVITY}" in real


def test_a_partly_simulated_page_says_which_groups_ran_on_which_model() -> None:
    """A run with only its weak group on a model (``--weak-model`` alone) said "simulated
    agents (not real LLMs)", as a run without any model does."""
    from byzllm.runs.reports import partly_simulated_note

    label = partly_simulated_note({"weak": "openai/gpt-3.5-turbo"})
    page = page_markdown(title="t", simulated=label, note="n", gaps=[], sensitivity=None)
    assert (
        "Ours: partly simulated: weak agents on openai/gpt-3.5-turbo; the other agents "
        "simulated (not real LLMs)."
    ) in page
    wholly = page_markdown(title="t", simulated=True, note="n", gaps=[], sensitivity=None)
    assert "Ours: simulated agents (not real LLMs)." in wholly


def test_a_baseline_replay_is_its_own_column_and_counts_as_a_run() -> None:
    sensitivity = _sensitivity()
    sensitivity.baseline = [_row("merg", 5.0, 2, 8, 7.6)]
    table = sensitivity_rows(ROWS, sensitivity)
    assert list(table[0])[:4] == ["cell", "paper", "defaults", "defaults, replayed"]
    assert table[0]["defaults, replayed"] == "5.0" and table[1]["defaults, replayed"] == "-"
    assert sensitivity.extra_runs == 4
    page = page_markdown(
        title="t", simulated=True, note="n", gaps=[], sensitivity=sensitivity,
        sensitivity_table=table,
    )  # fmt: skip
    assert "Cost: 4 extra simulated runs" in page and "`defaults, replayed`" in page


def test_a_replayed_range_is_read_against_the_defaults_replayed_not_against_ours() -> None:
    """A rogue-agents entry's runs replay fewer conditions and repeats than the entry: the
    span took ours (the full run) as the defaults' point, so a range that never reached the
    paper's number was said to contain it. Here every run and the replayed defaults give
    3.3 or less; only ours (4.4) lies beyond the paper's 4.0."""
    row = {"paper model": "GPT-4o", "gain": 4.4, "gain_low": 4.1, "gain_high": 4.8}
    row.update({"gain_paper": 4.0, "gain_diff": 0.4})
    rogue_rate = SENSITIVITY["whodunit"][0]

    def replayed(gain: float) -> list[dict[str, Any]]:
        return [{"paper model": "GPT-4o", "gain": gain, "gain_paper": 4.0}]

    sensitivity = Sensitivity(headline="gain", baseline=replayed(3.3))
    sensitivity.runs = [(rogue_rate, 0.1, replayed(3.3)), (rogue_rate, 0.4, replayed(0.0))]
    [gap] = gap_rows("ra-fig4", [row], ["gain"], sensitivity)
    assert gap["explanation"] == "unexplained"
    # Where the replayed defaults do reach past it, the range spans it, from their value.
    sensitivity.baseline = replayed(4.5)
    [gap] = gap_rows("ra-fig4", [row], ["gain"], sensitivity)
    assert gap["explanation"] == (
        "simulator assumptions: `rogue_rate` over its range gives 0.0 to 4.5, which contains 4"
    )


def test_each_assumption_states_the_default_its_domain_declares() -> None:
    false_reject = SENSITIVITY["consensus"][1]
    assert false_reject.default == (
        f"{STRONG_PROFILE.false_reject} strong, {WEAK_PROFILE.false_reject} weak"
    )
    assert SELF_TRUST.default == str(STRONG_PROFILE.self_trust)  # the groups agree: one value
    seat = SENSITIVITY["codegen"][-1]
    assert seat.default == f"{CodeGenSimParams().zero_shot_seat} (the most skilled coder)"
    for domain, assumptions in SENSITIVITY.items():
        assert all(a.domain == domain and a.default for a in assumptions)


def test_a_changed_default_reaches_the_page(monkeypatch: pytest.MonkeyPatch) -> None:
    from byzllm.agents import _params

    moved = {"": FisherParams(greed=0.45)}
    monkeypatch.setattr(_params, "default_parameters", lambda domain: moved)
    assert SENSITIVITY["govsim"][0].default == "0.45"
