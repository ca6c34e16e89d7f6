"""Threshold / feature / degree selection by expected gain (the rogue-agents paper, §4.2, D.2)."""

from __future__ import annotations

import numpy as np
import pytest

from byzllm.errors import InputError
from byzllm.monitor import (
    DEFAULT_GRID,
    MonitorSet,
    TurnDataset,
    expected_gain,
    feature_subsets,
    format_table5,
    game_min_scores,
    joint_choice,
    random_gain_curve,
    select_random_baseline,
    select_role_monitor,
    threshold_gain_curve,
    train_monitor_set,
)

from ._fixtures import train_set, validation_set


def test_expected_gain_by_hand() -> None:
    # b = 0.5; triggered: one success (-0.5) and two failures (+0.5 each) -> 0.5 / 4.
    assert expected_gain([1, 0, 1, 1], [1, 1, 0, 0], 0.5) == pytest.approx(0.125)
    assert expected_gain([0, 0, 0, 0], [1, 1, 0, 0], 0.5) == 0.0
    # Triggering everything gains nothing when b is the games' own rate.
    assert expected_gain([1, 1, 1, 1, 1], [1, 0, 0, 0, 1], 0.4) == pytest.approx(0.0)


def test_threshold_curve_by_hand() -> None:
    minima = np.array([0.7, 0.8, 0.32, 0.54, 0.1])
    success = np.array([1, 1, 0, 0, 0])
    taus = np.array([0.0, 0.1, 0.11, 0.32, 0.33, 0.54, 0.55, 0.7, 0.71, 0.8, 0.81, 1.0])
    gains = threshold_gain_curve(minima, success, 0.4, taus)
    expected = [0, 0, 0.08, 0.08, 0.16, 0.16, 0.24, 0.24, 0.12, 0.12, 0.0, 0.0]
    assert gains == pytest.approx(expected)


def test_threshold_curve_matches_naive_loop() -> None:
    rng = np.random.default_rng(1)
    minima = rng.random(300)
    success = rng.random(300) < 0.6
    fast = threshold_gain_curve(minima, success, 0.6)
    naive = [expected_gain(minima < tau, success, 0.6) for tau in DEFAULT_GRID]
    assert fast == pytest.approx(naive, abs=1e-12)


def test_game_min_scores() -> None:
    out = game_min_scores([0.5, 0.2, 0.9], [0, 0, 2], 4)
    assert out.tolist() == [0.2, np.inf, 0.9, np.inf]


def test_random_gain_by_hand() -> None:
    # n = (1, 2) turns, y = (1, 0), b = 0.5, p = 0.5: hit = (0.5, 0.75);
    # gain = (0.5 * -0.5 + 0.75 * 0.5) / 2 = 0.0625.
    assert random_gain_curve([1, 2], [1, 0], 0.5, [0.0, 0.5, 1.0]) == pytest.approx(
        [0.0, 0.0625, 0.0]
    )


def test_grid_reproduces_tiny_hand_made_case_exactly() -> None:
    # See _fixtures: the degree-1 entropy monitor is P = 0.9 - 0.4 e; on validation the game
    # minima are 0.7 (S), 0.8 (S), 0.32 (F), 0.54 (F), 0.1 (F) and b = 0.4. Triggering all three
    # failures and no success (0.54 < τ <= 0.7) gives the largest possible gain 3 * 0.4 / 5 =
    # 0.24, first reached at τ = 0.55. Ties go to fewer features, then lower degree.
    sel = select_role_monitor(train_set(), validation_set(), "accuser")
    assert (sel.features, sel.degree, sel.threshold) == (("entropy",), 1, 0.55)
    assert sel.gain == pytest.approx(0.24, abs=1e-12)
    assert sel.base_rate == pytest.approx(0.4)
    assert len(sel.grid) == 7 * 5
    by_key = {(g.features, g.degree): g for g in sel.grid}
    # Without entropy the monitor is constant (0.5): no threshold gains anything, τ = 0 wins.
    assert by_key[(("varentropy",), 1)].threshold == 0.0
    assert by_key[(("varentropy",), 1)].gain == pytest.approx(0.0, abs=1e-12)
    assert sel.monitor.predict_success(np.array([[1.0, 0.3, 1.0, 1.0]])) == pytest.approx([0.5])


