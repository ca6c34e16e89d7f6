"""Simulated CodeGen roles: named parameters, the fault signal, real wrong code, and reviewers
that act on what code observably does, never on whether it is correct."""

from __future__ import annotations

import ast
import asyncio
import gzip
import inspect
import json
import math
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from byzllm.agents._params import parameter_rows, parameter_source
from byzllm.agents.codegen import (
    CodeGenSimParams,
    LLMJudge,
    LLMTester,
    ReviewView,
    SimCode,
    SimulatedJudge,
    SimulatedTester,
    Solution,
    bug_hits,
    visible_examples,
    wrong_variant,
)
from byzllm.agents.codegen import (
    TestResult as Outcome,
)
from byzllm.agents.codegen import _sim as sim_module
from byzllm.cli import app

PROMPT = (
    "def double(x: int) -> int:\n"
    '    """Return twice x.\n'
    "    >>> double(2)\n"
    "    4\n"
    "    double(5) == 10\n"
    "    double(y) == 2 * y\n"
    '    """\n'
)
PASS = Outcome(passed=2, failed=0)
FAIL = Outcome(passed=1, failed=1)
VISIBLE = (PASS, FAIL, PASS, FAIL)


def _solutions(sim: list[SimCode | None]) -> tuple[Solution, ...]:
    return tuple(
        Solution(coder=f"c{i}", role="Programmer", round=1, code="x", sim=s)
        for i, s in enumerate(sim)
    )


def _view(key: str = "k", sim: list[SimCode | None] | None = None) -> ReviewView:
    return ReviewView(
        problem_id="p",
        prompt=PROMPT,
        entry_point="double",
        round=2,
        solutions=_solutions(sim or [None] * 4),
        visible=VISIBLE,
        key=key,
    )


def _top(judge: SimulatedJudge, key: str) -> list[float]:
    feedback = asyncio.run(judge.review(_view(key)))
    return [math.exp(d[0][1]) for d in feedback.distributions]


def test_every_parameter_has_meaning_and_source() -> None:
    rows = parameter_rows(CodeGenSimParams())
    assert rows and all(r.meaning and r.source for r in rows)
    for r in rows:
        assert r.source.startswith("assumed: ") or "paper" in r.source, r


def test_sim_show_lists_every_codegen_parameter_with_its_source() -> None:
    result = CliRunner().invoke(app, ["sim", "show", "--domain", "codegen", "--json"])
    assert result.exit_code == 0, result.output
    tables = json.loads(result.output)["tables"]
    (rows,) = tables.values()
    assert [r["parameter"] for r in rows] == list(CodeGenSimParams.model_fields)
    assert all(r["source"] and r["meaning"] for r in rows)
    everything = CliRunner().invoke(app, ["sim", "show", "--json"])
    assert any(t.startswith("codegen") for t in json.loads(everything.output)["tables"])


def test_the_documented_parameter_table_matches_the_code() -> None:
    # docs/codegen.md copies `byzllm sim show --domain codegen`; it must not drift.
    docs = Path(__file__).resolve().parents[3] / "docs" / "codegen.md"
    lines = docs.read_text(encoding="utf-8").splitlines()
    start = lines.index("| parameter | default | meaning | source |") + 2
    table = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        table.append(line)
    expected = [
        f"| `{r.name}` | {r.value} | {r.meaning} | {r.source} |"
        for r in parameter_rows(CodeGenSimParams())
    ]
    assert table == expected


@pytest.mark.shared_data
def test_the_tests_per_round_source_says_what_humaneval_shows(shared_data: Path) -> None:
    # The source once said the cap of 5 "keeps them all": 10 HumanEval prompts show 6 to 8
    # examples, of which the tester writes 5.
    with gzip.open(shared_data / "HumanEval.jsonl.gz", "rt", encoding="utf-8") as lines:
        problems = [json.loads(line) for line in lines if line.strip()]
    cap = CodeGenSimParams().tests_per_round
    shown = [len(visible_examples(p["prompt"], p["entry_point"])) for p in problems]
    over = sum(n > cap for n in shown)
    source = parameter_source(CodeGenSimParams, "tests_per_round")
    assert f"{sum(shown) / len(shown):.1f} examples on average" in source
    assert f"the {over} of {len(problems)} that show more than {cap}" in source


