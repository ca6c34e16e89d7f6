"""Reports give the same intervals and rows whatever order the records come in.

The bootstrap is seeded and resamples positions, so a report that fed its units in record
order printed other intervals for the same data once a store returned them in another order
(a grid grown with ``--force``, a resumed run, a rerun unit). Each test reads the same
records in grid order and shuffled, and compares everything the report returns.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeVar

import pytest
from hypothesis import given
from hypothesis import strategies as st

from byzllm.experiments.codegen.report import table1_rows
from byzllm.experiments.consensus.config import ConsensusConfig
from byzllm.experiments.consensus.experiment import expand_units as consensus_units
from byzllm.experiments.consensus.experiment import run_in_memory as consensus_run
from byzllm.experiments.consensus.report import (
    consensus_intervals,
    count_questions,
    metrics_rows,
    summarize,
)
from byzllm.experiments.govsim import GovSimRunConfig, summary_rows
from byzllm.experiments.govsim import expand_units as govsim_units
from byzllm.experiments.govsim import work as govsim_work
from byzllm.experiments.govsim.report import metric_intervals
from byzllm.experiments.monitor.ablations import success_difference
from byzllm.experiments.monitor.environments import get_environment
from byzllm.experiments.monitor.outcomes import outcome_rows
from byzllm.experiments.whodunit.report import game_estimates
from byzllm.protocols import QuestionTrace
from byzllm.runs import run_in_memory

_T = TypeVar("_T")

ROOT = Path(__file__).resolve().parents[2]


def _shuffled(rows: Sequence[_T], seed: int = 1) -> list[_T]:
    out = list(rows)
    random.Random(seed).shuffle(out)
    assert out != list(rows)  # (a shuffle that changed nothing would test nothing)
    return out


def _games(n: int = 12, repeats: int = 2, seed: int = 0) -> list[dict[str, Any]]:
    """Game rows of two conditions with varied outcomes; ids ``g-1`` .. ``g-12``, whose text
    order (``g-10`` before ``g-2``) is not their number order."""
    rng = random.Random(seed)
    rows = []
    for condition in ("none", "monitor-1"):
        for k in range(1, n + 1):
            for r in range(repeats):
                won = rng.random() < 0.5
                rows.append(
                    {
                        "game_id": f"g-{k}",
                        "repeat": r,
                        "condition": condition,
                        "split": "test",
                        "success": won,
                        "accused": rng.random() < 0.7,
                        "total_turns": rng.randint(3, 20),
                        "resets": 0,
                        "resamples": 0,
                        "simulated": True,
                        "survival_rate": float(won),
                        "survival_time": float(rng.randint(1, 12)),
                        "efficiency": rng.random(),
                        "outcome": {
                            "survival_rate": float(won),
                            "survival_time": float(rng.randint(1, 12)),
                            "efficiency": rng.random(),
                        },
                    }
                )
    return rows


# -- the order itself ---------------------------------------------------------------------------


def test_ids_sort_by_their_numbers() -> None:
    from byzllm.experiments._order import in_unit_order, natural_key

    ids = ["test-10", "test-2", "test-1", "HumanEval/100", "HumanEval/9", "s01", "s1"]
    assert sorted(ids, key=natural_key) == [
        "HumanEval/9",
        "HumanEval/100",
        "s01",
        "s1",
        "test-1",
        "test-2",
        "test-10",
    ]
    assert in_unit_order({"b-10": 3, "b-9": 2, "a": 1}) == [1, 2, 3]


@given(st.lists(st.text(alphabet="ab-/0123456789", max_size=8), max_size=12))
def test_the_order_depends_on_the_ids_alone(ids: list[str]) -> None:
    """Any ids (digits anywhere, leading zeros, none) sort without error, to one order
    whatever order they came in."""
    from byzllm.experiments._order import natural_key

    assert sorted(ids, key=natural_key) == sorted(reversed(ids), key=natural_key)


def test_fresh_runs_expand_their_units_in_id_order() -> None:
    """Why a fresh run's intervals did not move: its games and questions come in the order
    of their ids, so sorting them gives the record order it had."""
    from byzllm.envs.whodunit import make_splits as whodunit_splits
    from byzllm.experiments._order import natural_key
    from byzllm.experiments.consensus.setup import load_dataset
    from byzllm.experiments.govsim.experiment import select_games

    def in_order(ids: list[str]) -> bool:
        return ids == sorted(ids, key=natural_key)

    for split in ("train", "validation", "test"):
        assert in_order([g.id for g in select_games(GovSimRunConfig(split=split))])
        assert in_order([g.id for g in whodunit_splits(seed=0).get(split)])
    assert in_order([g.id for g in select_games(GovSimRunConfig(split="generated", n_games=25))])
    synthetic = ConsensusConfig.model_validate({"dataset": {"n": 40}}).dataset
    assert in_order([t.id for t in load_dataset(synthetic)])


# -- GovSim, the monitor's outcome rows and differences -------------------------------------------


def test_govsim_intervals_ignore_record_order() -> None:
    cfg = GovSimRunConfig(split="generated", n_games=12, repeats=2)
    rows = asyncio.run(run_in_memory(govsim_units(cfg), govsim_work, kinds={"govsim_game"}))
    shuffled = _shuffled(rows)
    assert summary_rows(shuffled) == summary_rows(rows)
    assert metric_intervals(shuffled) == metric_intervals(rows)


@pytest.mark.parametrize("env", ["govsim", "whodunit"])
def test_outcome_rows_ignore_record_order(env: str) -> None:
    metrics = get_environment(env).metrics
    games = _games()
    assert outcome_rows(_shuffled(games), metrics) == outcome_rows(games, metrics)


def test_whodunit_estimates_ignore_record_order() -> None:
    games = [g for g in _games() if g["condition"] == "none"]
    assert game_estimates(_shuffled(games)) == game_estimates(games)


def test_unpaired_difference_ignores_record_order() -> None:
    # No (game, repeat) pair in common: the two conditions are resampled as one pool.
    games = [{**g, "repeat": g["repeat"] + 10} if g["condition"] == "none" else g for g in _games()]
    found = success_difference(games, "monitor-1", "none")
    assert found is not None and not found.paired
    assert success_difference(_shuffled(games), "monitor-1", "none") == found


# -- the simulated twins' comparisons -------------------------------------------------------------


def test_twin_comparisons_ignore_record_order() -> None:
    from byzllm.experiments._twin import mean_comparison
    from byzllm.experiments.whodunit.fit import _rows

    games = _games()
    real = [g for g in games if g["condition"] == "none"]
    twin = [g for g in games if g["condition"] == "monitor-1"]
    metrics = {"Success-Rate": lambda g: float(g["success"]), "turns": lambda g: g["total_turns"]}

    def compare(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> Any:
        return mean_comparison(a, b, metrics, unit=lambda g: str(g["game_id"]), resamples=300)

    assert compare(_shuffled(real), _shuffled(twin, 2)) == compare(real, twin)
    assert _rows(_shuffled(real), _shuffled(twin, 2), 300) == _rows(real, twin, 300)


# -- CodeGen --------------------------------------------------------------------------------------


def test_codegen_table_ignores_record_order() -> None:
    rng = random.Random(0)
    rows = [
        {
            "source": "humaneval",
            "condition": condition,
            "problem_id": f"HumanEval/{k}",
            "split": "test",
            "passed": rng.random() < 0.6,
            "resets": 0,
            "resamples": 0,
            "simulated": True,
            "simulated_execution": True,
        }
        for condition in ("zero-shot", "none")
        for k in range(20)
        for _ in range(3)
    ]
    assert table1_rows(_shuffled(rows)) == table1_rows(rows)


# -- consensus ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def consensus_records() -> list[dict[str, Any]]:
    config = ConsensusConfig.model_validate(
        {
            "protocols": ["sac", "cp-wbft"],
            "topologies": ["merg", "complete"],
            "seeds": [0, 1],
            "T": [2],
            "dataset": {"n": 12},
        }
    )
    return consensus_run(config)


def test_consensus_rows_and_intervals_ignore_record_order(
    consensus_records: list[dict[str, Any]],
) -> None:
    rows = metrics_rows(summarize(consensus_records), for_json=True)
    assert metrics_rows(summarize(_shuffled(consensus_records)), for_json=True) == rows
    # In the order the config's grid expands in: topologies, then protocols.
    assert [(r["topology"], r["protocol"]) for r in rows] == [
        ("merg", "sac"),
        ("merg", "cp-wbft"),
        ("complete", "sac"),
        ("complete", "cp-wbft"),
    ]


@pytest.mark.parametrize("simulated", [True, False])
def test_consensus_summaries_counted_apart_merge_into_the_one_summary(
    consensus_records: list[dict[str, Any]], simulated: bool
) -> None:
    """A summary split over two processes (``consensus matrix`` with worker processes): each
    counts some of the records, in any order, a configuration's questions possibly in both;
    merged, the two give the one summary, intervals (and a real run's scorer AUC) included,
    and intervals computed apart are the result's own."""
    records = [{**r, "simulated": simulated} for r in consensus_records]
    whole = summarize(records)
    shuffled = _shuffled(records)
    for cut in (0, len(records) // 3, len(records)):
        summary = count_questions(shuffled[:cut])
        summary.merge(count_questions(shuffled[cut:]))
        assert summary.result() == whole
        assert summary.result(intervals=summary.intervals()) == whole
    # Split by configuration, as the matrix's units come: the parts share none.
    first = [r for r in records if r["protocol"] == "sac"]
    summary = count_questions([r for r in records if r["protocol"] != "sac"])
    summary.merge(count_questions(first))
    assert summary.result() == whole
    if not simulated:
        assert all(meta["scorer_auc"] for meta, _ in whole)


def test_consensus_fit_intervals_ignore_trace_order(
    consensus_records: list[dict[str, Any]],
) -> None:
    traces = [
        QuestionTrace.model_validate(r["trace"])
        for r in consensus_records
        if (r["protocol"], r["topology"]) == ("sac", "merg")
    ]
    assert consensus_intervals(_shuffled(traces), resamples=300) == consensus_intervals(
        traces, resamples=300
    )


def test_scorer_auc_ignores_record_order(consensus_records: list[dict[str, Any]]) -> None:
    """The scorer's AUC (reported for real runs) resamples traces by position too."""
    real = [
        {**r, "simulated": False}
        for r in consensus_records
        if (r["protocol"], r["topology"]) == ("sac", "merg")
    ]
    found = [meta["scorer_auc"] for meta, _ in summarize(real)]
    assert len(found) == 1 and found[0]
    assert [meta["scorer_auc"] for meta, _ in summarize(_shuffled(real))] == found


def test_consensus_rows_follow_the_canonical_order_not_the_config_list() -> None:
    """A config listing an axis out of the canonical order gets the canonical one: the
    records alone do not say in which order the config listed it."""
    config = ConsensusConfig.model_validate(
        {
            "protocols": ["majority", "sac"],
            "topologies": ["complete", "merg"],
            "T": [1],
            "dataset": {"n": 3},
        }
    )
    records = consensus_run(config)
    rows = [(m["topology"], m["protocol"]) for m, _ in summarize(records)]
    assert rows == [
        ("merg", "sac"),
        ("merg", "majority"),
        ("complete", "sac"),
        ("complete", "majority"),
    ]
    assert [(m["topology"], m["protocol"]) for m, _ in summarize(records[::-1])] == rows


def _grid_order(config: ConsensusConfig) -> list[tuple[Any, ...]]:
    """The configurations of ``config`` in the order its grid expands them."""
    from byzllm.experiments.consensus.config import Composition

    keys: dict[tuple[Any, ...], None] = {}
    for unit in consensus_units(config):
        p = unit.payload
        label = Composition.model_validate(p["composition"]).label
        keys.setdefault((p["protocol"], p["topology"], label, p["F"], p["T"]), None)
    return list(keys)


def _shipped_consensus_configs() -> list[Path]:
    shipped = sorted((ROOT / "src" / "byzllm" / "configs").glob("sac-*.yaml"))
    return [
        *shipped,
        ROOT / "src/byzllm/configs/real/sac-table1.yaml",
        ROOT / "examples/sweep.yaml",
    ]


@pytest.mark.parametrize("path", _shipped_consensus_configs(), ids=lambda p: p.name)
def test_shipped_configs_list_their_rows_in_the_canonical_order(path: Path) -> None:
    """So their reports keep the row order they had: the grid's own order."""
    from byzllm.experiments.consensus.report import _configuration_order
    from byzllm.runs import load_config

    config = load_config(path, ConsensusConfig)
    config = config.model_copy(update={"dataset": config.dataset.model_copy(update={"n": 1})})
    grid = _grid_order(config)
    assert len(grid) > 1
    assert sorted(grid, key=_configuration_order) == grid


def test_the_matrix_lists_its_rows_in_the_canonical_order() -> None:
    from byzllm.experiments.consensus.matrix import matrix_config
    from byzllm.experiments.consensus.report import _configuration_order

    grid = _grid_order(matrix_config(questions=1))
    assert len(grid) == 6 * 2 * 5 * 3  # attacks × adversaries × protocols × topologies
    assert sorted(grid, key=_configuration_order) == grid


def test_every_composition_label_is_read() -> None:
    """The row order reads a composition's label: every attack and placement parses (a label
    that did not would sort after the others, by its text)."""
    from byzllm.agents.consensus import ATTACKS
    from byzllm.experiments.consensus.config import Composition
    from byzllm.experiments.consensus.report import _composition_order

    for attack in ATTACKS:
        for placement in (
            {"placement": "random"},
            {"placement": "highest-degree"},
            {"placement": "given", "byzantine_nodes": [5, 6]},
        ):
            composition = Composition.model_validate(
                {"byzantine": 2, "weak": 1, "attack": attack, **placement}
            )
            key = _composition_order(composition.label)
            assert key[0] == 0 and key[1] == ATTACKS.index(attack), composition.label