def _entropy_curved_varentropy_straight(prefix: str, n_games: int) -> TurnDataset:
    """One-turn games: failures have middling entropy, successes low or high entropy (no
    straight line in entropy separates them), and varentropy is high exactly on failures."""
    rows: list[dict[str, object]] = []
    for g in range(n_games):
        ok = g % 2 == 0
        entropy = (0.0 if g % 4 == 0 else 2.0) if ok else 1.0 + 0.01 * g
        varentropy = (0.1 if ok else 1.0) + 0.01 * g
        rows.append(
            {
                "game_id": f"{prefix}{g}",
                "role": "r",
                "entropy": entropy,
                "varentropy": varentropy,
                "kurtosis": 1.0,
                "turn": 1,
                "success": ok,
            }
        )
    return TurnDataset.from_rows(rows)


def test_a_tie_goes_to_the_lower_degree_before_the_earlier_feature() -> None:
    # 6 successes and 6 failures on validation, b = 0.5: triggering exactly the failures gains
    # 6 * 0.5 / 12 = 0.25, the most possible. Entropy reaches it from degree 2 on (a curve),
    # varentropy at degree 1 already: the tie at 0.25 goes to one feature at degree 1, not to
    # entropy (listed first) at degree 2.
    train = _entropy_curved_varentropy_straight("t", 20)
    validation = _entropy_curved_varentropy_straight("v", 12)
    sel = select_role_monitor(train, validation, "r")
    by_key = {(g.features, g.degree): g.gain for g in sel.grid}
    assert by_key[(("entropy",), 1)] < 0.25
    assert by_key[(("entropy",), 2)] == pytest.approx(0.25, abs=1e-12)
    assert (sel.features, sel.degree) == (("varentropy",), 1)
    assert sel.gain == pytest.approx(0.25, abs=1e-12)
    # The grid is listed simplest first: by number of features, then degree.
    keys = [(len(g.features), g.degree) for g in sel.grid]
    assert keys == sorted(keys)
    assert [g.features for g in sel.grid[:3]] == [("entropy",), ("varentropy",), ("kurtosis",)]


def test_random_baseline_selection() -> None:
    # Accuser turns per game: (2, 1, 2, 1, 1); y = (1, 1, 0, 0, 0); b = 0.4. Then
    # gain(p) = [-0.6 (2p - p²) - 0.6 p + 0.4 (2p - p²) + 0.4 p + 0.4 p] / 5 = 0.04 (p² - p) <= 0:
    # no p helps, so p = 0 (never trigger) is chosen.
    val = validation_set()
    choice = select_random_baseline(val, "accuser")
    assert (choice.probability, choice.gain) == (0.0, 0.0)
    ps = np.array([0.25, 0.5])
    assert random_gain_curve(val.turns_per_game("accuser"), val.game_success, 0.4, ps) == (
        pytest.approx(0.04 * (ps**2 - ps))
    )


def test_random_baseline_profits_from_longer_failures() -> None:
    # A success with 1 turn and a failure with 3, b = 0.5:
    # gain(p) = [-0.5 p + 0.5 (1 - (1 - p)³)] / 2, maximal at (1 - p)² = 1/3, p ≈ 0.4226;
    # on the grid 0.42 -> (-0.21 + 0.5 * (1 - 0.58³)) / 2 = 0.096222 beats 0.43 -> 0.096202.
    rows = [
        {
            "game_id": g,
            "role": "r",
            "entropy": 0,
            "varentropy": 0,
            "kurtosis": 0,
            "turn": t,
            "success": g == "s",
        }
        for g, turns in (("s", 1), ("f", 3))
        for t in range(1, turns + 1)
    ]
    choice = select_random_baseline(TurnDataset.from_rows(rows), "r")
    assert choice.probability == 0.42
    assert choice.gain == pytest.approx((-0.21 + 0.5 * (1 - 0.58**3)) / 2)


def test_feature_subsets() -> None:
    subsets = feature_subsets()
    assert len(subsets) == 7 and subsets[0] == ("entropy",)
    assert subsets[-1] == ("entropy", "varentropy", "kurtosis")


