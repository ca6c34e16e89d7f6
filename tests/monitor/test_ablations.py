"""Ablation monitors and their report (the rogue-agents paper, §6.1, Table 3).

The turn-count-only monitor must read nothing but the turn count; the second-best and worst
monitors are picked from the validation ranking as Table 3 does; paired differences of
Success-Rate are hand-computed; monitor sets written before ablations were kept still load.
"""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pytest

from byzllm.errors import InputError
from byzllm.experiments.monitor.ablations import (
    Difference,
    ablation_rows,
    control_gain_rows,
    feature_gain,
    feature_gain_sentence,
    gain_sentence,
    monitor_gains,
    not_evaluated,
    success_difference,
    verdict,
)
from byzllm.monitor import (
    ABLATIONS,
    CONDITIONS,
    TURN_ONLY,
    GridPoint,
    MonitorIntervener,
    MonitorSet,
    RoleCandidates,
    RoleSelection,
    TurnDataset,
    UncertaintyMonitor,
    best_single_feature,
    condition_monitors,
    grid_ablations,
    make_intervener,
    missing_conditions,
    rank_candidates,
    select_turn_only_monitor,
    train_monitor_set,
)
from byzllm.monitor.report import evaluation_rows

from ._fixtures import train_rows as _fixture_train_rows
from ._fixtures import train_set, validation_set
from ._fixtures import validation_rows as validation_set_rows

# -- the turn-count-only monitor ---------------------------------------------------------------


def _informative_turns(n_games: int, seed: int, prefix: str) -> TurnDataset:
    """Games whose outcome shows in entropy *and* in the turn count (failures run longer)."""
    rng = np.random.default_rng(seed)
    rows = []
    for g in range(n_games):
        success = bool(rng.random() < 0.6)
        for turn in range(1, (5 if success else 9) + 1):
            rows.append(
                {
                    "game_id": f"{prefix}{g}",
                    "role": "accuser" if turn % 2 else "intel",
                    "entropy": float(rng.gamma(2, 0.3) + (0.0 if success else 0.8)),
                    "varentropy": float(rng.gamma(2, 0.2)),
                    "kurtosis": float(rng.gamma(3, 1.0)),
                    "turn": turn,
                    "success": success,
                }
            )
    return TurnDataset.from_rows(rows)


def _scramble_uncertainty(data: TurnDataset, seed: int) -> TurnDataset:
    """The same turns with entropy, varentropy and kurtosis replaced by unrelated noise."""
    rng = np.random.default_rng(seed)
    x = data.x.copy()
    x[:, :3] = rng.permutation(x[:, :3], axis=0) * rng.uniform(0.5, 2.0, size=3)
    return TurnDataset(
        x=x,
        roles=data.roles,
        game_index=data.game_index,
        games=data.games,
        game_success=data.game_success,
    )


def test_turn_only_monitor_ignores_every_uncertainty_feature() -> None:
    data = _informative_turns(40, 0, "t")
    scrambled = _scramble_uncertainty(data, 1)
    y = data.turn_success
    turn_only = UncertaintyMonitor(features=TURN_ONLY, degree=3).fit(data.x, y)
    refit = UncertaintyMonitor(features=TURN_ONLY, degree=3).fit(scrambled.x, y)
    # Fit on other uncertainty values, scored on other ones: nothing moves.
    assert np.array_equal(turn_only.coef_, refit.coef_)
    assert np.array_equal(turn_only.predict_success(data.x), refit.predict_success(scrambled.x))
    assert turn_only.columns_.tolist() == [3]
    # The scramble is no no-op: a monitor that reads entropy does change.
    with_entropy = UncertaintyMonitor(features=("entropy",), degree=3).fit(data.x, y)
    assert not np.allclose(
        with_entropy.predict_success(data.x), with_entropy.predict_success(scrambled.x)
    )


