"""Acceptance 2: the 164 canonical HumanEval solutions pass in the sandbox; a wrong one fails
with the failing assertion shown."""

from __future__ import annotations

import asyncio
import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from byzllm.sandbox import SandboxResult, run_tests

pytestmark = [pytest.mark.shared_data, pytest.mark.usefixtures("require_sandbox")]


def _problems(shared_data: Path) -> list[dict[str, Any]]:
    with gzip.open(shared_data / "HumanEval.jsonl.gz", "rt", encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


async def _run_all(problems: list[dict[str, Any]], concurrency: int) -> list[SandboxResult]:
    gate = asyncio.Semaphore(concurrency)

    async def one(problem: dict[str, Any]) -> SandboxResult:
        async with gate:
            return await run_tests(
                problem["prompt"] + problem["canonical_solution"],
                problem["test"],
                entry_point=problem["entry_point"],
            )

    return await asyncio.gather(*(one(p) for p in problems))


def test_every_canonical_solution_passes(shared_data: Path) -> None:
    problems = _problems(shared_data)
    assert len(problems) == 164
    results = asyncio.run(_run_all(problems, concurrency=4))
    failures = {
        p["task_id"]: f"{r.status}: {r.detail}"
        for p, r in zip(problems, results, strict=True)
        if r.status != "passed"
    }
    assert failures == {}


def test_a_wrong_solution_fails_with_the_assertion_shown(shared_data: Path) -> None:
    problem = _problems(shared_data)[0]  # has_close_elements
    wrong = problem["prompt"] + "    return False\n"
    result = asyncio.run(run_tests(wrong, problem["test"], entry_point=problem["entry_point"]))
    assert result.status == "failed"
    first_true = next(
        line.strip() for line in problem["test"].splitlines() if line.strip().endswith("== True")
    )
    test_line = problem["test"].splitlines().index("    " + first_true) + 1
    assert result.detail == f"AssertionError at tests line {test_line}: {first_true}"
