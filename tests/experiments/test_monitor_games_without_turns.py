"""Games without a monitored turn still count in monitor selection.

A GovSim lake that collapses in month 1 has no monitored turn (they start in month 2). The
selection's base rate and gain, (1/N) Σ_g t_g (b - y_g) (the rogue-agents paper, App. D.2),
are over every validation game, so such a game must be in the data set with its outcome and
no trigger.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from byzllm.cli import app
from byzllm.errors import InputError
from byzllm.experiments.monitor import datasets_from_rows
from byzllm.monitor import MonitorSet, TurnDataset, train_monitor_set
from byzllm.monitor.features import FEATURE_COLUMNS
from byzllm.runs import Store

RUNNER = CliRunner()


def _turn(split: str, game: str, entropy: float, turn: int, success: bool) -> dict[str, Any]:
    return {
        "split": split,
        "game_id": game,
        "repeat": 0,
        "role": "fisher",
        "entropy": entropy,
        "varentropy": 0.3,
        "kurtosis": 1.0,
        "turn": turn,
        "success": success,
    }


def _game(split: str, game: str, success: bool, condition: str = "none") -> dict[str, Any]:
    return {
        "split": split,
        "game_id": game,
        "repeat": 0,
        "condition": condition,
        "success": success,
    }


# Training: low entropy succeeded, high entropy failed. Validation: v-ok succeeded, v-bad failed
# with a high-entropy turn, v-early failed before any monitored turn.
TURNS = [
    *(_turn("train", f"t{i}", 0.0, t, True) for i, t in enumerate((2, 3))),
    *(_turn("train", f"t{i + 2}", 2.0, t, False) for i, t in enumerate((2, 3))),
    _turn("validation", "v-ok", 0.0, 2, True),
    _turn("validation", "v-bad", 2.0, 2, False),
]
GAMES = [
    *(_game("train", f"t{i}", i < 2) for i in range(4)),
    _game("train", "t-early", False),
    _game("validation", "v-ok", True),
    _game("validation", "v-bad", False),
    _game("validation", "v-early", False),
    # Not training data: another condition, another split.
    _game("validation", "v-ok", False, condition="monitor-1"),
    _game("test", "x", True),
]


def test_games_without_turns_are_in_the_datasets() -> None:
    train, validation = datasets_from_rows(TURNS, GAMES)
    assert train.n_games == 5 and "t-early/r0" in train.games
    assert validation.games == ("v-bad/r0", "v-early/r0", "v-ok/r0")
    assert validation.base_rate == pytest.approx(1 / 3)
    assert validation.turns_per_game("fisher").tolist() == [1, 0, 1]
    # Without the game rows, only the games with turns (WhoDunit's games all have one).
    assert datasets_from_rows(TURNS)[1].n_games == 2


def test_base_rate_and_gain_are_over_every_validation_game() -> None:
    monitors, selections = train_monitor_set(*datasets_from_rows(TURNS, GAMES), degrees=(1,))
    selection = selections[0]
    assert selection.n_validation_games == 3
    assert monitors.base_rate == pytest.approx(1 / 3)
    # The monitor fires on v-bad (and never on v-early, which has no turn): each triggered
    # failure gains b over the three games.
    assert selection.gain == pytest.approx((1 / 3) / 3)
    assert monitors.meta["expected_gain"] == pytest.approx((1 / 3) / 3)


def test_turn_rows_must_match_the_listed_games() -> None:
    outcomes = {"a": True, "b": "false"}
    empty = TurnDataset.from_rows([], outcomes)
    assert empty.games == ("a", "b") and empty.n_turns == 0 and empty.base_rate == 0.5
    row = {**_turn("validation", "c", 0.0, 2, True), "game_id": "c"}
    with pytest.raises(InputError, match="not in the games"):
        TurnDataset.from_rows([row], outcomes)
    with pytest.raises(InputError, match="not the game's"):
        TurnDataset.from_rows([{**row, "game_id": "b"}], outcomes)
    with pytest.raises(InputError, match="different outcomes"):
        datasets_from_rows(TURNS, [*GAMES, _game("validation", "v-ok", False)])
    with pytest.raises(InputError, match="no validation games"):
        datasets_from_rows(TURNS, [g for g in GAMES if g["split"] == "train"])


def test_monitor_train_counts_govsim_games_that_collapse_in_month_one(tmp_path: Path) -> None:
    collect = tmp_path / "c"
    sets = ["env=govsim", "n_train=8", "n_validation=4", "collect_repeats=2"]
    flags = [arg for s in sets for arg in ("--set", s)]
    r = RUNNER.invoke(app, ["monitor", "collect", *flags, "-o", str(collect)])
    assert r.exit_code == 0, r.output
    with Store.open(collect) as store:
        games = store.records("monitor_game")
        turns = store.records("monitor_turn")
    validation = {
        (g["game_id"], g["repeat"]): bool(g["success"]) for g in games if g["split"] == "validation"
    }
    with_turns = {(t["game_id"], t["repeat"]) for t in turns}
    assert set(validation) - with_turns, "expected a validation lake that collapses in month 1"

    r = RUNNER.invoke(app, ["monitor", "train", str(collect)])
    assert r.exit_code == 0, r.output
    data = json.loads((collect / "monitors.json").read_text())
    assert data["meta"]["validation_games"] == len(validation)
    assert data["meta"]["train_games"] == sum(g["split"] == "train" for g in games)
    b = float(np.mean(list(validation.values())))
    assert data["base_rate"] == pytest.approx(b)

    # The fisher's gain by hand: a game triggers if P(success) < τ at one of its turns;
    # a game without turns never does, but counts in N and b.
    fisher = MonitorSet.load(collect / "monitors.json").roles["fisher"]
    lowest = dict.fromkeys(validation, np.inf)
    for t in turns:
        key = (t["game_id"], t["repeat"])
        if key in validation:
            x = np.array([[float(t[c]) for c in FEATURE_COLUMNS]])
            lowest[key] = min(lowest[key], float(fisher.monitor.predict_success(x)[0]))
    gain = sum((b - y) for key, y in validation.items() if lowest[key] < fisher.threshold)
    assert fisher.gain == pytest.approx(gain / len(validation))