def test_turn_only_monitor_saves_and_loads() -> None:
    data = _informative_turns(20, 2, "t")
    monitor = UncertaintyMonitor(features=(), degree=2).fit(data.x, data.turn_success)
    saved = monitor.to_dict()
    assert saved["features"] == [] and saved["columns"] == ["turn"]
    back = UncertaintyMonitor.from_json(json.dumps(saved))
    assert np.array_equal(back.predict_success(data.x), monitor.predict_success(data.x))


def test_trained_turn_only_monitors_do_not_see_uncertainty() -> None:
    train, validation = _informative_turns(60, 3, "t"), _informative_turns(30, 4, "v")
    monitors, _ = train_monitor_set(train, validation)
    again, _ = train_monitor_set(
        _scramble_uncertainty(train, 5), _scramble_uncertainty(validation, 6)
    )
    for role in ("accuser", "intel"):
        first = monitors.ablations["turn-only"][role]
        second = again.ablations["turn-only"][role]
        assert first.monitor.features == ()
        assert (first.threshold, first.gain, first.monitor.degree) == (
            second.threshold,
            second.gain,
            second.monitor.degree,
        )
        assert np.array_equal(first.monitor.coef_, second.monitor.coef_)
    # The selected monitors do read the (here informative) entropy, so they change.
    assert any(
        monitors.roles[r].gain != again.roles[r].gain
        or monitors.roles[r].monitor.features != again.roles[r].monitor.features
        for r in ("accuser", "intel")
    )


def test_turn_only_selection_searches_degrees_and_thresholds_like_the_grid() -> None:
    train, validation = _informative_turns(60, 3, "t"), _informative_turns(30, 4, "v")
    choice = select_turn_only_monitor(train, validation, "accuser", degrees=(1, 2, 3))
    assert choice.ablation == "turn-only" and choice.features == ()
    assert choice.n_candidates == 3 and choice.rank is None
    # Failures run longer here, so a threshold on the turn count alone gains something.
    assert choice.gain > 0 and 0 < choice.threshold < 1


# -- second best and worst ---------------------------------------------------------------------


def _hand_made(gains: list[float], selected: int) -> tuple[RoleCandidates, RoleSelection]:
    """A selection table with the given validation gains (one candidate per gain)."""
    monitors = [UncertaintyMonitor(features=("entropy",), degree=d + 1) for d in range(len(gains))]
    grid = [
        GridPoint(features=("entropy",), degree=d + 1, threshold=round(0.1 * (d + 1), 2), gain=g)
        for d, g in enumerate(gains)
    ]
    candidates = RoleCandidates(
        role="r", monitors=monitors, minima=[np.zeros(1)] * len(gains), n_train_turns=1
    )
    selection = RoleSelection(
        role="r",
        features=("entropy",),
        degree=selected + 1,
        threshold=grid[selected].threshold,
        gain=gains[selected],
        base_rate=0.5,
        n_train_turns=1,
        n_validation_games=1,
        grid=grid,
        monitor=monitors[selected],
    )
    return candidates, selection


def test_rank_candidates_breaks_ties_towards_the_simpler_candidate() -> None:
    # 0.1 and 0.1 + 1e-15 are the same sum of game weights in another order: a tie.
    assert rank_candidates([0.05, 0.1, 0.1 + 1e-15, 0.02, 0.07, 0.02]) == [1, 2, 4, 0, 3, 5]


def test_second_best_and_worst_of_a_hand_made_table() -> None:
    # Ranking by gain: #1 (0.10), #2 (0.10, tie: later), #4 (0.07), #0, #3 (0.02), #5 (0.02).
    candidates, selection = _hand_made([0.05, 0.10, 0.10, 0.02, 0.07, 0.02], selected=1)
    second, worst = grid_ablations(candidates, selection)
    assert (second.ablation, second.degree, second.rank, second.gain) == ("second-best", 3, 2, 0.10)
    assert second.threshold == 0.3 and second.monitor is candidates.monitors[2]
    assert (worst.ablation, worst.degree, worst.rank, worst.gain) == ("worst", 6, 6, 0.02)
    assert worst.n_candidates == 6