def test_the_top_k_source_compares_it_with_the_llm_reviewers() -> None:
    # The source once called 5 "the top-k size of common LLM APIs"; the LLM judge and tester
    # ask for 10 by default (the paper's k), which the simulated ones do not match.
    asked = {
        inspect.signature(role).parameters["top_logprobs"].default for role in (LLMJudge, LLMTester)
    }
    assert asked == {10} and CodeGenSimParams().top_k < 10
    source = parameter_source(CodeGenSimParams, "top_k")
    assert "fewer than the 10 the LLM judge and tester ask for" in source
    assert "§2, footnote 2" in source


def test_faulty_judge_contradicts_the_evidence_and_is_less_sure() -> None:
    faulty = SimulatedJudge(CodeGenSimParams(judge_error_rate=1.0, confidence_jitter=0.0))
    clean = SimulatedJudge(
        CodeGenSimParams(judge_error_rate=0.0, verdict_noise=0.0, confidence_jitter=0.0)
    )
    assert asyncio.run(faulty.review(_view())).verdicts == [False, True, False, True]
    assert asyncio.run(clean.review(_view())).verdicts == [True, False, True, False]
    assert max(_top(faulty, "k")) < min(_top(clean, "k"))


def test_a_faulty_judge_picks_a_solution_it_calls_correct_against_the_evidence() -> None:
    # The pick follows the turn's own verdicts: a faulty turn names as best one of the
    # solutions it calls CORRECT, which are those failing the examples (VISIBLE: 2 and 4).
    faulty = SimulatedJudge(CodeGenSimParams(judge_error_rate=1.0))
    for key in ("a", "b", "c", "d", "e", "f"):
        feedback = asyncio.run(faulty.review(_view(key)))
        assert feedback.pick in (2, 4)
        assert feedback.pick is not None and feedback.verdicts[feedback.pick - 1] is True


def test_verdict_noise_flips_verdicts_against_the_evidence() -> None:
    noisy = SimulatedJudge(CodeGenSimParams(judge_error_rate=0.0, verdict_noise=1.0))
    assert asyncio.run(noisy.review(_view())).verdicts == [False, True, False, True]


def test_without_examples_the_judge_uses_its_prior() -> None:
    view = _view().model_copy(update={"visible": (Outcome(status="no_tests"),) * 4})
    trusting = CodeGenSimParams(judge_error_rate=0.0, verdict_noise=0.0, unseen_correct_rate=1.0)
    doubting = trusting.model_copy(update={"unseen_correct_rate": 0.0})
    assert asyncio.run(SimulatedJudge(trusting).review(view)).verdicts == [True] * 4
    assert asyncio.run(SimulatedJudge(doubting).review(view)).verdicts == [False] * 4


def test_fault_signal_zero_leaves_no_trace() -> None:
    silent = dict(fault_signal=0.0, verdict_noise=0.0)
    faulty = SimulatedJudge(CodeGenSimParams(judge_error_rate=1.0, **silent))
    clean = SimulatedJudge(CodeGenSimParams(judge_error_rate=0.0, **silent))
    for key in ("a", "b", "c"):
        assert _top(faulty, key) == _top(clean, key)


@pytest.mark.parametrize("key", ["a", "b", "c", "d"])
def test_reviewers_ignore_the_coders_accounts(key: str) -> None:
    # The same code and behaviour, whatever the (hidden) accounts say: identical reviews.
    right, wrong = SimCode(correct=True), SimCode(correct=False, bug="negate")
    accounts: list[list[SimCode | None]] = [[None] * 4, [right] * 4, [wrong] * 4]
    judge, tester = SimulatedJudge(), SimulatedTester(CodeGenSimParams(tester_error_rate=0.5))
    reviews = [asyncio.run(judge.review(_view(key, a))).model_dump() for a in accounts]
    suites = [asyncio.run(tester.write_tests(_view(key, a))).model_dump() for a in accounts]
    assert reviews[0] == reviews[1] == reviews[2]
    assert suites[0] == suites[1] == suites[2]


