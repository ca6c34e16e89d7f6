"""Live interventions: per-role thresholds, budgets, resample ablation, random baseline."""

from __future__ import annotations

import math

import pytest

from byzllm.envs import TurnObservation
from byzllm.errors import InputError
from byzllm.monitor import MonitorIntervener, MonitorSet, RandomIntervener, train_monitor_set

from ._fixtures import train_set, validation_set


def _monitors() -> MonitorSet:
    # accuser: P = 0.9 - 0.4 H, τ = 0.55 -> triggers when H > 0.875.
    monitors, _ = train_monitor_set(train_set(), validation_set(), roles=["accuser"])
    return monitors


def _obs(game: str, turn: int, k: int, role: str = "accuser") -> TurnObservation:
    """A turn whose one decision position is uniform over k tokens (H = ln k)."""
    dist = [(str(i), -math.log(k)) for i in range(k)]
    return TurnObservation(game_id=game, turn=turn, role=role, agent=role, distributions=[dist])


def test_monitor_scores_and_thresholds() -> None:
    inter = MonitorIntervener(_monitors(), budget=1)
    assert inter.score(_obs("g", 1, 1)) == pytest.approx(0.9)
    assert inter.score(_obs("g", 1, 2)) == pytest.approx(0.9 - 0.4 * math.log(2))  # 0.623
    assert inter.decide(_obs("g", 1, 2)) == "continue"
    assert inter.decide(_obs("g", 2, 4)) == "reset"  # P = 0.345 < 0.55
    assert inter.decide(_obs("g", 3, 4)) == "continue"  # budget of 1 spent in game g
    assert inter.decide(_obs("h", 1, 4)) == "reset"  # a fresh game has its own budget
    assert inter.interventions_used("g") == {"accuser": 1}
    assert [(t.game_id, t.turn, t.acted) for t in inter.triggers] == [
        ("g", 2, True),
        ("g", 3, False),
        ("h", 1, True),
    ]


def test_unmonitored_role_always_continues() -> None:
    inter = MonitorIntervener(_monitors(), budget=2)
    assert inter.score(_obs("g", 1, 8, role="intel")) is None
    assert inter.decide(_obs("g", 1, 8, role="intel")) == "continue"


def test_budget_two_and_resample_mode() -> None:
    inter = MonitorIntervener(_monitors(), budget={"accuser": 2}, mode="resample")
    decisions = [inter.decide(_obs("g", t, 4)) for t in (1, 2, 3)]
    assert decisions == ["resample", "resample", "continue"]


def test_shadow_monitor_logs_without_acting() -> None:
    inter = MonitorIntervener(_monitors(), budget=0)
    assert inter.decide(_obs("g", 5, 4)) == "continue"
    assert inter.triggers[0].acted is False and inter.triggers[0].turn == 5


def test_threshold_override() -> None:
    inter = MonitorIntervener(_monitors(), thresholds={"accuser": 0.0})
    assert inter.decide(_obs("g", 1, 16)) == "continue"


def test_no_decision_position_is_scored_from_turn_alone() -> None:
    inter = MonitorIntervener(_monitors())
    obs = TurnObservation(game_id="g", turn=1, role="accuser", agent="a")
    assert inter.score(obs) == pytest.approx(0.9)  # H = 0


def test_random_intervener_probability_extremes_and_budget() -> None:
    always = RandomIntervener({"accuser": 1.0}, budget=1)
    assert [always.decide(_obs("g", t, 2)) for t in (1, 2)] == ["reset", "continue"]
    never = RandomIntervener(0.0, roles=["accuser", "intel"], budget=1)
    assert all(never.decide(_obs("g", t, 2)) == "continue" for t in range(1, 50))


