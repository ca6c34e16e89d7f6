"""A run folder is bound to its config: another config is refused, the same one resumes."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, ClassVar

import pytest
from pydantic import Field

from byzllm.errors import ConfigError
from byzllm.runs import (
    ABSENT_IS_DEFAULT,
    ExperimentConfig,
    ModelConfig,
    Record,
    Store,
    check_config,
    config_differences,
    make_unit,
    run_units,
)


class _Section(ModelConfig):
    backend: str = "simulated"


class _Config(ExperimentConfig):
    seeds: list[int] = Field(default_factory=lambda: [0])
    rounds: int = 3
    agents: _Section = Field(default_factory=_Section)


class _Other(ExperimentConfig):
    seeds: list[int] = Field(default_factory=lambda: [0])


class _Answer(Record):
    kind: ClassVar[str] = "binding_answer"
    seed: int


def _work(payload: dict[str, Any]) -> list[Record]:
    return [_Answer(seed=payload["seed"])]


def _run(folder: Path, config: _Config) -> None:
    units = [make_unit({"seed": s}) for s in config.seeds]
    asyncio.run(run_units(folder, units, _work, config=config, progress=False))


def _ids(config: _Config) -> set[str]:
    return {make_unit({"seed": s}).id for s in config.seeds}


def test_differences_name_nested_keys_and_ignore_transport() -> None:
    old = _Config(seeds=[0], agents=_Section(base_url="http://a:1/v1", timeout_s=5))
    recorded = old.model_dump(mode="json")
    # A resumed real-model run: its server on a new port, other limits -- no difference.
    moved = _Config(seeds=[0], agents=_Section(base_url="http://a:2/v1", max_concurrency=2))
    assert config_differences(recorded, moved) == []
    changed = _Config(seeds=[0, 1], rounds=4, agents=_Section(backend="llm"))
    assert config_differences(recorded, changed) == ["seeds", "rounds", "agents.backend"]


def test_fields_one_side_lacks_do_not_count() -> None:
    # A field added to the config class since the run started has no recorded value.
    recorded = _Config().model_dump(mode="json")
    del recorded["rounds"]
    recorded["removed_since"] = 1
    assert config_differences(recorded, _Config()) == []


class _Derived(ExperimentConfig):
    seeds: list[int] = Field(default_factory=lambda: [0])
    content: dict[str, str] = Field(default_factory=dict, json_schema_extra=ABSENT_IS_DEFAULT)


def test_a_field_marked_absent_is_default_counts_when_the_record_lacks_it() -> None:
    # A run recorded before the field existed held its default: a config that sets it is
    # another config (its units are other units), one at the default the same.
    recorded = _Other().model_dump(mode="json")
    assert config_differences(recorded, _Derived(content={"g.json": "ab12"})) == ["content"]
    assert config_differences(recorded, _Derived()) == []


def test_another_config_is_refused_with_its_keys(tmp_path: Path) -> None:
    first = _Config(seeds=[0, 1])
    _run(tmp_path, first)
    assert check_config(tmp_path, first, _ids(first)) == 0  # the same config resumes
    second = _Config(seeds=[1, 2], rounds=5)
    with pytest.raises(ConfigError, match=r"differs in seeds, rounds\).*--force") as err:
        check_config(tmp_path, second, _ids(second))
    assert err.value.exit_code == 2 and "\n" not in str(err.value)


def test_another_config_class_is_refused(tmp_path: Path) -> None:
    _run(tmp_path, _Config())
    with pytest.raises(ConfigError, match="holds a _Config run, not _Other"):
        check_config(tmp_path, _Other(), set())


def test_force_keeps_the_shared_units_and_removes_the_rest(tmp_path: Path) -> None:
    first = _Config(seeds=[0, 1])
    _run(tmp_path, first)
    second = _Config(seeds=[1, 2], rounds=5)
    assert check_config(tmp_path, second, _ids(second), force=True) == 1
    _run(tmp_path, second)
    with Store.open(tmp_path) as store:
        assert sorted(r["seed"] for r in store.records("binding_answer")) == [1, 2]
        assert store.counts()["done"] == 2
    # The folder now holds the new config: rerunning it resumes, the old one is refused.
    assert check_config(tmp_path, second, _ids(second)) == 0
    with pytest.raises(ConfigError):
        check_config(tmp_path, first, _ids(first))


def test_a_new_folder_or_one_without_a_recorded_config_runs(tmp_path: Path) -> None:
    assert check_config(tmp_path / "new", _Config(), set()) == 0
    units = [make_unit({"seed": 0})]
    asyncio.run(run_units(tmp_path, units, _work, progress=False))  # no config recorded
    assert check_config(tmp_path, _Config(rounds=9), set()) == 0
