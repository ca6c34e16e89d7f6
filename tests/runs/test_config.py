"""Configs: YAML loading, --set overrides, validation in one clear message."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import Field, ValidationError, field_validator, model_validator

from byzllm.errors import ConfigError
from byzllm.runs import (
    ExistingDir,
    ExistingFile,
    ExperimentConfig,
    apply_overrides,
    load_config,
    parse_overrides,
    validation_problems,
)


class GraphSection(ExperimentConfig):
    n: int = 7
    kind: str = "ring"


class SweepConfig(ExperimentConfig):
    name: str = "sweep"
    rounds: int = Field(default=3, ge=1)
    temperature: float = 0.7
    graph: GraphSection = GraphSection()
    seeds: list[int] = Field(default_factory=lambda: [0, 1])


class DataConfig(ExperimentConfig):
    data: ExistingFile
    folder: ExistingDir | None = None


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_yaml_file_and_overrides(tmp_path: Path) -> None:
    file = _write(tmp_path / "c.yaml", "rounds: 5\ngraph:\n  n: 10\n")
    cfg = load_config(file, SweepConfig, {"graph.kind": "complete", "seeds.1": 9})
    assert (cfg.rounds, cfg.graph.n, cfg.graph.kind, cfg.seeds) == (5, 10, "complete", [0, 9])


def test_defaults_without_a_file() -> None:
    assert load_config(None, SweepConfig) == SweepConfig()


def test_empty_yaml_is_the_defaults(tmp_path: Path) -> None:
    assert load_config(_write(tmp_path / "e.yaml", ""), SweepConfig) == SweepConfig()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a=3", {"a": 3}),
        ("a.b=0.5", {"a.b": 0.5}),
        ("flag=true", {"flag": True}),
        ("x=null", {"x": None}),
        ("xs=[1, 2]", {"xs": [1, 2]}),
        ("s=hello world", {"s": "hello world"}),
        ("s=a: b", {"s": "a: b"}),
        ("s='3'", {"s": "3"}),
        ("s=", {"s": None}),
        ("eq=a=b", {"eq": "a=b"}),
    ],
)
def test_parse_overrides_reads_yaml_scalars(text: str, expected: dict[str, Any]) -> None:
    assert parse_overrides([text]) == expected


@pytest.mark.parametrize("bad", ["novalue", "=3", "a..b=1", ".a=1"])
def test_parse_overrides_rejects_malformed_items(bad: str) -> None:
    with pytest.raises(ConfigError, match="KEY=VALUE"):
        parse_overrides([bad])


def test_apply_overrides_refuses_to_descend_into_scalars_and_bad_indices() -> None:
    with pytest.raises(ConfigError, match="rounds is not a mapping"):
        apply_overrides({"rounds": 3}, {"rounds.x": 1})
    with pytest.raises(ConfigError, match="not a valid index"):
        apply_overrides({"seeds": [1]}, {"seeds.5": 1})


def test_unknown_key_is_reported_with_a_suggestion(tmp_path: Path) -> None:
    file = _write(tmp_path / "c.yaml", "rounds: 2\ngraph:\n  nn: 3\n")
    with pytest.raises(ConfigError) as info:
        load_config(file, SweepConfig)
    message = str(info.value)
    assert message == f"invalid config {file}: graph.nn: unknown key (did you mean 'graph.n'?)"


class _Agent(ExperimentConfig):
    attack: str = "none"
    model: str | None = None


class _Deep(ExperimentConfig):
    dataset: GraphSection = GraphSection()
    agents: list[_Agent] = Field(default_factory=lambda: [_Agent()])
    backup: _Agent | None = None


@pytest.mark.parametrize(
    ("overrides", "problem"),
    [
        # A section that does not exist: the whole key as typed, the nearest key anywhere.
        ({"graph.n": 10}, "graph.n: unknown key (did you mean 'dataset.n'?)"),
        ({"datset.kind": "x"}, "datset.kind: unknown key (did you mean 'dataset.kind'?)"),
        # Misspelt leaves: the sibling, as a full dotted key, through lists and optionals.
        ({"agents.0.atack": "x"}, "agents.0.atack: unknown key (did you mean 'agents.0.attack'?)"),
        ({"backup.modle": "m"}, "backup.modle: unknown key (did you mean 'backup.model'?)"),
        # A key of the top level put under a section, one that exists or one that does not.
        ({"dataset.agents": []}, "dataset.agents: unknown key (did you mean 'agents'?)"),
        ({"options.backup": {}}, "options.backup: unknown key (did you mean 'backup'?)"),
        # Into a list of sections, the suggestion is a key --set takes: the index as
        # written, else the first item's (`agents.attack` is "not a valid index").
        (
            {"agnets.0.attack": "x"},
            "agnets.0.attack: unknown key (did you mean 'agents.0.attack'?)",
        ),
        ({"agent.attack": "x"}, "agent.attack: unknown key (did you mean 'agents.0.attack'?)"),
        (
            {"dataset.agents.0.model": "m"},
            "dataset.agents.0.model: unknown key (did you mean 'agents.0.model'?)",
        ),
        # Both parts misspelt: each part matched, not only the first.
        ({"agnets.0.atack": "x"}, "agnets.0.atack: unknown key (did you mean 'agents.0.attack'?)"),
        ({"bakup.modle": "m"}, "bakup.modle: unknown key (did you mean 'backup.model'?)"),
        # Nothing near: no suggestion rather than a wrong one.
        ({"dataset.x": 1}, "dataset.x: unknown key"),
        ({"zzz.qqq": 1}, "zzz.qqq: unknown key"),
        # Not a key of a list of sections, which cannot be set by that name.
        ({"attack": "x"}, "attack: unknown key"),
    ],
)
def test_unknown_dotted_keys_name_the_key_and_the_nearest_valid_one(
    overrides: dict[str, Any], problem: str
) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(None, _Deep, overrides)
    assert str(info.value) == f"invalid config: {problem}"


class _Unions(ExperimentConfig):
    steps: int | tuple[int, int] = 3
    picks: list[int | Literal["all"]] = Field(default_factory=list)
    limit: float | str | None = None
    level: int | None = None


@pytest.mark.parametrize(
    ("overrides", "problem"),
    [
        # Every member refused the value: one problem naming what the field takes, not one
        # per member under pydantic's name for it (`steps.int: ...; steps.tuple[int, int]`).
        ({"steps": "abc"}, "steps: expects an integer or a list of 2 integers (got 'abc')"),
        ({"steps": [1]}, "steps: expects an integer or a list of 2 integers (got [1])"),
        ({"steps": [1, "a"]}, "steps: expects an integer or a list of 2 integers (got [1, 'a'])"),
        ({"picks": [1, 2.5]}, "picks.1: expects an integer or one of 'all' (got 2.5)"),
        ({"limit": [1]}, "limit: expects a number or a string (got [1])"),
        # Only `| None`: pydantic's own message, as for any field.
        (
            {"level": "x"},
            "level: Input should be a valid integer, unable to parse string as "
            "an integer (got 'x')",
        ),
    ],
)
def test_a_union_field_is_one_problem_naming_what_it_takes(
    overrides: dict[str, Any], problem: str
) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(None, _Unions, overrides)
    assert str(info.value) == f"invalid config: {problem}"


def test_yaml_and_set_name_an_unknown_key_alike(tmp_path: Path) -> None:
    file = _write(tmp_path / "c.yaml", "graph:\n  n: 3\n")
    with pytest.raises(ConfigError) as from_yaml:
        load_config(file, _Deep)
    with pytest.raises(ConfigError) as from_set:
        load_config(None, _Deep, parse_overrides(["graph.n=3"]))
    assert str(from_yaml.value).removeprefix(f"invalid config {file}: ") == str(
        from_set.value
    ).removeprefix("invalid config: ")


def test_every_problem_is_listed_in_one_line(tmp_path: Path) -> None:
    file = _write(tmp_path / "c.yaml", "rounds: 0\ntemperature: hot\nextra: 1\n")
    with pytest.raises(ConfigError) as info:
        load_config(file, SweepConfig)
    message = str(info.value)
    assert "\n" not in message
    assert "rounds: Input should be greater than or equal to 1 (got 0)" in message
    assert "temperature: Input should be a valid number" in message
    assert "extra: unknown key" in message


def test_missing_required_key_and_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="data: required key is missing"):
        load_config(None, DataConfig)
    with pytest.raises(ConfigError, match=r"data: file not found: nowhere\.jsonl"):
        load_config(None, DataConfig, {"data": "nowhere.jsonl"})
    with pytest.raises(ConfigError, match="folder: directory not found"):
        load_config(None, DataConfig, {"data": str(_write(tmp_path / "d", "")), "folder": "no"})


def test_existing_paths_resolve_beside_the_config_file(tmp_path: Path) -> None:
    folder = tmp_path / "configs"
    folder.mkdir()
    _write(folder / "tasks.jsonl", "{}\n")
    (folder / "inputs-beside-config").mkdir()
    file = _write(folder / "c.yaml", "data: tasks.jsonl\nfolder: inputs-beside-config\n")
    cfg = load_config(file, DataConfig)
    assert cfg.data == (folder / "tasks.jsonl").resolve()
    assert cfg.folder == (folder / "inputs-beside-config").resolve()


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("rounds: [1\n", "invalid YAML at line"),
        ("- 1\n- 2\n", "top level must be a mapping"),
        ("rounds: 1\nrounds: 2\n", "duplicate key 'rounds' at line 2"),
    ],
)
def test_malformed_yaml_is_one_clear_error(tmp_path: Path, text: str, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        load_config(_write(tmp_path / "c.yaml", text), SweepConfig)


def test_missing_config_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="config file not found"):
        load_config(tmp_path / "absent.yaml", SweepConfig)


def test_long_error_lists_are_cut() -> None:
    overrides = {f"unknown{i}": i for i in range(20)}
    with pytest.raises(ConfigError, match=r"and 12 more$"):
        load_config(None, SweepConfig, overrides)


@given(st.text(max_size=200))
def test_parse_overrides_never_crashes_on_arbitrary_values(value: str) -> None:
    result = parse_overrides([f"key={value}"])
    assert list(result) == ["key"]


@given(
    st.dictionaries(
        st.sampled_from(["rounds", "temperature", "name", "bogus"]),
        st.one_of(st.integers(), st.text(max_size=20), st.floats(), st.none()),
    )
)
def test_validation_gives_a_config_or_a_config_error(data: dict[str, Any]) -> None:
    try:
        load_config(None, SweepConfig, data)
    except ConfigError as err:
        assert str(err).startswith("invalid config: ")
        assert "\n" not in str(err)


def test_huge_adversarial_configs_give_bounded_messages(tmp_path: Path) -> None:
    huge = "x" * 1_000_000
    long_key = "k" * 1000  # YAML caps implicit keys at 1024 characters
    file = _write(tmp_path / "c.yaml", f"{long_key}: 1\nname: {huge}\nrounds: '{huge[:1000]}'\n")
    with pytest.raises(ConfigError) as info:
        load_config(file, SweepConfig)
    message = str(info.value)
    assert len(message) < 1000
    assert "unknown key" in message and "rounds: Input should be a valid integer" in message
    overrides = parse_overrides([f"graph.n={huge}"])
    with pytest.raises(ConfigError, match=r"graph\.n: Input should be a valid integer"):
        load_config(None, SweepConfig, overrides)


def test_a_repeated_set_key_wins_over_a_section_set_between() -> None:
    # The last --set of a key is the one that holds, even with its section replaced between
    # the two: the repeated key kept its first place and was applied before the section.
    sets = ["graph.n=1", "graph={kind: star}", "graph.n=2"]
    overrides = parse_overrides(sets)
    assert list(overrides) == ["graph", "graph.n"]
    cfg = load_config(None, SweepConfig, overrides)
    assert (cfg.graph.n, cfg.graph.kind) == (2, "star")


class _Span(ExperimentConfig):
    low: int = 0
    high: int = 1
    unit: str = "s"

    @field_validator("unit")
    @classmethod
    def _known_unit(cls, value: str) -> str:
        if value not in ("s", "ms"):
            raise ValueError(f"unknown unit {value!r}; choose s or ms")  # quotes the value
        return value

    @model_validator(mode="after")
    def _ordered(self) -> _Span:
        if self.low > self.high:
            raise ValueError(f"low {self.low} is above high {self.high}")
        return self


class _Timed(ExperimentConfig):
    span: _Span = Field(default_factory=_Span)
    labels: list[str] = Field(default_factory=lambda: ["a"])
    when: Literal["now", "later"] = "now"

    @field_validator("labels")
    @classmethod
    def _some(cls, value: list[str]) -> list[str]:
        if not value:
            raise ValueError("must list at least one label")  # the error line adds the value
        return value

    @model_validator(mode="after")
    def _later_needs_a_span(self) -> _Timed:
        if self.when == "later" and self.span.high == 1:
            raise ValueError("when: later needs span.high above 1")
        return self


@pytest.mark.parametrize(
    ("overrides", "problem"),
    [
        # pydantic's own messages do not say the value: the line adds it once.
        (
            {"span.low": "x"},
            "span.low: Input should be a valid integer, unable to parse "
            "string as an integer (got 'x')",
        ),
        ({"labels": []}, "labels: must list at least one label (got [])"),
        # A validator that quotes the string it refuses: not said again.
        ({"span.unit": "h"}, "span.unit: unknown unit 'h'; choose s or ms"),
        # A section's own validator is handed the whole section, defaults filled in: its
        # message names the keys at fault, the section is not dumped after it.
        ({"span.low": 5}, "span: low 5 is above high 1"),
        # The whole config's validator: its message, with no "<top>" in front.
        ({"when": "later"}, "when: later needs span.high above 1"),
    ],
)
def test_each_problem_names_the_field_and_the_value_once(
    overrides: dict[str, Any], problem: str
) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(None, _Timed, overrides)
    assert str(info.value) == f"invalid config: {problem}"


def test_validation_problems_of_a_section_checked_against_another_model() -> None:
    # A validator that checks its section against another model names each problem from
    # the section (as `agents.strong.profile` checks against the simulated profile).
    with pytest.raises(ValidationError) as info:
        SweepConfig.model_validate({"rounds": 0, "graph": {"n": "x"}})
    line = validation_problems(info.value, SweepConfig, loc=("strong", "profile"))
    assert line == (
        "strong.profile.rounds: Input should be greater than or equal to 1 (got 0); "
        "strong.profile.graph.n: Input should be a valid integer, unable to parse string as "
        "an integer (got 'x')"
    )
