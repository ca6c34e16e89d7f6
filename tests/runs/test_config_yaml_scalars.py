"""Configs and --set values read scalars by YAML 1.2 (no 1.1 octal, base 60 or on/off booleans),
and merge keys let a key written beside them override the merged one."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import Field

from byzllm.errors import ConfigError
from byzllm.runs import ExperimentConfig, load_config, parse_overrides
from byzllm.runs._config import _StrictLoader
from byzllm.runs._model_config import ModelConfig


class AgentSection(ExperimentConfig):
    backend: str = "simulated"
    model: str | None = None
    temperature: float = 0.0


class Agents(ExperimentConfig):
    strong: AgentSection = AgentSection()
    weak: AgentSection = AgentSection()


class Cfg(ExperimentConfig):
    n: int = Field(default=7, ge=1)
    seed: int = 0
    name: str = "x"
    flag: bool = False
    agents: Agents = Agents()


class CachedCfg(ModelConfig):
    pass


def _read(text: str) -> Any:
    return yaml.load(text, Loader=_StrictLoader)


def _load(tmp_path: Path, text: str, model: type[Any] = Cfg) -> Any:
    file = tmp_path / "c.yaml"
    file.write_text(text, encoding="utf-8")
    return load_config(file, model)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("012", 12),  # decimal, as 018 is: never octal
        ("018", 18),
        ("-007", -7),
        ("0o17", 15),
        ("0x1f", 31),
        ("1e3", 1000.0),
        (".inf", math.inf),
        ("-.Inf", -math.inf),
        ("on", "on"),
        ("off", "off"),
        ("yes", "yes"),
        ("No", "No"),
        ("1:30", "1:30"),  # no base 60
        ("1_000", "1_000"),
        ("2024-01-01", "2024-01-01"),
        ("true", True),
        ("FALSE", False),
        ("~", None),
        ("null", None),
        ("'012'", "012"),
    ],
)
def test_override_scalars_follow_yaml_1_2(text: str, value: Any) -> None:
    assert parse_overrides([f"v={text}"]) == {"v": value}


def test_zero_padded_numbers_in_a_file_are_decimal(tmp_path: Path) -> None:
    cfg = _load(tmp_path, "seed: 012\nn: 018\n")
    assert (cfg.seed, cfg.n) == (12, 18)


@pytest.mark.parametrize("value", ["1:30", "on", "off", "yes"])
def test_words_and_base_60_are_not_numbers(value: str) -> None:
    with pytest.raises(ConfigError, match="n: Input should be a valid integer"):
        load_config(None, Cfg, parse_overrides([f"n={value}"]))


@pytest.mark.parametrize(("text", "value"), [("on", True), ("off", False), ("false", False)])
def test_bool_fields_still_take_on_and_off(tmp_path: Path, text: str, value: bool) -> None:
    assert _load(tmp_path, f"flag: {text}\n").flag is value


@pytest.mark.parametrize("mode", ["off", "on", "'off'", "read-only", "refresh"])
def test_cache_mode_written_bare_in_a_file(tmp_path: Path, mode: str) -> None:
    cfg = _load(tmp_path, f"model: openai/x\ncache_mode: {mode}\n", CachedCfg)
    assert cfg.cache_mode == mode.strip("'")


@pytest.mark.parametrize("mode", ["off", "on"])
def test_cache_mode_from_set(mode: str) -> None:
    assert load_config(None, CachedCfg, parse_overrides([f"cache_mode={mode}"])).cache_mode == mode


@pytest.mark.parametrize(("value", "mode"), [(False, "off"), (True, "on")])
def test_cache_mode_takes_a_yaml_1_1_boolean(value: bool, mode: str) -> None:
    # Data read by another YAML tool may hold the booleans a bare off/on becomes there.
    assert load_config(None, CachedCfg, {"cache_mode": value}).cache_mode == mode


MERGE = """\
agents:
  strong: &s
    backend: llm
    model: openai/gpt-4o
    temperature: 0.7
  weak:
    <<: *s
    model: openai/gpt-4o-mini
"""


def test_merge_key_then_an_overriding_key(tmp_path: Path) -> None:
    cfg = _load(tmp_path, MERGE)
    assert cfg.agents.strong.model == "openai/gpt-4o"
    assert cfg.agents.weak.model == "openai/gpt-4o-mini"
    assert (cfg.agents.weak.backend, cfg.agents.weak.temperature) == ("llm", 0.7)


def test_overriding_key_written_before_the_merge_key(tmp_path: Path) -> None:
    text = MERGE.replace("    <<: *s\n    model: openai/gpt-4o-mini\n", "")
    text += "    model: openai/gpt-4o-mini\n    <<: *s\n"
    assert _load(tmp_path, text).agents.weak.model == "openai/gpt-4o-mini"


def test_merged_mappings_first_one_wins_and_chains_resolve() -> None:
    text = """\
base: &b {model: m0, temperature: 0.1}
mid: &m {<<: *b, model: m1}
agents:
  strong: {<<: [*m, *b]}
  weak: {<<: [*b, *m], backend: llm}
"""
    data = _read(text)
    assert data["mid"] == {"model": "m1", "temperature": 0.1}
    assert data["agents"]["strong"] == {"model": "m1", "temperature": 0.1}
    assert data["agents"]["weak"] == {"model": "m0", "temperature": 0.1, "backend": "llm"}


def test_anchor_defined_inside_a_merge_is_not_a_duplicate_when_reused() -> None:
    text = """\
base: &b {model: m0}
agents:
  strong: {<<: &m {<<: *b, model: m1}, temperature: 0.5}
  weak: *m
"""
    data = _read(text)
    assert data["agents"]["strong"] == {"model": "m1", "temperature": 0.5}
    assert data["agents"]["weak"] == {"model": "m1"}


def test_a_real_duplicate_beside_a_merge_key_is_still_refused(tmp_path: Path) -> None:
    text = MERGE + "    model: openai/gpt-4o\n"
    with pytest.raises(ConfigError, match="duplicate key 'model' at line 9, column 5"):
        _load(tmp_path, text)


def test_duplicate_key_in_a_set_value_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"--set v=\{a: 1, a: 2\}: duplicate key 'a'"):
        parse_overrides(["v={a: 1, a: 2}"])


def test_unhashable_key_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="invalid YAML at line 1, column 3: found unhashable"):
        _load(tmp_path, "? [1]\n: 2\n")


@pytest.mark.parametrize(
    ("text", "problem"),
    [("!!int 1:30", "is not an integer"), ("!!bool yes", "is not a boolean")],
)
def test_explicit_tags_follow_the_same_rules(tmp_path: Path, text: str, problem: str) -> None:
    with pytest.raises(ConfigError, match=problem):
        _load(tmp_path, f"n: {text}\n")
