"""Monitors tested in another setting than they were trained in (the rogue-agents paper,
Fig. 6: trained on ten suspects, tested on six and fourteen) are tested on games that repeat
none of their training or validation games' culprits."""

from __future__ import annotations

import asyncio
from dataclasses import replace

import pytest

from byzllm.envs.whodunit import WhoDunitGame, make_splits
from byzllm.experiments.monitor import (
    MonitorExperimentConfig,
    collect_units,
    evaluate_units,
    run_in_memory,
)
from byzllm.experiments.monitor.experiment import trained_on
from byzllm.experiments.monitor.pipeline import train_from_turns
from byzllm.monitor import MonitorSet

Culprit = frozenset[tuple[str, str]]


def _culprit(game: WhoDunitGame) -> Culprit:
    return frozenset(game.culprit_description.items())


def _test_games(cfg: MonitorExperimentConfig, monitors: MonitorSet) -> list[WhoDunitGame]:
    games = {}
    for unit in evaluate_units(cfg, monitors):
        game = WhoDunitGame.model_validate(unit.payload["game"])
        games[game.id] = game
    return list(games.values())


@pytest.fixture(scope="module")
def trained() -> tuple[MonitorExperimentConfig, MonitorSet]:
    cfg = MonitorExperimentConfig(n_train=40, n_validation=20, repeats=1, conditions=["none"])
    rows = asyncio.run(run_in_memory(collect_units(cfg)))
    turns = [r for r in rows if r["kind"] == "monitor_turn"]
    monitors, _ = train_from_turns(turns, cfg.model_dump(mode="json"))
    return cfg, monitors


@pytest.fixture(scope="module")
def training_culprits(trained: tuple[MonitorExperimentConfig, MonitorSet]) -> set[Culprit]:
    cfg, _ = trained
    splits = make_splits(cfg.game, seed=cfg.seed)
    return {_culprit(g) for g in [*splits.train, *splits.validation]}


def _without_record(monitors: MonitorSet) -> MonitorSet:
    """The same monitors as a set trained before the training setting was recorded."""
    return replace(monitors, meta={k: v for k, v in monitors.meta.items() if k != "trained_on"})


def test_the_set_records_what_decides_its_training_games(
    trained: tuple[MonitorExperimentConfig, MonitorSet],
) -> None:
    cfg, monitors = trained
    recorded = monitors.meta["trained_on"]
    assert recorded["game"] == cfg.game.model_dump(mode="json") and recorded["seed"] == 0
    assert (recorded["n_train"], recorded["n_validation"]) == (40, 20)
    assert MonitorSet.from_dict(monitors.to_dict()).meta["trained_on"] == recorded


def test_the_training_setting_keeps_its_own_test_games(
    trained: tuple[MonitorExperimentConfig, MonitorSet],
) -> None:
    cfg, monitors = trained
    assert trained_on(cfg, monitors) is None
    assert _test_games(cfg, monitors) == make_splits(cfg.game, seed=cfg.seed).test


@pytest.mark.parametrize("size", [6, 14])
def test_another_lineup_size_repeats_no_training_culprit(
    trained: tuple[MonitorExperimentConfig, MonitorSet], training_culprits: set[Culprit], size: int
) -> None:
    cfg, monitors = trained
    other = cfg.model_copy(update={"game": cfg.game.model_copy(update={"n_suspects": size})})
    games = _test_games(other, monitors)
    assert len(games) == 180
    assert not {_culprit(g) for g in games} & training_culprits
    # A set that does not say where it was trained gets the setting's own test split, which
    # shares culprits with the training games: what the record prevents.
    unrecorded = _test_games(other, _without_record(monitors))
    assert {_culprit(g) for g in unrecorded} & training_culprits


def test_another_seed_repeats_no_training_culprit(
    trained: tuple[MonitorExperimentConfig, MonitorSet], training_culprits: set[Culprit]
) -> None:
    cfg, monitors = trained
    games = _test_games(cfg.model_copy(update={"seed": 1}), monitors)
    assert len(games) == 180 and not {_culprit(g) for g in games} & training_culprits
