"""Unit ids depend only on what changes the work (docs/experiments.md, "Unit ids").

A pydantic model in a payload is hashed with its non-default fields only, so adding a field
with a default to a config keeps every id (a rerun resumes), while setting it changes them.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any, ClassVar

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field, create_model

from byzllm.errors import InputError
from byzllm.runs import (
    ExperimentConfig,
    Record,
    Store,
    Unit,
    canonical_json,
    make_unit,
    prepare_model,
    run_units,
    unit_id,
)
from byzllm.runs._units import UNIT_ID_SCHEME, _digest, reset_to_defaults

# -- a small sweep, its config, and a variant of that config with new defaulted fields --------


class Players(ExperimentConfig):
    agents: str = "simulated"
    noise: float = 0.1
    profile: dict[str, float] = Field(default_factory=dict)


class SweepConfig(ExperimentConfig):
    questions: int = 3
    protocols: list[str] = Field(default_factory=lambda: ["sac", "vote"])
    players: Players = Field(default_factory=Players)
    groups: list[Players] = Field(default_factory=lambda: [Players()])
    named: dict[str, Players] = Field(default_factory=dict)


# What a developer does next release: a defaulted field on a nested section (used inside the
# section, inside a list and inside a dict) and one on the top-level config.
PlayersV2 = create_model("PlayersV2", __base__=Players, temperature=(float, 0.0))
SweepConfigV2 = create_model(
    "SweepConfigV2",
    __base__=SweepConfig,
    players=(PlayersV2, Field(default_factory=PlayersV2)),
    groups=(list[PlayersV2], Field(default_factory=lambda: [PlayersV2()])),
    named=(dict[str, PlayersV2], Field(default_factory=dict)),
    retries=(int, 0),
)


def _config() -> SweepConfig:
    return SweepConfig(
        questions=3,
        players=Players(noise=0.3),
        groups=[Players(), Players(agents="llm", profile={"skill": 0.9})],
        named={"weak": Players(noise=0.5)},
    )


def _v2(config: SweepConfig, **changes: Any) -> SweepConfig:
    """The same config as the new release's class sees it (``changes``: new values)."""
    data = config.model_dump()
    data.update(changes)
    variant: SweepConfig = SweepConfigV2.model_validate(data)
    return variant


def _units(config: SweepConfig) -> list[Unit]:
    return [
        make_unit({"config": config, "question": q, "protocol": p}, label=f"q{q}/{p}")
        for q in range(config.questions)
        for p in config.protocols
    ]


class Answer(Record):
    kind: ClassVar[str] = "unit_ids_answer"
    question: int
    protocol: str


RECEIVED: list[dict[str, Any]] = []


async def answer(payload: dict[str, Any]) -> Answer:
    RECEIVED.append(payload)
    return Answer(question=payload["question"], protocol=payload["protocol"])


def _run(run_dir: Path, config: SweepConfig) -> tuple[int, int]:
    """(work calls, units skipped) of one invocation."""
    RECEIVED.clear()
    summary = asyncio.run(run_units(run_dir, _units(config), answer, config=config, progress=False))
    assert summary.failed == 0 and summary.complete
    assert summary.done == len(RECEIVED)
    return len(RECEIVED), summary.skipped


def test_a_new_defaulted_field_resumes_every_unit(tmp_path: Path) -> None:
    config = _config()
    assert _run(tmp_path, config) == (6, 0)
    variant = _v2(config)
    assert _run(tmp_path, variant) == (0, 6)  # nothing re-run
    with Store.open(tmp_path) as store:
        assert store.counts() == {"pending": 0, "done": 6, "failed": 0}
        assert len(store.records("unit_ids_answer")) == 6


