"""CodeGen's train / validation / test splits are disjoint and seeded (the rogue-agents paper,
§4.1: monitors are fitted and selected on problems they are never tested on)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from byzllm.errors import ConfigError, InputError
from byzllm.experiments.codegen import (
    CodeGenConfig,
    check_disjoint,
    codegen_splits,
    collect_units,
    load_split,
    run_units,
)
from byzllm.tasks import CodeProblem, CodeSplits, load_humaneval

HUMANEVAL = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "HumanEval.jsonl.gz"


def _problems(n: int) -> list[CodeProblem]:
    return [
        CodeProblem(
            id=f"Tiny/{k}",
            source="humaneval",
            prompt=f"def f_{k}(x):\n    pass\n",
            entry_point=f"f_{k}",
            reference=f"def f_{k}(x):\n    return x\n",
            hidden_test="def check(candidate):\n    assert True\n",
        )
        for k in range(n)
    ]


def _ids(problems: list[CodeProblem]) -> set[str]:
    return {p.id for p in problems}


def test_three_splits_are_disjoint_and_cover_every_problem() -> None:
    problems = _problems(164)
    splits = codegen_splits(problems, seed=0)
    train, validation, test = (_ids(splits.get(s)) for s in ("train", "validation", "test"))
    assert (len(train), len(validation), len(test)) == (80, 35, 49)
    assert not train & validation and not train & test and not validation & test
    assert train | validation | test == _ids(problems)


def test_splits_are_seeded() -> None:
    problems = _problems(164)
    a, b = codegen_splits(problems, seed=3), codegen_splits(problems, seed=3)
    assert a == b
    assert _ids(codegen_splits(problems, seed=4).test) != _ids(a.test)


def test_overlapping_splits_are_refused() -> None:
    problems = _problems(10)
    check_disjoint(CodeSplits(train=problems[:5], validation=problems[5:8], test=problems[8:]))
    leaky = CodeSplits(train=problems[:5], validation=problems[5:], test=problems[5:])
    with pytest.raises(InputError, match="validation and test splits share 5"):
        check_disjoint(leaky)
    with pytest.raises(InputError, match="twice"):
        check_disjoint(CodeSplits(train=problems[:2] * 2, validation=[], test=[]))


def test_a_problem_listed_under_two_ids_stays_in_one_split() -> None:
    # The same prompt under a second id (a file merged from two sources) was split like two
    # problems: with seed 1 one copy trained the monitors and the other tested them.
    problems = _problems(20)
    copy = problems[3].model_copy(update={"id": "Other/3", "prompt": "  " + problems[3].prompt})
    with_copy = [*problems, copy]
    for seed in range(12):
        splits = codegen_splits(with_copy, seed=seed)
        holding = [s for s in ("train", "validation", "test") if copy.id in _ids(splits.get(s))]
        assert holding and problems[3] in splits.get(holding[0])
        assert _ids(splits.train) | _ids(splits.validation) | _ids(splits.test) == _ids(with_copy)
    # Without copies the splits are what they were.
    plain = codegen_splits(problems, seed=1)
    assert [p.id for p in plain.test] == [f"Tiny/{k}" for k in (0, 5, 9, 11, 17, 19)]
    assert [p.id for p in plain.validation] == [f"Tiny/{k}" for k in (2, 4, 8, 18)]


def test_splits_sharing_a_prompt_under_two_ids_are_refused() -> None:
    problems = _problems(4)
    copy = problems[0].model_copy(update={"id": "Other/0"})
    with pytest.raises(InputError, match=r"train and test splits share 1 .*Tiny/0 \(the prompt"):
        check_disjoint(CodeSplits(train=problems[:2], validation=problems[2:], test=[copy]))


def test_without_held_out_test_all_problems_train_or_validate() -> None:
    splits = codegen_splits(_problems(164), seed=0, test_fraction=0.0)
    assert (len(splits.train), len(splits.validation), len(splits.test)) == (115, 49, 0)


def _config(tmp_path: Path, n: int) -> CodeGenConfig:
    """A simulated CodeGen config over a HumanEval-format file of ``n`` tiny problems."""
    rows = [
        {
            "task_id": p.id,
            "prompt": p.prompt,
            "canonical_solution": "    return x\n",
            "test": p.hidden_test,
            "entry_point": p.entry_point,
        }
        for p in _problems(n)
    ]
    path = tmp_path / "he.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return CodeGenConfig.model_validate(
        {"problems": str(path), "execution": "simulated", "conditions": ["zero-shot", "none"]}
    )


def test_collect_and_run_use_disjoint_problems(tmp_path: Path) -> None:
    cfg = _config(tmp_path, 40)
    tuned = {u.payload["problem"]["id"] for u in collect_units(cfg)}
    tested = {u.payload["problem"]["id"] for u in run_units(cfg)}
    assert len(tested) == 12 and len(tuned) == 28 and not tuned & tested
    assert _ids(load_split(cfg, "test")) == tested


def test_an_empty_split_is_a_clear_error(tmp_path: Path) -> None:
    # One problem leaves the test split empty (30% of 1 rounds to 0): the run would have
    # run nothing and said only "0 of 0 units done".
    with pytest.raises(ConfigError, match=r"the test split is empty: .* train 1, validation 0"):
        run_units(_config(tmp_path, 1))
    # Two problems leave validation empty: collecting would give nothing to select on.
    with pytest.raises(ConfigError, match="the validation split is empty"):
        collect_units(_config(tmp_path, 2))


@pytest.mark.skipif(not HUMANEVAL.is_file(), reason="HumanEval is not in ../shared/data")
def test_humaneval_splits_are_disjoint() -> None:
    problems = load_humaneval(HUMANEVAL)
    splits = codegen_splits(problems, seed=0)
    sizes = [len(splits.get(s)) for s in ("train", "validation", "test")]
    assert len(problems) == 164 and sizes == [80, 35, 49]
    check_disjoint(splits)