def test_train_monitor_set_and_table5(tmp_path: object) -> None:
    monitors, _ = train_monitor_set(
        train_set(), validation_set(), roles=["accuser"], meta={"simulated": True}
    )
    assert monitors.roles["accuser"].threshold == 0.55
    table = format_table5(monitors)
    assert "accuser" in table and "Ent" in table and "24.0" in table and "0.55" in table
    path = monitors.save(tmp_path / "monitors.json")  # type: ignore[operator]
    back = MonitorSet.load(path)
    assert back.meta["simulated"] is True and back.meta["selection"] == "per-role"
    assert back.meta["expected_gain"] == pytest.approx(0.24)
    assert back.roles["accuser"].threshold == 0.55
    x = validation_set().x
    assert np.array_equal(
        back.roles["accuser"].monitor.predict_success(x),
        monitors.roles["accuser"].monitor.predict_success(x),
    )


def test_selection_needs_both_outcomes() -> None:
    rows = [
        {
            "game_id": "a",
            "role": "r",
            "entropy": 0,
            "varentropy": 0,
            "kurtosis": 0,
            "turn": 1,
            "success": True,
        }
    ]
    data = TurnDataset.from_rows(rows)
    with pytest.raises(InputError):
        select_role_monitor(data, data, "r")
    with pytest.raises(InputError):
        select_role_monitor(train_set(), validation_set(), "nobody")


def test_inconsistent_game_outcome_rejected() -> None:
    rows = [
        {
            "game_id": "a",
            "role": "r",
            "entropy": 0,
            "varentropy": 0,
            "kurtosis": 0,
            "turn": t,
            "success": t == 1,
        }
        for t in (1, 2)
    ]
    with pytest.raises(InputError):
        TurnDataset.from_rows(rows)


def test_monitor_set_load_errors(tmp_path: object) -> None:
    from pathlib import Path

    base = Path(str(tmp_path))
    with pytest.raises(InputError):
        MonitorSet.load(base / "missing.json")
    (base / "bad.json").write_text("{oops")
    with pytest.raises(InputError):
        MonitorSet.load(base / "bad.json")
    (base / "other.json").write_text('{"format": "x"}')
    with pytest.raises(InputError):
        MonitorSet.load(base / "other.json")


def test_joint_choice_beats_independent_choice_by_hand() -> None:
    # Five games: g0, g1, g2 failed, g3, g4 succeeded; b = 0.5 -> weights (+.5 x3, -.5 x2).
    # Role A's only monitor catches g0, g1 below 0.1 (standalone gain 1.0 / 5 = 0.2).
    # Role B's first monitor catches g0, g1, g3 at 0.1 and g2 at 0.3: standalone best
    # τ = 0.31 -> {g0, g1, g2, g3}, gain (1.5 - 0.5) / 5 = 0.2; its second catches only g2
    # (0.1). Chosen independently the union is {g0, g1, g2, g3}: gain 0.2. Jointly, B's
    # second monitor adds g2 to A's {g0, g1}: union gain 1.5 / 5 = 0.3.
    weights = np.array([0.5, 0.5, 0.5, -0.5, -0.5])
    a1 = np.array([0.1, 0.1, 0.9, 0.9, 0.9])
    b1 = np.array([0.1, 0.1, 0.3, 0.1, 0.9])
    b2 = np.array([0.9, 0.9, 0.1, 0.9, 0.9])
    choice, gain = joint_choice({"A": [a1], "B": [b1, b2]}, weights)
    assert choice == {"A": (0, 11), "B": (1, 11)}  # τ index 11 = 0.11
    assert gain == pytest.approx(0.3)
    alone = [threshold_gain_curve(m, weights < 0, 0.5).max() for m in (a1, b1, b2)]
    assert alone == pytest.approx([0.2, 0.2, 0.1])


def test_joint_choice_never_fires_without_gain() -> None:
    weights = np.array([-0.5, -0.5])
    choice, gain = joint_choice({"A": [np.array([0.1, 0.2])]}, weights)
    assert choice == {"A": (0, 0)} and gain == 0.0


