"""Simulated consensus runs give the same records, field for field, as they always have: the
simulator's shortcuts (memoised draws, stages run inline) change its speed, never its results.

The digests were taken from the records of the code before those shortcuts; a change to the
simulated population's behaviour that is meant must update them (and say so in its commit).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import sqlite3
from pathlib import Path

import pytest

from byzllm.experiments.consensus.config import ConsensusConfig
from byzllm.experiments.consensus.demo import demo_config
from byzllm.experiments.consensus.experiment import consensus_unit, expand_units
from byzllm.experiments.consensus.matrix import matrix_config
from byzllm.runs import Executor, LocalExecutor, ProcessExecutor, run_units

#: sha256 of every record (kind and JSON dump, keys sorted) of every unit, in grid order.
DEMO_2_QUESTIONS = "7324bece51d834d942cb5d6b2ffa1350d4bfd5489b07ed7018210213461067f1"
#: W-MSR's non-integer values are kept in full since they were taken (they had six
#: significant digits), and its means are exact (a float sum moved agreeing values off their
#: answer): its answer texts changed in their last digits (31 of its 1,764 round records,
#: 191.2222222222222 -> 191.22222222222223; none changed correctness), nothing else.
MATRIX_1_QUESTION = "b8ec850cc6e66dfaaf3bffcd6d03f1555a43dea9279965f512d940bb242d3a5c"


def _digest(config: ConsensusConfig) -> str:
    digest = hashlib.sha256()

    async def run() -> None:
        for unit in expand_units(config):
            for record in await consensus_unit(dict(unit.payload)):
                dumped = {"kind": record.kind, **record.model_dump(mode="json")}
                digest.update(json.dumps(dumped, sort_keys=True).encode())

    asyncio.run(run())
    return digest.hexdigest()


def test_the_demo_records_are_unchanged() -> None:
    assert _digest(demo_config(questions=2)) == DEMO_2_QUESTIONS


def test_the_attack_matrix_records_are_unchanged() -> None:
    # Every attack, protocol and topology, one and two adversaries: 180 units.
    assert _digest(matrix_config(questions=1)) == MATRIX_1_QUESTION


def _stored_rows(run_dir: Path, executor: Executor) -> list[tuple[object, ...]]:
    units = expand_units(matrix_config(questions=1))
    summary = asyncio.run(
        run_units(run_dir, units, consensus_unit, executor=executor, progress=False)
    )
    assert summary.done == len(units) and summary.failed == 0
    with sqlite3.connect(run_dir / "results.sqlite") as conn:
        return conn.execute(
            "SELECT unit_id, seq, kind, json FROM records ORDER BY unit_id, seq"
        ).fetchall()


@pytest.mark.slow
def test_worker_processes_store_the_same_bytes_as_this_process(tmp_path: Path) -> None:
    # --executor auto spreads a large simulated run over processes, whose records are
    # packed in the workers: the store must not be able to tell.
    local = _stored_rows(tmp_path / "local", LocalExecutor())
    spread = _stored_rows(tmp_path / "process", ProcessExecutor(max_workers=2))
    assert len(local) == 2 * 180 and spread == local


def test_only_a_wholly_simulated_config_is_cpu_bound() -> None:
    config = matrix_config(questions=1)
    assert config.cpu_bound and config.simulated
    data = config.model_dump(mode="json")
    data["agents"]["weak"] = {"backend": "llm", "model": "openai/m", "base_url": "http://x/v1"}
    mixed = ConsensusConfig.model_validate(data)
    assert mixed.simulated and not mixed.cpu_bound  # its weak agents call a model
