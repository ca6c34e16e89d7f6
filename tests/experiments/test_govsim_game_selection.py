"""A GovSim split cut to fewer games takes them evenly across its starting stocks, the same way
in ``govsim run`` (``n_games``) and in the monitor pipeline (``n_train`` / ``n_validation`` /
``n_test``): a split is ordered by R_0, so its first games are its smallest lakes."""

from __future__ import annotations

import pytest

from byzllm.envs.govsim import make_splits
from byzllm.experiments.govsim import GovSimRunConfig, select_games
from byzllm.experiments.monitor import MonitorExperimentConfig
from byzllm.experiments.monitor.environments import get_environment


def test_a_cut_test_split_spans_its_starting_stocks() -> None:
    picked = select_games(GovSimRunConfig(split="test", n_games=6))
    assert [g.r0 for g in picked] == [100, 220, 235, 255, 270, 285]


@pytest.mark.parametrize("split", ["train", "validation", "test"])
@pytest.mark.parametrize("n", [1, 3, 6, 10])
def test_govsim_run_and_the_monitor_pipeline_pick_the_same_games(split: str, n: int) -> None:
    run = select_games(GovSimRunConfig(split=split, n_games=n))
    limit = {"n_train": n, "n_validation": n, "n_test": n}
    monitor = get_environment("govsim").instances(
        MonitorExperimentConfig.model_validate({"env": "govsim", **limit}), split
    )
    assert [g.id for g in run] == [g.id for g in monitor]


def test_a_cut_training_split_is_not_its_smallest_lakes() -> None:
    whole = make_splits(GovSimRunConfig().govsim.lake, seed=0).train
    picked = select_games(GovSimRunConfig(split="train", n_games=6))
    assert len(picked) == 6 and picked[0] == whole[0]
    assert max(g.r0 for g in picked) > sorted(g.r0 for g in whole)[len(whole) // 2]


def test_no_cut_or_a_cut_past_the_split_plays_all_of_it() -> None:
    whole = make_splits(GovSimRunConfig().govsim.lake, seed=0).test
    assert select_games(GovSimRunConfig(split="test")) == list(whole)
    assert select_games(GovSimRunConfig(split="test", n_games=len(whole) + 5)) == list(whole)