@pytest.mark.parametrize(
    "changes",
    [
        {"retries": 2},  # the new top-level field
        {"players": {"noise": 0.3, "temperature": 0.7}},  # the new field of a section
        {"groups": [{}, {"agents": "llm", "profile": {"skill": 0.9}, "temperature": 1.0}]},
        {"named": {"weak": {"noise": 0.5, "temperature": 0.2}}},
    ],
    ids=["top-level", "nested", "in-a-list", "in-a-dict"],
)
def test_setting_the_new_field_reruns_every_unit(tmp_path: Path, changes: dict[str, Any]) -> None:
    config = _config()
    assert _run(tmp_path, config) == (6, 0)
    assert _run(tmp_path, _v2(config)) == (0, 6)
    changed = _v2(config, **changes)
    assert _run(tmp_path, changed) == (6, 0)  # every unit re-run
    # The work got everything it needs: validating the payload brings the defaults back.
    assert all(SweepConfigV2.model_validate(p["config"]) == changed for p in RECEIVED)
    assert _run(tmp_path, changed) == (0, 6)
    with Store.open(tmp_path) as store:
        assert store.counts()["done"] == 12


def test_the_payload_holds_the_non_default_fields_and_validates_back() -> None:
    config = _config()
    unit = _units(config)[0]
    assert unit.payload["config"] == {
        "players": {"noise": 0.3},
        "groups": [{}, {"agents": "llm", "profile": {"skill": 0.9}}],
        "named": {"weak": {"noise": 0.5}},
    }
    assert SweepConfig.model_validate(unit.payload["config"]) == config
    assert SweepConfigV2.model_validate(unit.payload["config"]) == _v2(config)
    assert unit.id == unit_id(unit.payload) == unit_id({**unit.payload, "config": config})


def test_a_value_equal_to_the_default_is_the_same_unit() -> None:
    implicit = {"config": SweepConfig(), "q": 1}
    explicit = {"config": SweepConfig(questions=3, players=Players(noise=0.1)), "q": 1}
    assert unit_id(implicit) == unit_id(explicit) == unit_id({"config": {}, "q": 1})
    assert unit_id({"config": SweepConfig(questions=4), "q": 1}) != unit_id(implicit)


def test_a_dumped_model_keeps_its_defaults_in_the_id() -> None:
    # Why payload builders put models, not model_dump() dicts, in payloads.
    config = _config()
    assert unit_id({"c": config}) == unit_id({"c": _v2(config)})
    assert unit_id({"c": config.model_dump()}) != unit_id({"c": _v2(config).model_dump()})


def test_a_changed_default_keeps_the_id_unless_written_out() -> None:
    # The documented consequence: ids cannot see a default's value. A payload builder whose
    # field default changes writes the field out (or the scheme version is bumped).
    old = create_model("Old", __base__=ExperimentConfig, rate=(float, 0.1))
    new = create_model("Old", __base__=ExperimentConfig, rate=(float, 0.2))
    assert unit_id({"c": old()}) == unit_id({"c": new()})
    assert unit_id({"c": old(), "rate": old().rate}) != unit_id({"c": new(), "rate": new().rate})


def test_scheme_and_hash() -> None:
    payload = {"config": _config(), "question": 2}
    text = canonical_json(payload)
    assert UNIT_ID_SCHEME == 1
    assert unit_id(payload) == hashlib.sha256(text.encode()).hexdigest()[:20] == _digest(text, 1)
    assert _digest(text, 2) != _digest(text, 1)  # a bump changes every id


def test_non_finite_values_inside_models_are_refused() -> None:
    with pytest.raises(InputError, match="NaN"):
        make_unit({"c": Players(noise=float("nan"))})
    with pytest.raises(InputError, match="NaN"):
        make_unit({"c": SweepConfig(named={"x": Players(noise=float("inf"))})})


def test_sets_are_sorted() -> None:
    assert canonical_json({"s": {"b", "c", "a"}}) == '{"s":["a","b","c"]}'
    assert unit_id({"s": frozenset({3, 1, 2})}) == unit_id({"s": [1, 2, 3]})