def test_random_intervener_is_reproducible_per_game_regardless_of_interleaving() -> None:
    a = RandomIntervener({"accuser": 0.3}, budget=100, seed=7)
    b = RandomIntervener({"accuser": 0.3}, budget=100, seed=7)
    seq_a = [(g, a.decide(_obs(g, t, 2))) for g in ("x", "y") for t in range(1, 30)]
    seq_b = [(g, b.decide(_obs(g, t, 2))) for t in range(1, 30) for g in ("y", "x")]
    for game in ("x", "y"):
        assert [d for g, d in seq_a if g == game] == [d for g, d in seq_b if g == game]
    fired = sum(d == "reset" for _, d in seq_a)
    assert 5 < fired < 35  # ~0.3 * 58


def test_bad_configuration() -> None:
    with pytest.raises(InputError):
        MonitorIntervener(_monitors(), mode="explode")
    with pytest.raises(InputError):
        MonitorIntervener(_monitors(), budget=-1)
    with pytest.raises(InputError):
        RandomIntervener({"a": 1.5})
    with pytest.raises(InputError):
        RandomIntervener(0.5)


def test_turn_clock_restarts_after_a_reset() -> None:
    # After a reset at total turn 4 the next turn is turn 1 of the new run (reference
    # implementation: game turn = total turns - turns of previous runs).
    inter = MonitorIntervener(_monitors(), budget=1)
    assert inter.decide(_obs("g", 4, 4)) == "reset"
    assert inter.run_turn(_obs("g", 5, 1)) == 1
    assert inter.run_turn(_obs("other", 5, 1)) == 5
    resampler = MonitorIntervener(_monitors(), budget=1, mode="resample")
    assert resampler.decide(_obs("g", 4, 4)) == "resample"
    assert resampler.run_turn(_obs("g", 5, 1)) == 4  # the same turn, asked again
    total = MonitorIntervener(_monitors(), budget=1, turn_clock="total")
    assert total.decide(_obs("g", 4, 4)) == "reset"
    with pytest.raises(InputError):
        MonitorIntervener(_monitors(), turn_clock="sideways")  # type: ignore[arg-type]


def test_run_turn_reported_by_the_environment_wins() -> None:
    inter = MonitorIntervener(_monitors(), budget=1)
    # Interventions the intervener never saw (another intervener, an earlier run): the
    # environment's run turn is exact where inference from its own resets could not be.
    obs = _obs("g", 12, 1).model_copy(update={"run_turn": 3})
    assert inter.run_turn(obs) == 3
    assert inter.decide(_obs("g", 4, 4)) == "reset"
    assert inter.run_turn(_obs("g", 9, 1).model_copy(update={"run_turn": 5})) == 5
    assert inter.run_turn(_obs("g", 9, 1)) == 5  # absent: inferred from its own reset at 4
    with pytest.raises(ValueError):
        TurnObservation(game_id="g", turn=1, run_turn=0, role="a", agent="a")


def test_malformed_distributions_are_counted_not_fatal() -> None:
    inter = MonitorIntervener(_monitors())
    obs = TurnObservation(
        game_id="g", turn=1, role="accuser", agent="a", distributions=[[("x", float("nan"))]]
    )
    assert inter.decide(obs) == "continue"
    assert len(inter.scoring_errors) == 1 and "g turn 1" in inter.scoring_errors[0]


def test_make_intervener_for_every_condition() -> None:
    from byzllm.monitor import CONDITIONS, make_intervener

    monitors = _monitors()
    assert make_intervener("none", None) is None
    shadow = make_intervener("none", monitors)
    assert isinstance(shadow, MonitorIntervener) and shadow.budget == {"accuser": 0}
    for condition in CONDITIONS[1:]:
        inter = make_intervener(condition, monitors, seed=3)
        assert inter is not None
        assert set(inter.budget.values()) == {int(condition[-1])}
    resample = make_intervener("resample-1", monitors)
    assert resample is not None and resample.mode == "resample"
    assert isinstance(make_intervener("random-2", monitors), RandomIntervener)
    with pytest.raises(InputError):
        make_intervener("monitor-9", monitors)
    with pytest.raises(InputError):
        make_intervener("monitor-1", None)