def test_second_best_is_the_best_other_when_the_selection_is_not_first() -> None:
    # A joint selection may pick a candidate that is not the standalone best.
    candidates, selection = _hand_made([0.05, 0.10, 0.01, 0.07], selected=3)
    second, worst = grid_ablations(candidates, selection)
    assert (second.degree, second.rank) == (2, 1)
    assert (worst.degree, worst.rank) == (3, 4)


def test_a_single_candidate_has_no_ablation() -> None:
    assert grid_ablations(*_hand_made([0.1], selected=0)) == []


def _with_features(
    candidates: RoleCandidates, selection: RoleSelection, features: list[tuple[str, ...]]
) -> tuple[RoleCandidates, RoleSelection]:
    """The same hand-made table with each candidate reading ``features[k]``."""
    monitors = [UncertaintyMonitor(features=f, degree=1) for f in features]
    grid = [
        g.model_copy(update={"features": f}) for g, f in zip(selection.grid, features, strict=True)
    ]
    chosen = candidates.monitors.index(selection.monitor)
    return (
        candidates.model_copy(update={"monitors": monitors}),
        selection.model_copy(
            update={"grid": grid, "monitor": monitors[chosen], "features": features[chosen]}
        ),
    )


def test_best_single_feature_is_the_best_ranked_one_feature_candidate() -> None:
    # Gains: #0 (Ent Var) 0.10 selected, #1 (Kur) 0.04, #2 (Var) 0.07, #3 (Ent Kur) 0.09.
    table = _hand_made([0.10, 0.04, 0.07, 0.09], selected=0)
    candidates, selection = _with_features(
        *table, [("entropy", "varentropy"), ("kurtosis",), ("varentropy",), ("entropy", "kurtosis")]
    )
    single = best_single_feature(candidates, selection)
    assert single is not None and single.ablation == "single-feature"
    # Not the second best (#3 reads two features): the best of those reading one.
    assert single.features == ("varentropy",) and single.rank == 3 and single.gain == 0.07
    assert single.monitor is candidates.monitors[2] and single.threshold == 0.3
    # A selected monitor of one feature is its own best single-feature monitor.
    candidates, selection = _with_features(
        *_hand_made([0.10, 0.04], selected=0), [("kurtosis",), ("entropy", "kurtosis")]
    )
    own = best_single_feature(candidates, selection)
    assert own is not None and own.monitor is selection.monitor and own.rank == 1
    # No one-feature candidate: none.
    candidates, selection = _with_features(
        *_hand_made([0.1, 0.2], selected=1), [("entropy", "kurtosis"), ("entropy", "varentropy")]
    )
    assert best_single_feature(candidates, selection) is None


def test_trained_set_keeps_ranked_ablations() -> None:
    monitors, selections = train_monitor_set(train_set(), validation_set(), roles=["accuser"])
    assert list(monitors.ablations) == list(ABLATIONS)
    grid = selections[0].grid
    gains = [g.gain for g in grid]
    second = monitors.ablations["second-best"]["accuser"]
    worst = monitors.ablations["worst"]["accuser"]
    assert monitors.roles["accuser"].rank == 1 and monitors.meta["candidates"] == 35
    assert (second.rank, worst.rank) == (2, 35)
    assert second.gain == pytest.approx(sorted(gains)[-2])
    assert worst.gain == pytest.approx(min(gains))
    assert monitors.ablations["turn-only"]["accuser"].monitor.features == ()
    single = monitors.ablations["single-feature"]["accuser"]
    assert len(single.monitor.features) == 1
    best_single = max(g.gain for g in grid if len(g.features) == 1)
    assert single.gain == pytest.approx(best_single)


# -- monitor sets, conditions ------------------------------------------------------------------


def _set() -> MonitorSet:
    return train_monitor_set(train_set(), validation_set(), roles=["accuser"])[0]