# -- ids across processes, and pinned values ---------------------------------------------------

_SCRIPT = """
import json, sys
sys.path.insert(0, sys.argv[1])
from test_unit_ids import _config, _v2
from byzllm.runs import unit_id
print(json.dumps([unit_id({"c": _config(), "s": {"x", "y", "z", "w"}}),
                  unit_id({"c": _v2(_config()), "s": {"w", "x", "y", "z"}})]))
"""

#: Ids of this scheme, pinned: a change here re-runs every stored unit of every user.
PINNED = {
    "plain": "78017e775dc59a6337d5",
    "config": "56aebac942e8834d6983",
}


def test_pinned_ids() -> None:
    assert unit_id({"question": 3, "protocol": "sac"}) == PINNED["plain"]
    assert unit_id({"c": _config(), "s": {"x", "y", "z", "w"}}) == PINNED["config"]


def test_ids_are_the_same_in_other_processes() -> None:
    for hash_seed in ("1", "2"):
        out = subprocess.run(
            [sys.executable, "-c", _SCRIPT, str(Path(__file__).parent)],
            env={**os.environ, "PYTHONHASHSEED": hash_seed},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        assert json.loads(out) == [PINNED["config"], PINNED["config"]]


# -- properties -----------------------------------------------------------------------------

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3)
    ),
    max_leaves=12,
)
players = st.builds(
    Players,
    agents=st.sampled_from(["simulated", "llm"]),
    noise=st.floats(0, 1),
    profile=st.dictionaries(st.sampled_from(["skill", "bias"]), st.floats(0, 1), max_size=2),
)
configs = st.builds(
    SweepConfig,
    questions=st.integers(1, 5),
    players=players,
    groups=st.lists(players, min_size=1, max_size=3),
    named=st.dictionaries(st.text(max_size=4), players, max_size=2),
)
payloads = st.dictionaries(st.text(max_size=6), json_values | configs | players, max_size=5)


def _shuffled(value: Any, rng: random.Random) -> Any:
    """``value`` with the keys of every dict (at every depth) in a random order."""
    if isinstance(value, BaseModel):
        return _shuffled(value.model_dump(mode="json", exclude_defaults=True), rng)
    if isinstance(value, dict):
        items = list(value.items())
        rng.shuffle(items)
        return {k: _shuffled(v, rng) for k, v in items}
    if isinstance(value, list):
        return [_shuffled(v, rng) for v in value]
    return value


@settings(max_examples=80, deadline=None)
@given(payloads, st.randoms(use_true_random=False))
def test_ids_do_not_depend_on_key_order(payload: dict[str, Any], rng: random.Random) -> None:
    shuffled = _shuffled(payload, rng)
    assert unit_id(shuffled) == unit_id(payload)
    unit = make_unit(payload)
    assert make_unit(unit.payload).id == unit.id  # the stored payload gives back the id


@settings(max_examples=60, deadline=None)
@given(configs, st.integers(0, 3))
def test_variant_ids_match_and_new_values_differ(config: SweepConfig, q: int) -> None:
    assert unit_id({"c": _v2(config), "q": q}) == unit_id({"c": config, "q": q})
    assert unit_id({"c": _v2(config, retries=1), "q": q}) != unit_id({"c": config, "q": q})


# -- real experiments -----------------------------------------------------------------------


def _consensus_variant_classes() -> type[Any]:
    """ConsensusConfig as a later release might have it: a defaulted field on every model
    a consensus payload carries (dataset, agents and their backends, composition) and on the
    config itself."""
    from byzllm.experiments.consensus.config import (
        AgentBackend,
        Composition,
        ConsensusConfig,
        DatasetConfig,
        GroupBackends,
    )

    composition = create_model("CompositionV2", __base__=Composition, warmup=(int, 0))
    dataset = create_model("DatasetConfigV2", __base__=DatasetConfig, shuffle=(bool, False))
    backend = create_model("AgentBackendV2", __base__=AgentBackend, top_p=(float, 1.0))
    groups = create_model(
        "GroupBackendsV2",
        __base__=GroupBackends,
        strong=(backend, Field(default_factory=backend)),
        weak=(backend, Field(default_factory=backend)),
    )
    config: type[Any] = create_model(
        "ConsensusConfigV2",
        __base__=ConsensusConfig,
        compositions=(list[composition], Field(default_factory=lambda: [composition()])),
        dataset=(dataset, Field(default_factory=dataset)),
        agents=(groups, Field(default_factory=groups)),
        early_stop=(bool, False),
    )
    return config


