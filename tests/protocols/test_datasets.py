"""Consensus on the public data sets (MATH-500, GSM8K, Commonsense170k) with simulated agents."""

from __future__ import annotations

from pathlib import Path

import pytest

from byzllm.experiments.consensus.config import ConsensusConfig
from byzllm.experiments.consensus.experiment import consensus_unit, expand_units
from byzllm.experiments.consensus.report import summarize
from byzllm.runs import Store, run_units


@pytest.mark.shared_data
@pytest.mark.parametrize(
    ("name", "file", "extra"),
    [
        ("math500", "math500.jsonl", {"level": 4}),
        ("gsm8k", "gsm8k_test.jsonl", {}),
        ("commonsense", "commonsense/boolq.json", {}),
        ("commonsense", "commonsense/winogrande.json", {}),
    ],
)
async def test_sac_runs_on_each_data_set(
    shared_data: Path, tmp_path: Path, name: str, file: str, extra: dict[str, object]
) -> None:
    config = ConsensusConfig.model_validate(
        {
            "protocols": ["sac", "cp-wbft"],
            "topologies": ["merg"],
            "T": [2],
            "dataset": {"name": name, "path": str(shared_data / file), "n": 3, **extra},
        }
    )
    summary = await run_units(tmp_path / "run", expand_units(config), consensus_unit, config=config)
    assert summary.complete, summary.failures
    with Store.open(tmp_path / "run") as store:
        results = summarize(store.records("consensus_question"))
    assert {meta["protocol"] for meta, _ in results} == {"sac", "cp-wbft"}
    for _, metrics in results:
        assert metrics.n_questions == 3 and 0.0 <= metrics.IAA <= 1.0


def test_file_datasets_need_a_path() -> None:
    with pytest.raises(ValueError, match="needs a path"):
        ConsensusConfig.model_validate({"dataset": {"name": "gsm8k"}})


@pytest.mark.parametrize("name", ["synthetic", "gsm8k", "commonsense"])
def test_a_level_is_refused_where_there_are_no_levels(tmp_path: Path, name: str) -> None:
    # The level filter is MATH-500's: a run of another data set with `level: 4` ran every
    # question of the file as if it had been filtered.
    data = tmp_path / "data.json"
    data.write_text("[]\n")  # the path must exist; what it holds is read later
    path = {} if name == "synthetic" else {"path": str(data)}
    with pytest.raises(ValueError, match=f"level filters MATH-500 only; dataset '{name}'"):
        ConsensusConfig.model_validate({"dataset": {"name": name, "level": 4, **path}})
