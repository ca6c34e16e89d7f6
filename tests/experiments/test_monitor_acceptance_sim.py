"""Acceptance (the rogue-agents paper, Fig. 4 pattern, simulated): WhoDunitEnv-Asym, fixed seeds.

The whole pipeline on the default asymmetric games (210 train / 90 validation / 180 test)
with simulated agents, on three split seeds: collect without interventions, select per-role
monitors on validation, then play the test games twice per condition. On every seed the
selected monitor with one reset must raise Success-Rate over no intervention and over the
random baseline, and the mean game length must grow by less than 2x. Nothing here is tuned
to pass: the signal comes from the simulated agents' belief-driven decision distributions and
from the turn count (failed games run longer).

The turn-count-only monitor is played too, so that what the uncertainty features add over
the turn count is measured on the same games (paired); how much that is, is not asserted —
it is what ``docs/monitor.md`` reports, interval included.
"""

from __future__ import annotations

import asyncio

import pytest

from byzllm.experiments.monitor import (
    MonitorExperimentConfig,
    collect_units,
    datasets_from_rows,
    evaluate_units,
    feature_gain,
    run_in_memory,
)
from byzllm.monitor import MonitorSet, train_monitor_set
from byzllm.monitor.report import evaluation_rows, trigger_turns

#: Split seeds the pattern must hold on (each: its own train / validation / test games, its
#: own monitors). ``docs/monitor.md`` shows a script for more seeds and conditions.
SEEDS = (0, 1, 2)


def _run(seed: int) -> dict[str, object]:
    """The whole pipeline for one split seed."""
    cfg = MonitorExperimentConfig(
        seed=seed, repeats=2, conditions=["none", "monitor-1", "random-1", "turn-only-1"]
    )
    collected = asyncio.run(run_in_memory(collect_units(cfg)))
    turns = [r for r in collected if r["kind"] == "monitor_turn"]
    train, validation = datasets_from_rows(turns)
    monitors, _ = train_monitor_set(train, validation, meta={"simulated": True})
    games = asyncio.run(run_in_memory(evaluate_units(cfg, monitors)))
    rows = {r["condition"]: r for r in evaluation_rows(games)}
    return {"rows": rows, "monitors": monitors.to_dict(), "games": games}


@pytest.fixture(scope="module")
def outcomes() -> dict[int, dict[str, object]]:
    out = {seed: _run(seed) for seed in SEEDS}
    for result in out.values():
        result["monitors"] = MonitorSet.from_dict(result["monitors"])  # JSON round trip too
    return out


@pytest.fixture(scope="module")
def outcome(outcomes: dict[int, dict[str, object]]) -> dict[str, object]:
    return outcomes[SEEDS[0]]


@pytest.mark.parametrize("seed", SEEDS)
def test_monitor_with_one_reset_beats_no_intervention_and_random(
    outcomes: dict[int, dict[str, object]], seed: int
) -> None:
    rows = outcomes[seed]["rows"]
    assert isinstance(rows, dict)
    none, mon, rnd = rows["none"], rows["monitor-1"], rows["random-1"]
    assert none["simulated"] and mon["simulated"]
    assert none["games"] == mon["games"] == rnd["games"] == 360
    assert mon["success_rate"] > none["success_rate"]
    assert mon["success_rate"] > rnd["success_rate"]
    assert mon["game_length"] < 2 * none["game_length"]
    assert 0 < mon["interventions_per_game"] <= 2  # at most one reset per role


def test_selected_monitors_predict_gain_on_validation(outcome: dict[str, object]) -> None:
    monitors = outcome["monitors"]
    assert isinstance(monitors, MonitorSet)
    assert set(monitors.roles) == {"accuser", "intel"}
    for role_monitor in monitors.roles.values():
        assert role_monitor.gain > 0 and 0 < role_monitor.threshold < 1
        assert role_monitor.gain >= monitors.random_baseline[role_monitor.role].gain


def test_shadow_monitor_logs_trigger_turns(outcome: dict[str, object]) -> None:
    games = outcome["games"]
    assert isinstance(games, list)
    turns = trigger_turns(games)
    assert turns["success"] or turns["failure"]
    none_games = [g for g in games if g["condition"] == "none"]
    assert all(g["resets"] == 0 for g in none_games)
    assert all(not t["acted"] for g in none_games for t in g["triggers"])


@pytest.mark.parametrize("seed", SEEDS)
def test_feature_gain_is_paired_over_every_test_game(
    outcomes: dict[int, dict[str, object]], seed: int
) -> None:
    games, rows, monitors = (outcomes[seed][k] for k in ("games", "rows", "monitors"))
    assert isinstance(games, list) and isinstance(rows, dict) and isinstance(monitors, MonitorSet)
    for role in ("accuser", "intel"):
        assert monitors.ablations["turn-only"][role].monitor.features == ()
    gain = feature_gain(games)
    assert gain is not None and gain.paired
    assert (gain.n, gain.pairs) == (180, 360)
    # Every game pairs with itself, so the paired estimate is the difference of the rates.
    difference = rows["monitor-1"]["success_rate"] - rows["turn-only-1"]["success_rate"]
    assert gain.value == pytest.approx(difference)
    assert gain.low < gain.value < gain.high