def test_joint_choice_gain_is_that_of_the_choice_on_a_grid_without_zero() -> None:
    # Games y = (1, 1, 0), b = 2/3: weights (-1/3, -1/3, +2/3). On the grid (0.5, 0.95)
    # every choice fires: τ = 0.5 catches the two successes (gain -2/9), τ = 0.95 all three
    # (gain 0). The returned choice and its union gain must agree.
    weights = np.array([-1.0, -1.0, 2.0]) / 3
    minima = np.array([0.1, 0.2, 0.9])
    choice, gain = joint_choice({"A": [minima]}, weights, thresholds=[0.5, 0.95])
    assert choice == {"A": (0, 1)}
    assert gain == pytest.approx(0.0)
    k = choice["A"][1]
    assert gain == pytest.approx(weights[minima < [0.5, 0.95][k]].sum() / 3)


def test_joint_gain_counts_a_game_two_roles_catch_once() -> None:
    # Games g0, g1, g2 failed, g3 succeeded; b = 0.5 -> weights (+.5, +.5, +.5, -.5). A catches
    # g0, g2 below 0.11 (gain 1.0 / 4); then B, on the games A leaves, catches g1 (its g0 is
    # already caught): 0.5 / 4. The union {g0, g1, g2} gains 1.5 / 4, not the sum 2.0 / 4.
    weights = np.array([0.5, 0.5, 0.5, -0.5])
    a = np.array([0.1, 0.9, 0.1, 0.9])
    b = np.array([0.1, 0.1, 0.9, 0.9])
    choice, gain = joint_choice({"A": [a], "B": [b]}, weights)
    assert choice == {"A": (0, 11), "B": (0, 11)}
    assert gain == pytest.approx(1.5 / 4)


def test_selected_gain_triggers_strictly_below_tau() -> None:
    # §2 / D.2: a monitor triggers when P(success) falls *below* τ. Game minima 0.7 (S),
    # 0.8 (S), 0.5 (F), 0.54 (F), 0.1 (F), b = 0.4 (weights -0.6 on S, +0.4 on F). At τ = 0.5
    # only the 0.1 game triggers (the 0.5 game sits on τ): gain 0.4 / 5 = 0.08, not 0.16.
    from byzllm.monitor import UncertaintyMonitor
    from byzllm.monitor.selection import RoleCandidates, selection_for

    validation = validation_set()
    assert validation.game_success.tolist() == [True, True, False, False, False]
    candidates = RoleCandidates(
        role="accuser",
        monitors=[UncertaintyMonitor(features=("entropy",), degree=1)],
        minima=[np.array([0.7, 0.8, 0.5, 0.54, 0.1])],
        n_train_turns=1,
    )
    taus = np.array([0.0, 0.5, 0.55])
    chosen = selection_for(candidates, validation, 0.4, taus, chosen=(0, 1))
    assert (chosen.threshold, chosen.gain) == (0.5, pytest.approx(0.08))
    best = selection_for(candidates, validation, 0.4, taus)
    assert (best.threshold, best.gain) == (0.55, pytest.approx(0.24))
    # D.2's grid: τ ∈ {0, 0.01, ..., 1}, both ends included.
    assert len(DEFAULT_GRID) == 101 and (DEFAULT_GRID[0], DEFAULT_GRID[-1]) == (0.0, 1.0)


def test_dataset_from_arrays_matches_rows() -> None:
    rows = validation_set()
    again = TurnDataset.from_arrays(
        rows.x, rows.roles, [rows.games[i] for i in rows.game_index], rows.turn_success
    )
    assert np.array_equal(again.x, rows.x) and again.games == rows.games
    assert again.turns_per_game("accuser").tolist() == [2, 1, 2, 1, 1]
    assert again.base_rate == pytest.approx(0.4)


def test_train_monitor_set_joint_option() -> None:
    monitors, selections = train_monitor_set(
        train_set(), validation_set(), roles=["accuser"], joint=True
    )
    assert monitors.meta["selection"] == "joint"
    assert (selections[0].features, selections[0].degree, selections[0].threshold) == (
        ("entropy",),
        1,
        0.55,
    )
    assert monitors.meta["expected_gain"] == pytest.approx(0.24)