def test_consensus_demo_ids_survive_new_defaulted_fields(monkeypatch: pytest.MonkeyPatch) -> None:
    from byzllm.experiments.consensus import experiment
    from byzllm.experiments.consensus.config import DatasetConfig
    from byzllm.experiments.consensus.demo import demo_config
    from byzllm.experiments.consensus.experiment import expand_units

    # The new dataset field's "implementation": the loader reads the fields it knows.
    load = experiment.load_dataset
    monkeypatch.setattr(
        experiment,
        "load_dataset",
        lambda cfg: load(DatasetConfig.model_validate(cfg.model_dump(exclude={"shuffle"}))),
    )

    base = demo_config()
    units = expand_units(base)
    assert len(units) == 180 and len({u.id for u in units}) == 180
    assert units[0].payload["agents"] == {} and units[0].payload["composition"] == {}

    v2 = _consensus_variant_classes()
    same = expand_units(v2.model_validate(base.model_dump()))
    assert [u.id for u in same] == [u.id for u in units]
    assert [u.payload for u in same] == [u.payload for u in units]

    for changes in (
        {"compositions": [{"warmup": 1}]},
        {"dataset": {"shuffle": True}},
        {"agents": {"weak": {"top_p": 0.9}}},
    ):
        changed = expand_units(v2.model_validate({**base.model_dump(), **changes}))
        assert len(changed) == 180
        assert not {u.id for u in changed} & {u.id for u in units}, changes


def test_consensus_work_runs_on_the_reduced_payload() -> None:
    from byzllm.experiments.consensus.demo import demo_config
    from byzllm.experiments.consensus.experiment import consensus_unit, expand_units

    unit = expand_units(demo_config(questions=2))[0]
    records = asyncio.run(consensus_unit(unit.payload))
    question = records[-1].model_dump()
    assert question["composition_config"]["strong"] == 4  # defaults came back
    assert question["task_id"] == unit.payload["task_id"]


def test_whodunit_grid_fields_do_not_change_ids() -> None:
    from byzllm.experiments.whodunit import WhoDunitRunConfig, expand_units, work
    from byzllm.experiments.whodunit.experiment import GRID_FIELDS

    small = expand_units(WhoDunitRunConfig(split="train", n_games=2, repeats=1))
    larger = expand_units(WhoDunitRunConfig(split="train", n_games=3, repeats=2))
    assert len(larger) == 6 and {u.id for u in small} < {u.id for u in larger}
    other = expand_units(WhoDunitRunConfig(split="train", n_games=2, sim={"hallucination_rate": 0}))
    assert not {u.id for u in other} & {u.id for u in small}

    cfg = WhoDunitRunConfig(split="train", n_games=2, repeats=3, max_reprompts=1)
    unit = expand_units(cfg)[0]
    assert unit.payload["config"] == {"split": "train", "max_reprompts": 1}
    assert WhoDunitRunConfig.model_validate(unit.payload["config"]) == reset_to_defaults(
        cfg, GRID_FIELDS
    )
    records = asyncio.run(work(unit.payload))
    assert records[0].model_dump()["split"] == "train"