def test_ablations_survive_the_json_round_trip(tmp_path: Any) -> None:
    monitors = _set()
    back = MonitorSet.load(monitors.save(tmp_path / "m.json"))
    assert back.ablations.keys() == monitors.ablations.keys()
    x = validation_set().x
    for name in ABLATIONS:
        a, b = monitors.ablations[name]["accuser"], back.ablations[name]["accuser"]
        assert (a.threshold, a.gain, a.rank) == (b.threshold, b.gain, b.rank)
        assert np.array_equal(a.monitor.predict_success(x), b.monitor.predict_success(x))


def test_a_set_written_before_ablations_loads_and_says_to_retrain(tmp_path: Any) -> None:
    data = _set().to_dict()
    del data["ablations"]
    for entry in data["roles"].values():
        del entry["rank"]
    path = tmp_path / "old.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    old = MonitorSet.load(path)
    assert old.ablations == {} and old.roles["accuser"].rank is None
    # Serialized exactly as before: evaluate units carrying it keep their ids.
    assert old.to_dict() == data
    assert missing_conditions(CONDITIONS, old) == [
        "second-best-1",
        "worst-1",
        "turn-only-1",
        "single-feature-1",
    ]
    with pytest.raises(InputError, match=r"not trained.*rerun `byzllm monitor train`"):
        make_intervener("turn-only-1", old)
    assert isinstance(make_intervener("monitor-1", old), MonitorIntervener)


@pytest.mark.parametrize(
    "mutate",
    [
        lambda d: d["ablations"].update({"best-ever": d["ablations"]["worst"]}),
        lambda d: d["ablations"]["worst"]["accuser"].update(threshold=1.5),
        lambda d: d["ablations"]["worst"]["accuser"].update(rank=0),
        lambda d: d["ablations"]["worst"]["accuser"].update(rank="2"),
        lambda d: d.update(variant="best-ever"),
        lambda d: d["ablations"].update(worst=[1, 2]),
    ],
)
def test_malformed_ablations_are_refused(mutate: Any) -> None:
    data = _set().to_dict()
    mutate(data)
    with pytest.raises(InputError):
        MonitorSet.from_dict(data)


def test_each_condition_runs_its_own_monitors() -> None:
    monitors = _set()
    for condition, ablation in (
        ("second-best-1", "second-best"),
        ("worst-1", "worst"),
        ("turn-only-1", "turn-only"),
        ("single-feature-1", "single-feature"),
    ):
        part = condition_monitors(condition, monitors)
        assert part.variant == ablation and part.ablations == {}
        assert part.roles["accuser"] is monitors.ablations[ablation]["accuser"]
        # A unit carries only its part; the intervener is the same from either.
        for given in (monitors, MonitorSet.from_dict(part.to_dict())):
            inter = make_intervener(condition, given)
            assert isinstance(inter, MonitorIntervener) and inter.budget == {"accuser": 1}
            assert inter.monitors.roles["accuser"].monitor.features == (
                monitors.ablations[ablation]["accuser"].monitor.features
            )
    selected = condition_monitors("monitor-1", monitors)
    assert selected.variant is None and selected.ablations == {}
    assert "ablations" not in selected.to_dict()
    with pytest.raises(InputError):
        make_intervener("monitor-1", condition_monitors("turn-only-1", monitors))


# -- paired differences and the report ---------------------------------------------------------


def _g(condition: str, game: str, repeat: int, success: bool) -> dict[str, Any]:
    return {
        "split": "test",
        "condition": condition,
        "game_id": game,
        "repeat": repeat,
        "success": success,
        "accused": True,
        "total_turns": 10,
        "resets": 0,
        "resamples": 0,
        "simulated": True,
    }


