"""Success-Rate, Precision, Game-Length and their standard errors, by hand."""

from __future__ import annotations

import math

import pytest

from byzllm.envs.whodunit import GameResult, game_metrics, summarize_runs


def g(success: bool, accused: bool, turns: int) -> GameResult:
    return GameResult(
        game_id="x",
        variant="asym",
        success=success,
        accused=accused,
        culprit=1,
        accused_suspect=1 if success else (2 if accused else None),
        total_turns=turns,
    )


RUN_A = [g(True, True, 10), g(False, True, 20), g(False, False, 31), g(True, True, 5)]
RUN_B = [g(True, True, 8), g(True, True, 12), g(False, False, 31), g(False, False, 31)]


def test_one_run() -> None:
    m = game_metrics(RUN_A)
    assert m.games == 4 and m.accused == 3
    assert m.success_rate == pytest.approx(0.5)
    assert m.precision == pytest.approx(2 / 3)
    assert m.game_length == pytest.approx(66 / 4)


def test_precision_without_accusations_is_nan() -> None:
    m = game_metrics([g(False, False, 31)])
    assert math.isnan(m.precision) and m.success_rate == 0.0


def test_single_run_standard_errors_are_across_games() -> None:
    s = summarize_runs([RUN_A])
    assert s.runs == 1 and s.games == 4
    assert s.success_rate_se == pytest.approx(math.sqrt(0.5 * 0.5 / 4))  # 0.25
    assert s.precision_se == pytest.approx(math.sqrt((2 / 3) * (1 / 3) / 3))
    # lengths 10, 20, 31, 5: mean 16.5, squared deviations 42.25+12.25+210.25+132.25 = 397
    assert s.game_length_se == pytest.approx(math.sqrt(397 / 3) / 2)


def test_repeated_runs_standard_errors_are_across_runs() -> None:
    s = summarize_runs([RUN_A, RUN_B])
    # success rates 0.5 and 0.5 -> se 0; precision 2/3 and 1; lengths 16.5 and 20.5
    assert s.success_rate == pytest.approx(0.5) and s.success_rate_se == pytest.approx(0.0)
    assert s.precision == pytest.approx(5 / 6)
    assert s.precision_se == pytest.approx(abs(1 - 2 / 3) / math.sqrt(2) / math.sqrt(2))
    assert s.game_length == pytest.approx(18.5)
    assert s.game_length_se == pytest.approx(2.0)  # sd = 2*sqrt(2), / sqrt(2)


def test_an_empty_run_is_left_out_of_every_statistic() -> None:
    # An empty run beside one with games is one run: the game-length standard error is
    # RUN_A's across its games (it was NaN, read from the empty run).
    assert summarize_runs([[], RUN_A]) == summarize_runs([RUN_A])
