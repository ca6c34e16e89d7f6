"""A CodeGen run says when its Pass@1 was not measured on hidden tests: a LiveCodeBench file
whose private cases do not read (the official release's compressed pickles, never unpickled)
is tested on its public cases, the examples its statement shows every role."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from byzllm.agents.codegen import CoderView, Solution
from byzllm.envs.codegen import Team
from byzllm.experiments.codegen import CodeGenConfig, work
from byzllm.experiments.codegen import experiment as codegen_experiment
from byzllm.experiments.codegen.report import not_hidden
from byzllm.sandbox import sandbox_support
from byzllm.tasks import load_livecodebench

PUBLIC = [{"input": "1 2\n", "output": "3\n", "testtype": "stdin"}]


def _row(qid: str, private: object) -> dict[str, Any]:
    return {
        "question_id": qid,
        "question_content": "Print A+B.\n\nSample Input 1\n\n1 2\n\nSample Output 1\n\n3\n",
        "starter_code": "",
        "public_test_cases": json.dumps(PUBLIC),
        "private_test_cases": private,
        "metadata": "{}",
    }


class _Adder:
    name = "Adder"
    role = "Programmer"

    async def write(self, view: CoderView) -> Solution:
        code = "a, b = map(int, input().split())\nprint(a + b)\n"
        return Solution(coder=self.name, role=self.role, round=view.round, code=code)


@pytest.mark.skipif(not sandbox_support().get("available"), reason="the sandbox cannot run here")
def test_a_problem_tested_on_its_public_cases_is_recorded_and_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "lcb.jsonl"
    rows = [
        _row("abc/pickled", "eJzLSM3JyVcozy/KSQEAGgQEXQ=="),  # not JSON: never unpickled
        _row("abc/private", json.dumps([{"input": "5 7\n", "output": "12\n"}])),
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    monkeypatch.setattr(codegen_experiment, "_team", lambda *a, **k: Team(coders=[_Adder()]))
    records = []
    for problem in load_livecodebench(path):
        payload = {
            "config": CodeGenConfig(execution="sandbox").model_dump(),
            "problem": problem.model_dump(),
            "repeat": 0,
            "split": "test",
            "condition": "zero-shot",
            "monitors": None,
        }
        (record,) = asyncio.run(work(payload))
        records.append({"kind": record.kind, **record.model_dump()})
    assert [(r["hidden_from"], r["passed"]) for r in records] == [
        ("public", True),
        ("hidden", True),
    ]
    (line,) = not_hidden(records)
    assert line.startswith("warning: livecodebench: 1 of 2 test problems were tested on their ")


def test_problems_without_any_case_and_old_records_are_told_apart() -> None:
    rows = [
        {"source": "livecodebench", "problem_id": "a", "hidden_from": "none", "split": "test"},
        {"source": "livecodebench", "problem_id": "a", "hidden_from": "none", "split": "test"},
        {"source": "livecodebench", "problem_id": "b", "hidden_from": "hidden", "split": "test"},
        {"source": "humaneval", "problem_id": "c", "split": "test"},  # before it was recorded
        {"source": "livecodebench", "problem_id": "d", "hidden_from": "public", "split": "train"},
    ]
    assert not_hidden(rows) == [
        "warning: livecodebench: 1 of 2 test problems have no test case at all and count as failed"
    ]
