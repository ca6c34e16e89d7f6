"""Game outcomes in rows are read strictly: a "False" read back from CSV is a failure."""

from __future__ import annotations

import csv
import io
from typing import Any

import numpy as np
import pytest

from byzllm.errors import InputError
from byzllm.experiments.monitor.environments import get_environment
from byzllm.experiments.monitor.outcomes import outcome_rows
from byzllm.experiments.whodunit.report import game_estimates
from byzllm.monitor import TurnDataset
from byzllm.monitor.dataset import parse_success
from byzllm.monitor.report import evaluation_rows, trigger_turns


def _turns(outcomes: list[Any]) -> list[dict[str, Any]]:
    return [
        {
            "game_id": f"g{g}",
            "role": "accuser",
            "entropy": 0.1 * g,
            "varentropy": 0.2,
            "kurtosis": 1.0,
            "turn": turn,
            "success": success,
        }
        for g, success in enumerate(outcomes)
        for turn in (1, 2)
    ]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (True, True),
        (False, False),
        (np.bool_(True), True),
        (np.bool_(False), False),
        (1, True),
        (0, False),
        (np.int64(1), True),
        (0.0, False),
        ("True", True),
        ("False", False),
        ("false", False),
        (" TRUE ", True),
        ("1", True),
        ("0", False),
    ],
)
def test_accepted_spellings(value: Any, expected: bool) -> None:
    assert parse_success(value) is expected


def test_rows_read_back_from_csv_keep_their_outcomes() -> None:
    rows = _turns([True, False, False, True])
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
    read_back = list(csv.DictReader(io.StringIO(buffer.getvalue())))
    assert read_back[2]["success"] == "False"
    dataset = TurnDataset.from_rows(read_back)
    assert dataset.game_success.tolist() == [True, False, False, True]
    assert dataset.base_rate == 0.5
    assert np.array_equal(dataset.x, TurnDataset.from_rows(rows).x)


def test_numeric_and_lowercase_outcomes() -> None:
    dataset = TurnDataset.from_rows(_turns(["0", "1", "false", "true", 0, 1]))
    assert dataset.game_success.tolist() == [False, True, False, True, False, True]


@pytest.mark.parametrize("bad", ["yes", "", "no", None, 2, 0.5, float("nan")])
def test_other_outcomes_are_refused_naming_the_row(bad: Any) -> None:
    rows = _turns([True, True])
    rows[3]["success"] = bad
    with pytest.raises(InputError, match=r"turn row 3 is malformed: success must be"):
        TurnDataset.from_rows(rows)


def _game(game: str, success: Any, *, accused: bool = True, trigger: int | None = None) -> Any:
    return {
        "game_id": game,
        "condition": "none",
        "repeat": 0,
        "success": success,
        "accused": accused,
        "total_turns": 6,
        "resets": 0,
        "resamples": 0,
        "triggers": [] if trigger is None else [{"turn": trigger}],
    }


def test_report_reads_string_outcomes_as_the_store_bools() -> None:
    as_bools = [_game("a", True, trigger=2), _game("b", False, trigger=4), _game("c", False)]
    as_text = [{**g, "success": str(g["success"])} for g in as_bools]
    (row,) = evaluation_rows(as_text)
    assert row["success_rate"] == pytest.approx(1 / 3)
    assert row == evaluation_rows(as_bools)[0]
    assert trigger_turns(as_text) == trigger_turns(as_bools)
    assert trigger_turns(as_text)["failure"] == [4]


def test_report_refuses_an_unreadable_outcome() -> None:
    games = [_game("a", True), _game("b", "maybe")]
    with pytest.raises(InputError, match="game 'b' is malformed: success must be"):
        evaluation_rows(games)
    with pytest.raises(InputError, match="game 'b' is malformed"):
        trigger_turns(games)


def test_precision_and_intervals_read_accusations_strictly() -> None:
    # a won with an accusation, b lost with one, c lost without, d won with one:
    # Success-Rate 2/4, Precision (wins among accused games) 2/3.
    as_bools = [
        _game("a", True, accused=True),
        _game("b", False, accused=True),
        _game("c", False, accused=False),
        _game("d", True, accused=True),
    ]
    as_text = [{**g, "success": str(g["success"]), "accused": str(g["accused"])} for g in as_bools]
    (row,) = evaluation_rows(as_text)
    assert (row["success_rate"], row["precision"]) == (pytest.approx(0.5), pytest.approx(2 / 3))
    estimates = game_estimates(as_text)
    assert estimates == game_estimates(as_bools)
    assert estimates["success_rate"][0] == pytest.approx(0.5)
    assert estimates["precision"][0] == pytest.approx(2 / 3)
    whodunit = get_environment("whodunit").metrics
    (outcome,) = outcome_rows([{**g, "split": "test"} for g in as_text], whodunit)
    assert outcome["precision"] == pytest.approx(2 / 3)
    with pytest.raises(InputError, match="game 'c' is malformed: accused must be"):
        game_estimates([*as_text[:2], {**as_text[2], "accused": "perhaps"}])


def test_game_counts_tell_distinct_games_from_plays() -> None:
    """Game a in runs 0 and 1, game b in run 0: 2 games, 3 plays; a row without a game id
    is a game of its own."""
    from byzllm.monitor.dataset import game_counts

    rows: list[dict[str, object]] = [
        {"game_id": "a", "repeat": 0},
        {"game_id": "a", "repeat": 1},
        {"game_id": "b", "repeat": 0},
    ]
    assert game_counts(rows) == {"distinct_games": 2, "plays": 3}
    assert game_counts([*rows, {"repeat": 0}]) == {"distinct_games": 3, "plays": 4}
    assert game_counts([]) == {"distinct_games": 0, "plays": 0}
