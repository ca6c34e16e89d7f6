"""A run's number of units is bounded (``MAX_UNITS``): a config whose grid multiplies past it
is refused in one line when it loads, before any unit is built. Before, ``repeats`` of a
billion filled memory for minutes without a word."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from unittest import mock

import pytest
from pydantic import Field, ValidationError
from typer.testing import CliRunner

from byzllm.cli import app
from byzllm.envs.govsim import LakeConfig, make_splits, split_sizes
from byzllm.errors import ConfigError
from byzllm.experiments.codegen import CodeGenConfig, collect_units, run_units
from byzllm.experiments.consensus.config import ConsensusConfig
from byzllm.experiments.govsim import GovSimRunConfig
from byzllm.experiments.monitor import MonitorExperimentConfig
from byzllm.experiments.whodunit import WhoDunitRunConfig
from byzllm.runs import MAX_UNITS, ExperimentConfig, check_grid, load_config


def _refusal(units: str, factors: str, stage: str = "the run") -> str:
    return (
        f"{stage} would have {units} units ({factors}), more than MAX_UNITS = 10,000,000: "
        "make an axis smaller or split the run"
    )


def test_the_bound_is_ten_million_units() -> None:
    assert MAX_UNITS == 10_000_000


def test_check_grid_takes_the_bound_and_refuses_one_more() -> None:
    check_grid({"questions": 10_000, "seeds": 1_000})  # exactly MAX_UNITS
    with pytest.raises(ConfigError) as err:
        check_grid({"questions": 10_001, "seeds": 1_000}, "collect")
    assert str(err.value) == _refusal(
        "10,001,000", "10,001 questions × 1,000 seeds", "the collect stage"
    )


def test_a_grid_of_no_axes_is_one_unit() -> None:
    check_grid({})


class _Sweep(ExperimentConfig):
    questions: int = 10
    seeds: list[int] = Field(default_factory=lambda: [0])

    def unit_grids(self) -> dict[str, dict[str, int]]:
        return {"": {"questions": self.questions, "seeds": len(self.seeds)}}


def test_a_config_of_its_own_says_its_grid() -> None:
    assert load_config(None, _Sweep, {"questions": 5_000_000, "seeds": [0, 1]}).questions
    with pytest.raises(ConfigError) as err:
        load_config(None, _Sweep, {"questions": 5_000_001, "seeds": [0, 1]})
    assert str(err.value) == "invalid config: " + _refusal(
        "10,000,002", "5,000,001 questions × 2 seeds"
    )
    # Checked again on assignment, as every validator of a config is.
    cfg = _Sweep()
    with pytest.raises(ValidationError, match="the run would have 20,000,000 units"):
        cfg.questions = 20_000_000


# --- consensus: protocols × topologies × compositions × F × T × seeds × questions ----------


def _consensus(seeds: int) -> dict[str, object]:
    return {
        "protocols": ["sac", "cp-wbft"],
        "topologies": ["complete"],
        "seeds": list(range(seeds)),
        "dataset": {"n": 100_000},
    }


def test_consensus_at_the_bound_loads() -> None:
    # 2 protocols × 1 topology × 1 composition × 1 F × 1 T × 50 seeds × 100,000 questions.
    cfg = load_config(None, ConsensusConfig, _consensus(50))
    assert cfg.unit_grids() == {
        "": {
            "protocols": 2,
            "topologies": 1,
            "compositions": 1,
            "F values": 1,
            "T values": 1,
            "seeds": 50,
            "questions (dataset.n)": 100_000,
        }
    }


def test_consensus_over_the_bound_is_refused_naming_its_axes() -> None:
    with pytest.raises(ConfigError) as err:
        load_config(None, ConsensusConfig, {**_consensus(51), "F": [1, 2]})
    assert str(err.value) == "invalid config: " + _refusal(
        "20,400,000",
        "2 protocols × 1 topologies × 1 compositions × 2 F values × 1 T values × 51 seeds × "
        "100,000 questions (dataset.n)",
    )


# --- WhoDunit and GovSim batches: games × repeats ---------------------------------------------


def test_whodunit_generated_games_at_the_bound_and_over() -> None:
    at = {"split": "generated", "n_games": 10_000, "repeats": 1_000}
    assert load_config(None, WhoDunitRunConfig, at).unit_grids() == {
        "": {"generated games": 10_000, "repeats": 1_000}
    }
    with pytest.raises(ConfigError) as err:
        load_config(None, WhoDunitRunConfig, {**at, "repeats": 1_001})
    assert str(err.value) == "invalid config: " + _refusal(
        "10,010,000", "10,000 generated games × 1,001 repeats"
    )


def test_whodunit_a_split_counts_its_games_at_most() -> None:
    # The test split holds 180 games: n_games above it plays the 180.
    cfg = load_config(None, WhoDunitRunConfig, {"n_games": 500, "repeats": 55_555})
    assert cfg.unit_grids() == {"": {"test games": 180, "repeats": 55_555}}  # 9,999,900
    with pytest.raises(ConfigError, match=r"10,000,080 units \(180 test games × 55,556 "):
        load_config(None, WhoDunitRunConfig, {"repeats": 55_556})
    train = load_config(None, WhoDunitRunConfig, {"split": "train", "n_games": 7})
    assert train.unit_grids() == {"": {"train games": 7, "repeats": 1}}


@pytest.mark.parametrize(
    "lake",
    [
        LakeConfig(),
        LakeConfig(seeds_per_value=3, validation_values=5),
        LakeConfig(seeds_per_value=10, validation_values=19),
    ],
)
def test_govsim_split_sizes_are_those_of_its_splits(lake: LakeConfig) -> None:
    splits = make_splits(lake, seed=3)
    assert split_sizes(lake) == {
        name: len(splits.get(name)) for name in ("train", "validation", "test")
    }


def test_govsim_games_at_the_bound_and_over() -> None:
    # Train: (20 - 5 validation values) × 3 seeds per value = 45 games.
    lake = {"seeds_per_value": 3, "validation_values": 5}
    at = {"split": "train", "govsim": {"lake": lake}, "repeats": 222_222}  # 9,999,990
    assert load_config(None, GovSimRunConfig, at).unit_grids() == {
        "": {"train games": 45, "repeats": 222_222}
    }
    with pytest.raises(ConfigError) as err:
        load_config(None, GovSimRunConfig, {**at, "repeats": 222_223})
    assert str(err.value) == "invalid config: " + _refusal(
        "10,000,035", "45 train games × 222,223 repeats"
    )
    generated = load_config(None, GovSimRunConfig, {"split": "generated"})
    assert generated.unit_grids() == {"": {"generated games": 20, "repeats": 1}}


# --- the monitor pipeline: two stages ---------------------------------------------------------


def test_monitor_stages_are_each_bounded() -> None:
    cfg = load_config(
        None,
        MonitorExperimentConfig,
        {"n_test": 100, "conditions": ["none", "monitor-1", "none"], "repeats": 50_000},
    )
    assert cfg.unit_grids() == {
        "collect": {"train and validation games": 210 + 90, "collect_repeats": 1},
        "evaluate": {"test games": 100, "conditions": 2, "repeats": 50_000},
    }
    with pytest.raises(ConfigError) as err:
        load_config(
            None,
            MonitorExperimentConfig,
            {"n_test": 100, "conditions": ["none"], "repeats": 100_001},
        )
    assert str(err.value) == "invalid config: " + _refusal(
        "10,000,100", "100 test games × 1 conditions × 100,001 repeats", "the evaluate stage"
    )
    # GovSim's splits: 26 train and 14 validation games by default.
    with pytest.raises(ConfigError) as err:
        load_config(None, MonitorExperimentConfig, {"env": "govsim", "collect_repeats": 250_001})
    assert str(err.value) == "invalid config: " + _refusal(
        "10,000,040", "40 train and validation games × 250,001 collect_repeats", "the collect stage"
    )


# --- CodeGen: the problem file decides a split's size -----------------------------------------


def test_codegen_counts_the_splits_it_cuts_when_it_loads() -> None:
    cfg = load_config(None, CodeGenConfig, {"n_test": 10, "conditions": ["none"]})
    assert cfg.unit_grids() == {
        "collect": {"collect_repeats": 1},
        "evaluate": {"test problems": 10, "conditions": 1, "repeats": 1},
    }
    with pytest.raises(ConfigError, match=r"the evaluate stage would have 10,000,002 units \(3 "):
        load_config(None, CodeGenConfig, {"repeats": 3_333_334})  # 3 conditions


def test_codegen_checks_again_with_the_files_problems(
    tmp_path: Path, humaneval_file: Callable[..., Path]
) -> None:
    # 164 problems: 49 test, 80 train and 35 validation (the config's own example).
    problems = humaneval_file(tmp_path / "he.jsonl", 164)
    repeats = 102_041  # 2 conditions × 102,041 repeats passes; × 49 test problems does not
    cfg = load_config(
        None,
        CodeGenConfig,
        {
            "problems": str(problems),
            "conditions": ["zero-shot", "none"],
            "repeats": repeats,
            "collect_repeats": 87_000,
        },
    )
    build = mock.Mock()
    with mock.patch("byzllm.experiments.codegen.experiment.make_unit", build):
        with pytest.raises(ConfigError) as err:
            run_units(cfg)
        assert str(err.value) == _refusal(
            "10,000,018", "49 test problems × 2 conditions × 102,041 repeats", "the evaluate stage"
        )
        with pytest.raises(ConfigError) as err:
            collect_units(cfg)
        assert str(err.value) == _refusal(
            "10,005,000", "115 train and validation problems × 87,000 collect_repeats",
            "the collect stage",
        )  # fmt: skip
    build.assert_not_called()


# --- the command line: one line, exit 2, nothing built -----------------------------------------


@pytest.mark.parametrize(
    ("command", "builder", "problem"),
    [
        (
            ["whodunit", "run", "-s", "repeats=1000000000"],
            "byzllm.experiments.whodunit.experiment.select_games",
            _refusal("180,000,000,000", "180 test games × 1,000,000,000 repeats"),
        ),
        (
            ["govsim", "run", "-s", "split=generated", "-s", "n_games=1000000000"],
            "byzllm.experiments.govsim.experiment.select_games",
            _refusal("1,000,000,000", "1,000,000,000 generated games × 1 repeats"),
        ),
        (
            [
                "consensus",
                "run",
                "-s",
                "dataset.n=100000",
                "-s",
                "F=[0, 1, 2, 3]",
                "-s",
                "T=[1, 2, 3, 4, 5]",
            ],
            "byzllm.experiments.consensus.experiment.load_dataset",
            _refusal(
                "12,000,000",
                "2 protocols × 3 topologies × 1 compositions × 4 F values × 5 T values × "
                "1 seeds × 100,000 questions (dataset.n)",
            ),
        ),
        (
            ["monitor", "collect", "-s", "collect_repeats=1000000"],
            "byzllm.experiments.monitor.experiment.collect_stage",
            _refusal(
                "300,000,000",
                "300 train and validation games × 1,000,000 collect_repeats",
                "the collect stage",
            ),
        ),
    ],
)
def test_the_command_refuses_before_building_a_unit(
    tmp_path: Path, command: list[str], builder: str, problem: str
) -> None:
    build = mock.Mock()
    with mock.patch(builder, build):
        result = CliRunner().invoke(app, [*command, "-o", str(tmp_path / "run")])
    assert result.exit_code == 2, result.output
    assert result.stderr.splitlines() == [f"error: invalid config: {problem}"]
    build.assert_not_called()
    assert not (tmp_path / "run").exists()
