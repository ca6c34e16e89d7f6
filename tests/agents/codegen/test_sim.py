"""Simulated CodeGen roles: named parameters, the fault signal, real wrong code."""

from __future__ import annotations

import asyncio
import math

from byzllm.agents._params import parameter_rows
from byzllm.agents.codegen import (
    CodeGenSimParams,
    ReviewView,
    SimCode,
    SimulatedJudge,
    Solution,
    wrong_variant,
)

SOLUTIONS = tuple(
    Solution(coder=f"c{i}", role="Programmer", round=1, sim=SimCode(correct=i % 2 == 0))
    for i in range(4)
)


def _top(judge: SimulatedJudge, key: str) -> list[float]:
    view = ReviewView(problem_id="p", prompt="", round=2, solutions=SOLUTIONS, key=key)
    feedback = asyncio.run(judge.review(view))
    return [math.exp(d[0][1]) for d in feedback.distributions]


def test_every_parameter_has_meaning_and_source() -> None:
    rows = parameter_rows(CodeGenSimParams())
    assert rows and all(r.meaning and r.source for r in rows)


def test_faulty_judge_inverts_and_is_less_sure() -> None:
    faulty = SimulatedJudge(CodeGenSimParams(judge_error_rate=1.0, confidence_jitter=0.0))
    clean = SimulatedJudge(
        CodeGenSimParams(judge_error_rate=0.0, verdict_noise=0.0, confidence_jitter=0.0)
    )
    view = ReviewView(problem_id="p", prompt="", round=2, solutions=SOLUTIONS, key="k")
    assert asyncio.run(faulty.review(view)).verdicts == [False, True, False, True]
    assert asyncio.run(clean.review(view)).verdicts == [True, False, True, False]
    assert max(_top(faulty, "k")) < min(_top(clean, "k"))


def test_fault_signal_zero_leaves_no_trace() -> None:
    silent = dict(fault_signal=0.0, verdict_noise=0.0)
    faulty = SimulatedJudge(CodeGenSimParams(judge_error_rate=1.0, **silent))
    clean = SimulatedJudge(CodeGenSimParams(judge_error_rate=0.0, **silent))
    for key in ("a", "b", "c"):
        assert _top(faulty, key) == _top(clean, key)


def test_wrong_variant_changes_every_return_value() -> None:
    reference = "def f(x):\n    return x * 2\n"
    for bug in ("off_by_one", "truncate", "negate"):
        namespace: dict[str, object] = {}
        # Plain Python of our own making (no model output): safe to run in-process here.
        exec(compile(wrong_variant(reference, "f", bug), "<variant>", "exec"), namespace)
        func = namespace["f"]
        assert callable(func) and all(func(x) != 2 * x for x in range(-3, 4))
