"""A consensus data-set file is identified by the records it holds, not by its path alone."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from byzllm.errors import ConfigError
from byzllm.experiments.consensus.config import ConsensusConfig
from byzllm.experiments.consensus.experiment import consensus_unit, expand_units, run_in_memory
from byzllm.experiments.consensus.setup import load_dataset, ood_pool
from byzllm.runs import load_config, run_units
from byzllm.tasks import dataset_digest


def _write(path: Path, answers: list[int]) -> Path:
    rows = [{"question": f"Question {i}?", "answer": f"#### {a}"} for i, a in enumerate(answers)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _config(path: Path, n: int = 2) -> ConsensusConfig:
    return load_config(
        None,
        ConsensusConfig,
        {
            "protocols": ["sac"],
            "topologies": ["complete"],
            "T": [1],
            "dataset": {"name": "gsm8k", "path": str(path), "n": n},
        },
    )


def test_units_of_a_data_set_file_change_with_the_records_it_holds(tmp_path: Path) -> None:
    """A unit named the file's path only: after an answer was edited, a rerun found every
    unit done, and the report gave the old answers' results under the edited file."""
    path = _write(tmp_path / "q.jsonl", [1, 2, 3])
    first = _config(path)
    assert first.dataset.digest == dataset_digest("gsm8k", path) != ""
    assert {u.payload["dataset"]["digest"] for u in expand_units(first)} == {first.dataset.digest}
    units = {u.id for u in expand_units(first)}
    _write(path, [1, 2, 30])
    edited = _config(path)
    assert edited.dataset.digest != first.dataset.digest
    # Every unit is new: the replay adversary draws from the file's other questions too.
    assert units.isdisjoint(u.id for u in expand_units(edited))
    # The same records written otherwise: the same units.
    path.write_text(
        "\n\n".join(
            json.dumps({"answer": f"#### {a}", "question": f"Question {i}?"}, indent=None)
            for i, a in enumerate([1, 2, 30])
        ),
        encoding="utf-8",
    )
    assert {u.id for u in expand_units(_config(path))} == {u.id for u in expand_units(edited)}


def test_a_synthetic_data_set_has_no_digest() -> None:
    config = ConsensusConfig.model_validate({"dataset": {"n": 2, "digest": "0123456789abcdef"}})
    assert config.dataset.digest == ""
    # Left out of the units' payloads at its default: a synthetic run's unit ids hold.
    assert all("digest" not in u.payload["dataset"] for u in expand_units(config))


def test_a_process_reads_an_edited_data_set_again(tmp_path: Path) -> None:
    """A process kept a file's questions by its path: a second run after an edit (``sim
    compare``, a notebook) ran the old answers."""
    path = _write(tmp_path / "q.jsonl", [1, 2])
    before = run_in_memory(_config(path))
    _write(path, [10, 20])
    config = _config(path)
    after = run_in_memory(config)
    assert [q["trace"]["truth"] for q in before + after] == ["1", "2", "10", "20"]
    assert [t.answer for t in load_dataset(config.dataset)] == ["10", "20"]
    assert [t.answer for t in ood_pool(config.dataset)] == ["10", "20"]


def test_a_recorded_config_whose_data_changed_is_refused(tmp_path: Path) -> None:
    """Validating a run's recorded config again (``sim fit`` reads its questions' truths,
    ``sim compare`` reruns it) after the file was edited would pair the run's records with
    other answers; a unit made before the edit would run the new ones."""
    path = _write(tmp_path / "q.jsonl", [1, 2, 3])
    config = _config(path)
    recorded = config.model_dump(mode="json")
    assert load_config(None, ConsensusConfig, recorded).dataset.digest == config.dataset.digest
    units = expand_units(config)
    _write(path, [1, 2, 4])
    with pytest.raises(ConfigError, match=r"dataset\.digest: .*q\.jsonl no longer holds the data"):
        load_config(None, ConsensusConfig, recorded)
    summary = asyncio.run(
        run_units(tmp_path / "run", units, consensus_unit, config=config, progress=False)
    )
    assert summary.done == 0 and len(summary.failures) == 2
    assert all("no longer holds the data" in f.error for f in summary.failures)


def test_a_data_set_file_that_does_not_read_is_refused_when_loaded(tmp_path: Path) -> None:
    # The loaders' own one-line error, naming the line, when the run loads the file.
    path = tmp_path / "q.jsonl"
    path.write_text('{"question": "Q", "answer": "#### 1"}\n{not json\n')
    config = _config(path, n=1)
    assert config.dataset.digest == ""
    with pytest.raises(ValueError, match=r"q\.jsonl:2: not valid JSON"):
        expand_units(config)
