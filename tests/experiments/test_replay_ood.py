"""The replay adversary of a consensus run replays answers of the run's own data set.

Appendix B.4: the adversary replays a cached weak-model answer to an out-of-distribution
question, indistinguishable from an honest answer at the message level. On a true/false data
set it must answer true/false (not a synthetic arithmetic result), on multiple choice an option
label of the question, on arithmetic a number.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from byzllm.agents.consensus import CallContext, ConsensusAgent
from byzllm.experiments.consensus.config import Composition, ConsensusConfig, DatasetConfig
from byzllm.experiments.consensus.experiment import consensus_unit, expand_units
from byzllm.experiments.consensus.setup import (
    OOD_SEED_OFFSET,
    build_agents,
    build_graph,
    load_dataset,
    ood_pool,
    replay_pool,
)
from byzllm.runs import Store, run_units
from byzllm.tasks import Task, load_gsm8k, synthetic_tasks

REPLAY = Composition(strong=4, weak=2, byzantine=1, attack="replay")


def _boolq(i: int) -> dict[str, str]:
    answer = "true" if i % 3 else "false"
    return {
        "instruction": f"Please answer the following question with true or false, question: "
        f"is statement number {i} right?\n\nAnswer format: true/false",
        "input": "",
        "output": f"the correct answer is {answer}",
        "answer": answer,
    }


def _labelled(i: int, prefix: str, n: int, stem: str) -> dict[str, str]:
    answer = f"{prefix}{i % n + 1}"
    options = " ".join(f"{prefix.title()}{k}: choice {k} of {i}" for k in range(1, n + 1))
    labels = "/".join(f"{prefix}{k}" for k in range(1, n + 1))
    return {
        "instruction": f"Please choose the correct answer to {stem} {i}.\n\n{options} "
        f"Answer format: {labels}",
        "input": "",
        "output": f"the correct answer is {answer}",
        "answer": answer,
    }


def _commonsense_folder(root: Path) -> Path:
    folder = root / "commonsense"
    folder.mkdir()
    files = {
        "boolq": [_boolq(i) for i in range(20)],
        "winogrande": [_labelled(i, "option", 2, "sentence") for i in range(12)],
        "piqa": [_labelled(i, "solution", 2, "goal") for i in range(12)],
        # Four answer1..4 questions and a single answer1..5 one: the only one of its format.
        "arc": [_labelled(i, "answer", 4, "question") for i in range(4)]
        + [_labelled(4, "answer", 5, "question")],
    }
    for name, rows in files.items():
        (folder / f"{name}.json").write_text(json.dumps(rows), encoding="utf-8")
    return folder


def _gsm8k(root: Path) -> Path:
    path = root / "gsm8k.jsonl"
    rows = [
        {
            "question": f"Tom has {i} apples and buys 3 more. How many?",
            "answer": f"...\n#### {i + 3}",
        }
        for i in range(15)
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    return path


def _math500(root: Path) -> Path:
    path = root / "math500.jsonl"
    rows = [
        {
            "problem": f"Compute $\\frac{{{i}}}{{{i + 1}}} + 1$.",
            "solution": "...",
            "answer": f"\\frac{{{2 * i + 1}}}{{{i + 1}}}",
            "subject": "Algebra",
            "level": 4,
            "unique_id": f"test/algebra/{i}.json",
        }
        for i in range(1, 13)
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    return path


def _in_format(task: Task, answer: str | None) -> bool:
    if answer is None:
        return False
    if task.kind == "boolean":
        return answer in ("true", "false")
    if task.kind == "choice":
        return answer in task.choices
    if task.kind == "number":
        return re.fullmatch(r"-?\d+(\.\d+)?(/\d+)?", answer) is not None
    return bool(answer.strip())


def _adversary(config: ConsensusConfig, seed: int = 0) -> ConsensusAgent:
    graph = build_graph("complete", REPLAY.n)
    agents = build_agents(graph, REPLAY, config, seed)
    return next(a for a in agents if not a.honest)


async def _replayed(config: ConsensusConfig, seed: int = 0) -> dict[str, str | None]:
    adversary = _adversary(config, seed)
    out = {}
    for task in load_dataset(config.dataset):
        response = await adversary.public(task, None, CallContext())
        out[task.id] = response.answer
    return out


def _check_replays(config: ConsensusConfig, answers: dict[str, str | None]) -> None:
    for task in load_dataset(config.dataset):
        answer = answers[task.id]
        # In the question's format; right or wrong for it: the adversary does not know.
        assert _in_format(task, answer), (task.id, answer)


@pytest.fixture
def data(tmp_path: Path) -> dict[str, dict[str, Any]]:
    return {
        "commonsense": {"name": "commonsense", "path": str(_commonsense_folder(tmp_path))},
        "gsm8k": {"name": "gsm8k", "path": str(_gsm8k(tmp_path))},
        "math500": {"name": "math500", "path": str(_math500(tmp_path)), "level": 4},
    }


@pytest.mark.parametrize("name", ["commonsense", "gsm8k", "math500"])
async def test_replayed_answers_have_the_datasets_format(
    data: dict[str, dict[str, Any]], name: str
) -> None:
    config = ConsensusConfig(dataset=DatasetConfig.model_validate({**data[name], "n": 10}))
    evaluated = load_dataset(config.dataset)
    pool = ood_pool(config.dataset)
    # The pool is the data set's other questions: never synthetic arithmetic, never the
    # evaluated questions where others of the same format exist.
    assert all(t.source != "synthetic" for t in pool)
    assert {t.id for t in pool}.isdisjoint({t.id for t in evaluated} - {"arc/4"})
    for seed in (0, 1):
        answers = await _replayed(config, seed)
        _check_replays(config, answers)
        assert await _replayed(config, seed) == answers  # reproducible


async def test_replay_pool_per_format_when_every_question_is_evaluated(
    data: dict[str, dict[str, Any]],
) -> None:
    config = ConsensusConfig(dataset=DatasetConfig.model_validate({**data["commonsense"], "n": 49}))
    evaluated = load_dataset(config.dataset)
    assert len(evaluated) == 49  # every question of the folder
    assert {t.id for t in ood_pool(config.dataset)} == {t.id for t in evaluated}
    adversary = _adversary(config)
    answers = await _replayed(config)
    _check_replays(config, answers)
    replayed_from = adversary.describe()["replayed_from"]  # a fresh adversary: nothing yet
    assert replayed_from == {}
    for task in evaluated:
        await adversary.public(task, None, CallContext())
    replayed_from = adversary.describe()["replayed_from"]
    for task in evaluated:
        source = replayed_from[task.id]
        if task.id == "arc/4":  # the only answer1..5 question: the documented fallback
            assert source is None
            continue
        assert source is not None and source != task.id
        assert source.split("/")[0] == task.id.split("/")[0]  # same sub-data set


@pytest.mark.parametrize("n", [6, 15])
def test_a_gsm8k_run_reads_its_file_on_demand_with_the_eager_questions(
    tmp_path: Path, n: int
) -> None:
    """The run's questions and replay pool from a GSM8K file read on demand are those of the
    eager loader and its grouping (its other questions; all of them when all are asked)."""
    path = _gsm8k(tmp_path)
    config = DatasetConfig(name="gsm8k", path=str(path), n=n, seed=2)
    evaluated = load_dataset(config)
    assert evaluated == load_gsm8k(path, k=n, seed=2)
    everything = load_gsm8k(path)
    unseen = [t for t in everything if t not in evaluated]
    assert ood_pool(config) == (unseen or everything)
    assert isinstance(replay_pool(config)[0], Task)


def test_synthetic_runs_keep_a_synthetic_pool() -> None:
    config = DatasetConfig(name="synthetic", n=5, seed=3)
    pool = ood_pool(config)
    assert pool == synthetic_tasks(50, seed=3 + OOD_SEED_OFFSET)
    assert {t.id for t in pool}.isdisjoint({t.id for t in load_dataset(config)})


async def test_a_commonsense_run_stores_in_format_replays(
    data: dict[str, dict[str, Any]], tmp_path: Path
) -> None:
    config = ConsensusConfig.model_validate(
        {
            "protocols": ["sac"],
            "topologies": ["complete"],
            "T": [1],
            "dataset": {**data["commonsense"], "n": 6, "seed": 2},
        }
    )
    rows: list[list[dict[str, Any]]] = []
    for run in ("a", "b"):
        summary = await run_units(
            tmp_path / run, expand_units(config), consensus_unit, config=config
        )
        assert summary.complete, summary.failures
        with Store.open(tmp_path / run) as store:
            rows.append(
                sorted(
                    (
                        {k: r[k] for k in ("task_id", "round", "agent", "answer")}
                        for r in store.records("consensus_round")
                        if r["group"] == "byzantine"
                    ),
                    key=lambda r: (r["task_id"], r["round"]),
                )
            )
    assert rows[0] == rows[1] and rows[0]  # reproducible across runs
    tasks = {t.id: t for t in load_dataset(config.dataset)}
    for row in rows[0]:
        task = tasks[row["task_id"]]
        assert _in_format(task, row["answer"])


@pytest.mark.shared_data
@pytest.mark.parametrize(
    "file",
    [
        "boolq.json",
        "winogrande.json",
        "piqa.json",
        "social_i_qa.json",
        "ARC-Challenge.json",
        "openbookqa.json",
        ".",
    ],
)
async def test_replay_on_the_real_commonsense_files(shared_data: Path, file: str) -> None:
    path = shared_data / "commonsense" / file
    config = ConsensusConfig(
        dataset=DatasetConfig(name="commonsense", path=str(path), n=30, seed=1)
    )
    answers = await _replayed(config)
    _check_replays(config, answers)
    assert await _replayed(config) == answers