# (game, repeat) -> success under monitor-1 (a) and turn-only-1 (b):
#   g1: a (1, 1), b (0, 1) -> per-game difference (1 + 0) / 2 = 0.5
#   g2: a (0, 1), b (0, 1) -> 0
#   g3: a (1, 1), b (1, 0) -> 0.5
# SR(a) = 5/6, SR(b) = 3/6: difference 1/3, the mean of (0.5, 0, 0.5).
PAIRED = [
    _g(c, g, r, bool(s))
    for c, table in (
        ("monitor-1", {"g1": (1, 1), "g2": (0, 1), "g3": (1, 1)}),
        ("turn-only-1", {"g1": (0, 1), "g2": (0, 1), "g3": (1, 0)}),
        ("none", {"g1": (0, 0), "g2": (0, 1), "g3": (1, 0)}),
    )
    for g, outcomes in table.items()
    for r, s in enumerate(outcomes)
]


def test_paired_difference_by_hand() -> None:
    d = feature_gain(PAIRED)
    assert d is not None and d.paired
    assert (d.a, d.b, d.n, d.pairs) == ("monitor-1", "turn-only-1", 3, 6)
    assert d.value == pytest.approx(1 / 3)
    # Resampling 3 games from (0.5, 0, 0.5): the mean is 0 with probability 1/27 (3.7%) and
    # 0.5 with probability 8/27; both exceed 2.5%, so the 95% interval is exactly [0, 0.5].
    assert (d.low, d.high) == (0.0, 0.5)
    assert "paired" in d.method and "2000 resamples" in d.method


def test_pairs_are_matched_by_game_and_repeat() -> None:
    # monitor-1 also played a repeat turn-only-1 did not: it is left out of the pairs.
    extra = [*PAIRED, _g("monitor-1", "g2", 2, True)]
    d = feature_gain(extra)
    assert d is not None and d.pairs == 6 and d.value == pytest.approx(1 / 3)


def test_unpaired_when_the_conditions_share_no_game() -> None:
    games = [_g("monitor-1", f"a{i}", 0, i < 3) for i in range(4)] + [
        _g("turn-only-1", f"b{i}", 0, i < 1) for i in range(4)
    ]
    d = success_difference(games, "monitor-1", "turn-only-1")
    assert d is not None and not d.paired and d.pairs == 0 and d.n == 8
    assert d.value == pytest.approx(0.75 - 0.25)
    assert d.low <= d.value <= d.high and "unpaired" in d.method


def test_no_difference_without_games() -> None:
    assert success_difference(PAIRED, "monitor-1", "worst-1") is None


def test_feature_gain_sentence() -> None:
    line = feature_gain_sentence(feature_gain(PAIRED))
    # The interval [0, 0.5] contains 0 (at its end): not significant.
    assert line == (
        "monitor gain over the turn-count-only monitor: +33.3 points of Success-Rate "
        "(95% CI [+0.0, +50.0], not significant; paired bootstrap over 3 test games)"
    )
    reasons = not_evaluated([g for g in PAIRED if g["condition"] != "turn-only-1"], CONDITIONS)
    assert reasons["turn-only-1"].startswith("not trained; rerun `byzllm monitor train`")
    missing = feature_gain_sentence(None, reasons)
    assert "n/a" in missing and "not trained" in missing
    # Left out of the conditions on purpose is not "not trained".
    asked = not_evaluated(PAIRED, ["none", "monitor-1"])
    assert asked["worst-1"] == "not evaluated: add worst-1 to conditions"
    assert "turn-only-1" not in asked
    unknown = not_evaluated(PAIRED, None)  # a store without the evaluation's config
    assert unknown["worst-1"].startswith("not evaluated: not trained or not in conditions")


def test_ablation_rows_by_hand() -> None:
    rows = {r["condition"]: r for r in ablation_rows(evaluation_rows(PAIRED), PAIRED)}
    assert list(rows) == ["monitor-1", "turn-only-1", "none"]  # Table 3 order
    # turn-only-1 vs none: per game (1 - 0) / 2, 0, (1 - 1 + 0 - 0) / 2 -> 1/6.
    assert rows["turn-only-1"]["vs_none"]["value"] == pytest.approx(100 / 6)
    assert rows["turn-only-1"]["vs_selected"]["value"] == pytest.approx(-100 / 3)
    assert rows["monitor-1"]["vs_selected"]["value"] is None
    assert rows["none"]["vs_none"]["value"] is None
    assert all(r["paired"] and r["simulated"] for r in rows.values())