def test_monitor_grid_fields_do_not_change_ids() -> None:
    from byzllm.experiments.monitor import MonitorExperimentConfig, collect_units

    base = MonitorExperimentConfig(n_train=2, n_validation=1, repeats=1, conditions=["none"])
    grown = MonitorExperimentConfig(
        n_train=3, n_validation=1, n_test=5, repeats=4, collect_repeats=2
    )
    small, large = collect_units(base), collect_units(grown)
    assert len(large) == 8 and {u.id for u in small} < {u.id for u in large}
    other = collect_units(base.model_copy(update={"renormalize": False}))
    assert not {u.id for u in other} & {u.id for u in small}


def test_reset_to_defaults_refuses_unknown_fields() -> None:
    with pytest.raises(InputError, match="no field"):
        reset_to_defaults(Players(), ["nope"])
    assert reset_to_defaults(Players(noise=0.4, agents="llm"), ["noise"]) == Players(agents="llm")


def test_transport_settings_are_not_part_of_the_id_but_reach_the_work() -> None:
    """The same run against a server on another port (or another cache file, timeout,
    concurrency) resumes: only what is asked of the model identifies a unit."""
    from byzllm.experiments.consensus.config import AgentBackend

    def unit_for(**changes: object) -> Unit:
        fields: dict[str, Any] = {"backend": "llm", "model": "openai/m", **changes}
        return make_unit({"agents": AgentBackend(**fields), "question": 1})

    first = unit_for(base_url="http://127.0.0.1:1/v1", cache="a.sqlite", timeout_s=5)
    second = unit_for(base_url="http://127.0.0.1:2/v1", cache="b.sqlite", max_concurrency=2)
    assert first.id == second.id
    assert first.payload["agents"]["base_url"] == "http://127.0.0.1:1/v1"  # the work gets it
    assert second.payload["agents"]["max_concurrency"] == 2
    assert unit_for(model="openai/other").id != first.id  # what is asked still counts
    assert unit_for(temperature=0.7).id != first.id


# -- models reduced once for many units ------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(configs, players, st.integers(0, 3))
def test_a_prepared_model_makes_the_same_unit(config: SweepConfig, player: Players, q: int) -> None:
    plain = make_unit({"c": config, "p": [player], "q": q})
    prepared = make_unit({"c": prepare_model(config), "p": [prepare_model(player)], "q": q})
    assert prepared == plain  # the same id, label and payload


def test_a_prepared_model_keeps_its_transport_fields_out_of_the_id_only() -> None:
    from byzllm.experiments.consensus.config import AgentBackend

    backend = AgentBackend(backend="llm", model="openai/m", base_url="http://127.0.0.1:1/v1")
    plain = make_unit({"agents": backend, "question": 1})
    prepared = make_unit({"agents": prepare_model(backend), "question": 1})
    assert prepared == plain
    assert prepared.payload["agents"]["base_url"] == "http://127.0.0.1:1/v1"


def test_a_prepared_model_is_a_snapshot() -> None:
    player = Players(noise=0.25)
    prepared = prepare_model(player)
    player.noise = 0.5  # the payloads hold what the model was when it was prepared
    assert make_unit({"p": prepared}) == make_unit({"p": Players(noise=0.25)})


def test_grids_expand_to_the_same_units_as_before() -> None:
    """The experiments' grids reduce their shared config once; every unit is what reducing it
    per unit gave."""
    from byzllm.experiments.consensus.demo import demo_config
    from byzllm.experiments.consensus.experiment import expand_units

    config = demo_config(questions=3)
    units = expand_units(config)
    shared = {"dataset": config.dataset, "agents": config.agents}
    by_id = {u.id: u for u in units}
    for composition in config.compositions:
        unit = make_unit(
            {
                **shared,
                "protocol": config.protocols[0],
                "topology": config.topologies[0],
                "composition": composition,
                "F": config.F[0],
                "T": config.T[0],
                "seed": config.seeds[0],
                "question": 0,
                "task_id": units[0].payload["task_id"],
            }
        )
        assert by_id[unit.id].payload == unit.payload