def test_judge_and_tester_never_read_correctness() -> None:
    # By introspection: no attribute of the reviewers' code names a correctness field.
    forbidden = {"sim", "correct", "bug", "coverage", "reference", "hidden_test", "passed_hidden"}
    for cls in (SimulatedJudge, SimulatedTester):
        tree = ast.parse(inspect.getsource(cls))
        read = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
        assert not read & forbidden, (cls.__name__, read & forbidden)
    # ... and the helpers they call neither.
    for helper in (sim_module._observed_ok, sim_module._confidence, sim_module._distribution):
        tree = ast.parse(inspect.getsource(helper))
        assert not {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)} & forbidden


def test_tester_writes_real_tests_from_the_prompts_examples() -> None:
    clean = SimulatedTester(CodeGenSimParams(tester_error_rate=0.0, unsound_test_rate=0.0))
    suite = asyncio.run(clean.write_tests(_view()))
    assert sorted(suite.tests) == ["assert double(2) == 4", "assert double(5) == 10"]
    assert len(suite.distributions) == 2 and suite.sim is not None and all(suite.sim.sound)
    unsound = SimulatedTester(CodeGenSimParams(tester_error_rate=0.0, unsound_test_rate=1.0))
    bad = asyncio.run(unsound.write_tests(_view()))
    assert sorted(bad.tests) == ["assert double(2) == 5", "assert double(5) == 11"]
    assert bad.sim is not None and not any(bad.sim.sound)
    blind = _view().model_copy(update={"prompt": "def double(x):\n    pass\n"})
    assert asyncio.run(clean.write_tests(blind)).tests == []


def test_visible_examples_keep_literal_calls_only() -> None:
    examples = visible_examples(PROMPT, "double")
    assert [(e.call, e.expected) for e in examples] == [("double(2)", "4"), ("double(5)", "10")]
    assert visible_examples(PROMPT, "other") == [] and visible_examples(PROMPT, None) == []
    inline = 'def f(s):\n    """f("ab") ➞ "ba"\n    f("a") => "a".\n    """\n'
    assert [e.test() for e in visible_examples(inline, "f")] == [
        'assert f("ab") == "ba"',
        'assert f("a") == "a"',
    ]


def _load(reference: str, bug: str, coverage: float) -> Any:
    namespace: dict[str, object] = {}
    # Plain Python of our own making (no model output): safe to run in-process here.
    exec(compile(wrong_variant(reference, "f", bug, coverage), "<variant>", "exec"), namespace)
    return namespace["f"]


def test_wrong_variant_changes_every_return_value_at_full_coverage() -> None:
    reference = "def f(x):\n    return x * 2\n"
    for bug in ("off_by_one", "truncate", "negate"):
        func = _load(reference, bug, 1.0)
        assert callable(func) and all(func(x) != 2 * x for x in range(-3, 4))


def test_wrong_variant_of_a_solution_method_wraps_the_method() -> None:
    # A method of `class Solution` was wrapped as a function: `_byz_reference_f = f` raised
    # NameError when the code loaded, so every such wrong solution crashed on every test.
    reference = "class Solution:\n    def f(self, x: int) -> int:\n        return x * 2\n"
    namespace: dict[str, Any] = {}
    # Plain Python of our own making (no model output): safe to run in-process here.
    exec(compile(wrong_variant(reference, "f", "off_by_one", 0.5), "<variant>", "exec"), namespace)
    solution = namespace["Solution"]()
    hits = [bug_hits("off_by_one", (x,), {}, 0.5) for x in range(200)]
    assert [solution.f(x) != 2 * x for x in range(200)] == hits  # the arguments after self
    assert 60 < sum(hits) < 140 and solution.f(x=3) in (6, 7)


def test_wrong_variant_hits_exactly_the_inputs_bug_hits_picks() -> None:
    reference = "def f(x):\n    return x * 2\n"
    func = _load(reference, "off_by_one", 0.5)
    hits = [bug_hits("off_by_one", (x,), {}, 0.5) for x in range(200)]
    assert [func(x) != 2 * x for x in range(200)] == hits
    assert 60 < sum(hits) < 140  # about half of the inputs
    assert not any(_load(reference, "negate", 0.0)(x) != 2 * x for x in range(50))