def _d(value: float, low: float, high: float) -> Difference:
    return Difference(
        a="monitor-1", b="turn-only-1", value=value, low=low, high=high, n=10, pairs=10,
        paired=True, method="m",
    )  # fmt: skip


@pytest.mark.parametrize(
    ("low", "high", "word"),
    [
        (-0.017, 0.075, "not significant"),  # a WhoDunit gain of +2.8 [-1.7, +7.5]
        (0.0, 0.05, "not significant"),
        (-0.05, 0.0, "not significant"),
        (0.001, 0.05, "significant"),
        (-0.08, -0.01, "significant"),
        (math.nan, math.nan, "n/a"),
    ],
)
def test_verdict_calls_an_interval_containing_zero_not_significant(
    low: float, high: float, word: str
) -> None:
    # The verdict reads the interval only, never the point estimate.
    for value in (-0.03, 0.0, 0.02):
        assert verdict(_d(value, low, high)) == word


def test_gain_sentences_say_not_significant_only_when_the_interval_contains_zero() -> None:
    crossing = gain_sentence("single-feature-1", _d(0.028, -0.017, 0.075))
    assert crossing == (
        "monitor gain over the best single-feature monitor: +2.8 points of Success-Rate "
        "(95% CI [-1.7, +7.5], not significant; paired bootstrap over 10 test games)"
    )
    clear = gain_sentence("turn-only-1", _d(0.06, 0.02, 0.1), metric="Survival-Rate")
    assert "not significant" not in clear
    assert clear.startswith("monitor gain over the turn-count-only monitor: +6.0 points of ")
    assert "Survival-Rate (95% CI [+2.0, +10.0]; paired" in clear
    assert verdict(None) == "n/a" and "n/a" in gain_sentence("single-feature-1", None)


# single-feature-1 beside PAIRED's monitor-1 (g1: 1 1, g2: 0 1, g3: 1 1):
#   g1 (1, 0) -> (0 + 1) / 2 = 0.5, g2 (1, 1) -> (-1 + 0) / 2 = -0.5, g3 (0, 1) -> 0.5
# monitor-1 minus single-feature-1 = mean(0.5, -0.5, 0.5) = 1/6.
SINGLE = [
    _g("single-feature-1", g, r, bool(s))
    for g, outcomes in {"g1": (1, 0), "g2": (1, 1), "g3": (0, 1)}.items()
    for r, s in enumerate(outcomes)
]


def test_control_gains_by_hand() -> None:
    gains = monitor_gains(PAIRED + SINGLE)
    assert list(gains) == ["turn-only-1", "single-feature-1"]
    single = gains["single-feature-1"]
    assert single is not None and single.value == pytest.approx(1 / 6) and single.n == 3
    rows = control_gain_rows(PAIRED + SINGLE)
    assert [r["comparison"] for r in rows] == [
        "monitor-1 - turn-only-1",
        "monitor-1 - single-feature-1",
    ]
    assert rows[0]["value"] == pytest.approx(33.33) and rows[1]["value"] == pytest.approx(16.67)
    # Resampling (0.5, -0.5, 0.5) reaches -0.5 (1/27) and 0.5 (8/27): [-50, +50] contains 0.
    assert (rows[1]["low"], rows[1]["high"]) == (-50.0, 50.0)
    assert [r["verdict"] for r in rows] == ["not significant", "not significant"]
    assert all("not significant" in r["sentence"] for r in rows)
    # Without the single-feature condition the row says why.
    reasons = not_evaluated(PAIRED, CONDITIONS)
    missing = control_gain_rows(PAIRED, reasons)[1]
    assert missing["value"] is None and missing["verdict"] == "n/a"
    assert "single-feature-1 not trained" in missing["sentence"]


