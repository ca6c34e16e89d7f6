"""CodeGen monitors trained on features computed with one ``renormalize`` are refused by a run
computing them the other way, as ``byzllm monitor evaluate`` refuses them (one shared check)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from byzllm.cli import app
from byzllm.errors import InputError
from byzllm.experiments.codegen import (
    CodeGenConfig,
    collect_units,
    run_in_memory,
    run_units,
    train_monitors,
)
from byzllm.experiments.monitor import MonitorExperimentConfig, evaluate_units
from byzllm.experiments.monitor.environments import get_environment
from byzllm.monitor import MonitorSet

from .test_codegen_experiment import _config as _experiment_config
from .test_codegen_experiment import _problems

RUNNER = CliRunner()


def _config(tmp_path: Path, **changes: object) -> CodeGenConfig:
    # The experiment tests' tiny problems and noisy judge; one repeat of two test problems.
    return _experiment_config(tmp_path, **{"n_test": 2, "repeats": 1, **changes})


def _turns(cfg: CodeGenConfig) -> list[dict[str, Any]]:
    rows = asyncio.run(run_in_memory(collect_units(cfg)))
    return [r for r in rows if r["kind"] == "codegen_turn"]


@pytest.fixture(scope="module")
def raw(tmp_path_factory: pytest.TempPathFactory) -> tuple[CodeGenConfig, list[dict[str, Any]]]:
    """A collect run with ``renormalize=False`` and its turns."""
    cfg = _config(tmp_path_factory.mktemp("raw"), renormalize=False)
    return cfg, _turns(cfg)


def test_the_set_records_renormalize_and_a_run_with_the_other_is_refused(
    raw: tuple[CodeGenConfig, list[dict[str, Any]]],
) -> None:
    cfg, turns = raw
    assert {t["renormalize"] for t in turns} == {False}
    monitors = train_monitors(turns)
    assert monitors.meta["renormalize"] is False
    assert run_units(cfg, monitors)  # the collect run's own setting
    other = cfg.model_copy(update={"renormalize": True})
    with pytest.raises(InputError, match="renormalize=False, but this config has renormalize"):
        run_units(other, monitors)
    # ``none`` alone still runs them as a shadow monitor: refused too.
    with pytest.raises(InputError, match="renormalize=False"):
        run_units(other.model_copy(update={"conditions": ["none"]}), monitors)
    assert run_units(other.model_copy(update={"conditions": ["zero-shot", "none"]}))


def test_a_set_that_does_not_record_it_is_taken_as_the_default(
    raw: tuple[CodeGenConfig, list[dict[str, Any]]],
) -> None:
    cfg, turns = raw
    old = [{k: v for k, v in t.items() if k != "renormalize"} for t in turns]
    monitors = train_monitors(old)
    assert "renormalize" not in monitors.meta
    assert run_units(cfg.model_copy(update={"renormalize": True}), monitors)
    with pytest.raises(InputError, match="does not record it: the default is assumed"):
        run_units(cfg, monitors)


def test_turns_of_both_settings_are_refused(
    raw: tuple[CodeGenConfig, list[dict[str, Any]]],
) -> None:
    _, turns = raw
    mixed = [*turns[:-1], {**turns[-1], "renormalize": True}]
    with pytest.raises(InputError, match="mix features"):
        train_monitors(mixed)


def test_cli_run_refuses_monitors_of_the_other_setting(tmp_path: Path) -> None:
    problems = _problems(tmp_path / "he.jsonl")
    sets = ["--set", f"problems={problems}", "--set", "execution=simulated"]
    sets += ["--set", "sim.judge_error_rate=0.3", "--set", "collect_repeats=2"]
    collect = RUNNER.invoke(
        app,
        ["codegen", "collect", *sets, "--set", "renormalize=false", "-o", str(tmp_path / "c")],
    )
    assert collect.exit_code == 0, collect.output
    train = RUNNER.invoke(app, ["codegen", "train", str(tmp_path / "c")])
    assert train.exit_code == 0, train.output
    monitors = tmp_path / "c" / "monitors.json"
    assert MonitorSet.load(monitors).meta["renormalize"] is False
    args = ["codegen", "run", *sets, "--set", "n_test=2", "-m", str(monitors)]
    run = RUNNER.invoke(app, [*args, "-o", str(tmp_path / "r")])
    assert run.exit_code != 0
    assert "renormalize=False, but this config has renormalize=True" in run.output


def test_the_monitor_pipeline_takes_an_unrecorded_setting_as_the_default(
    raw: tuple[CodeGenConfig, list[dict[str, Any]]],
) -> None:
    """The same check as CodeGen's: a set without ``renormalize`` was trained with the
    default."""
    _, turns = raw
    monitors = train_monitors([{k: v for k, v in t.items() if k != "renormalize"} for t in turns])
    cfg = MonitorExperimentConfig(n_test=2, repeats=1, conditions=["none"])
    role = get_environment(cfg.env).roles(cfg)[0]
    monitors = MonitorSet(roles={role: monitors.roles["judge"]}, meta=monitors.meta)
    assert evaluate_units(cfg, monitors)
    with pytest.raises(InputError, match="renormalize=True \\(it does not record it"):
        evaluate_units(cfg.model_copy(update={"renormalize": False}), monitors)
