"""A CodeGen problem file is identified by the problems it holds, not by its path alone."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from byzllm.errors import ConfigError, InputError
from byzllm.experiments.codegen import CodeGenConfig, collect_units, run_units
from byzllm.runs import config_differences, load_config
from byzllm.tasks import problem_file_digest


def _config(problems: Path, **changes: object) -> CodeGenConfig:
    data = {"problems": str(problems), "execution": "simulated", "conditions": ["zero-shot"]}
    return load_config(None, CodeGenConfig, {**data, **changes})


def _edit_first_test(problems: Path) -> None:
    rows = [json.loads(line) for line in problems.read_text().splitlines()]
    rows[0]["test"] += "    assert candidate(0) is not None\n"
    problems.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def test_the_config_records_the_digest_of_each_problem_file(
    tmp_path: Path, humaneval_file: Callable[..., Path]
) -> None:
    problems = humaneval_file(tmp_path / "he.jsonl", 10)
    lcb = tmp_path / "lcb.jsonl"
    lcb.write_text(json.dumps({"question_id": "q1", "question_content": "Print 1."}) + "\n")
    config = _config(problems, livecodebench=str(lcb))
    assert config.problems_digest == problem_file_digest(problems) != ""
    assert config.livecodebench_digest == problem_file_digest(lcb) != ""
    assert CodeGenConfig().problems_digest == CodeGenConfig().livecodebench_digest == ""


def test_an_edited_problem_file_is_another_config_with_the_same_unit_ids_for_the_rest(
    tmp_path: Path, humaneval_file: Callable[..., Path]
) -> None:
    """The units carry their problems (an edited problem is a new unit) and leave the digest
    out: their ids are those of the units before configs recorded it."""
    problems = humaneval_file(tmp_path / "he.jsonl", 10)
    first = _config(problems)
    recorded = first.model_dump(mode="json")
    units = run_units(first) + collect_units(first)
    assert all("problems_digest" not in u.payload["config"] for u in units)
    _edit_first_test(problems)
    edited = _config(problems)
    assert config_differences(recorded, edited) == ["problems_digest"]
    changed = {u.id for u in units} - {u.id for u in run_units(edited) + collect_units(edited)}
    assert [u.payload["problem"]["id"] for u in units if u.id in changed] == ["HumanEval/0"]


def test_a_recorded_config_whose_problems_changed_is_refused(
    tmp_path: Path, humaneval_file: Callable[..., Path]
) -> None:
    problems = humaneval_file(tmp_path / "he.jsonl", 10)
    recorded = _config(problems).model_dump(mode="json")
    assert load_config(None, CodeGenConfig, recorded).problems_digest == recorded["problems_digest"]
    _edit_first_test(problems)
    with pytest.raises(
        ConfigError, match=r"problems_digest: .*he\.jsonl no longer holds the problems"
    ):
        load_config(None, CodeGenConfig, recorded)


def test_a_problem_file_that_does_not_read_is_refused_when_loaded(
    tmp_path: Path, humaneval_file: Callable[..., Path]
) -> None:
    # The loaders' own one-line error, naming the line, when the run loads the file.
    problems = humaneval_file(tmp_path / "he.jsonl", 1)
    problems.write_text(problems.read_text() + "{not json\n")
    config = _config(problems)
    assert config.problems_digest == ""
    with pytest.raises(InputError, match=r"he\.jsonl:2: not valid JSON"):
        run_units(config)