def test_a_gain_above_zero_that_fails_the_sign_test_says_why() -> None:
    """An interval above 0 called "not significant" read as a contradiction: the line now
    gives the sign test that decided it. 5 games better, 0 worse: p = 2 / 2**5 = 0.0625."""
    gain = _d(0.2, 0.067, 0.333).model_copy(update={"better": 5, "worse": 0})
    assert verdict(gain) == "not significant"
    assert gain_sentence("turn-only-1", gain, metric="Survival-Rate") == (
        "monitor gain over the turn-count-only monitor: +20.0 points of Survival-Rate "
        "(95% CI [+6.7, +33.3], not significant (sign test: 5 better, 0 worse, p = 0.06); "
        "paired bootstrap over 10 test games)"
    )
    # Six of six pass (p = 2 / 64 = 0.03): significant, no flag.
    six = gain.model_copy(update={"better": 6})
    assert verdict(six) == "significant"
    assert "significant" not in gain_sentence("turn-only-1", six)


def test_gain_sentences_never_print_negative_zero() -> None:
    # docs/govsim.md quoted "95% CI [-0.0, +16.7]": a lower end just below zero.
    line = gain_sentence("turn-only-1", _d(0.083, -0.0001, 0.167), metric="Survival-Rate")
    assert "-0.0" not in line
    assert "+8.3 points of Survival-Rate (95% CI [+0.0, +16.7], not significant" in line


# -- no uncertainty signal -----------------------------------------------------------------------


def test_training_refuses_features_that_never_vary() -> None:
    """One alternative per decision position (top_logprobs or sim.top_k of 1) renormalizes to
    a point mass: H = V = K = 0 on every turn. Every candidate would read the turn count
    alone while the report named an uncertainty monitor."""
    rows = [
        {**row, "entropy": 0.0, "varentropy": 0.0, "kurtosis": 0.0} for row in _fixture_train_rows()
    ]
    with pytest.raises(InputError, match="same on every training turn of every role"):
        train_monitor_set(TurnDataset.from_rows(rows), validation_set())
    # One role flat among others (a scripted server, a near-deterministic role): trained,
    # and named, since its monitor reads the turn count alone.
    other = [{**row, "role": "intel"} for row in _fixture_train_rows()]
    validation = TurnDataset.from_rows(
        [*validation_set_rows(), *({**r, "role": "intel"} for r in validation_set_rows())]
    )
    monitors, _ = train_monitor_set(TurnDataset.from_rows([*rows, *other]), validation)
    assert monitors.meta["flat_roles"] == ["accuser"]
    assert "flat_roles" not in train_monitor_set(train_set(), validation_set())[0].meta


def test_one_alternative_is_refused_where_it_is_renormalized() -> None:
    from byzllm.experiments.codegen import CodeGenConfig
    from byzllm.experiments.monitor import MonitorExperimentConfig

    for config in (MonitorExperimentConfig, CodeGenConfig):
        with pytest.raises(ValueError, match="at least 2"):
            config.model_validate({"top_logprobs": 1})
        assert config.model_validate({"top_logprobs": 1, "renormalize": False}).top_logprobs == 1
        assert config.model_validate({"top_logprobs": 2}).top_logprobs == 2


def test_outcomes_read_back_from_csv_are_read_strictly() -> None:
    # A CSV export reads back "True" / "False": bool("False") is True, which made every
    # game a success here while the per-condition table (evaluation_rows) read them right.
    games = [{**g, "success": str(g["success"])} for g in PAIRED]
    d = feature_gain(games)
    assert d is not None and d.value == pytest.approx(1 / 3)
    rates = {r["condition"]: r["success_rate"] for r in evaluation_rows(games)}
    assert d.value == pytest.approx(rates["monitor-1"] - rates["turn-only-1"])
    with pytest.raises(InputError, match="malformed"):
        feature_gain([{**g, "success": "yes"} for g in PAIRED])
