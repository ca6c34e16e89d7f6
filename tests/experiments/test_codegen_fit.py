"""`sim fit` on CodeGen runs: the estimators on hand-made records, recovery of the parameters
that generated a simulated run, the profile in a config (the rogue-agents paper's CodeGen
debate, §4.1, App. C).

Stated tolerances (one simulated run of 140 debated problems, 4 coders, 3 rounds): the
rates read off every reply or rating (``no_code_rate``, ``syntax_error_rate``,
``rating_noise``) within 0.04; the judge's mixture (``judge_error_rate``,
``verdict_noise``) within 0.05; the tester's (``tester_error_rate`` within 0.1,
``unsound_test_rate`` within 0.05: suites of one to five tests); the confidences within
0.03 (``confidence_jitter`` 0.06, ``fault_signal`` 0.15: a shift of 0.1 in probability);
``bug_coverage`` within 0.1; ``unseen_correct_rate`` within 0.25 (about 15% of the prompts
have no example); the coders' ``coder_skill`` within 0.5 and ``difficulty_sd`` within 0.7
(560 round-1 solutions, a problem's wrong solutions sharing their hashed failures:
``docs/codegen.md``); ``top_k`` (the most alternatives a position reports) exactly;
``skill_spread`` is only checked to be fitted and in range.
"""

from __future__ import annotations

import asyncio
import json
import math
from pathlib import Path
from typing import Any

import pytest
import yaml

from byzllm.agents.codegen import CodeGenSimParams
from byzllm.errors import ConfigError, InputError
from byzllm.experiments._fitting import Estimates, FittedProfile, sim_profile
from byzllm.experiments.codegen import (
    CodeGenConfig,
    fit_codegen,
    run_in_memory,
    run_units,
)
from byzllm.experiments.codegen.fit import (
    CheckedSuite,
    FirstSolution,
    JudgeTurn,
    collect_evidence,
    fit_bug_coverage,
    fit_judge,
    fit_tester,
    unsound_tests,
)
from byzllm.runs import load_config

PROMPT = 'def f(x: int) -> int:\n    """Add one.\n    >>> f(1)\n    2\n    f(3) == 4\n    """\n'


def test_unsound_tests_compare_with_the_prompts_examples() -> None:
    tests = [
        "assert f(1) == 2",  # the example's value: sound
        "assert f(1) == 3",  # another value: unsound
        "assert f( 3 ) == 4",  # the inline example, spaced differently: sound
        "assert f(9) == 10",  # no such example: not checked
        "assert g(1) == 2",  # another function: not checked
        "assert f(1) != 2",  # not an equality: not checked
        "this is not python",
    ]
    assert unsound_tests(tests, PROMPT, "f") == (1, 3)
    assert unsound_tests(tests, PROMPT, None) == (0, 0)  # no function name, no examples


def test_judge_mixture_by_hand() -> None:
    # Eight turns agree with every example, two contradict all four: v = 0, e = 2 / 10.
    turns = [JudgeTurn(4, 0)] * 8 + [JudgeTurn(4, 4)] * 2 + [JudgeTurn(0, 0, 3, 2)]
    e, v, post = fit_judge(turns)
    assert e == pytest.approx(0.2) and v == pytest.approx(0.0)
    assert post[:8] == pytest.approx([0.0] * 8) and post[8:10] == pytest.approx([1.0, 1.0])
    assert post[10] == pytest.approx(0.2)  # no example-checked verdict: the prior
    # Noisy clean turns: six with one disagreement, two with none; the two faulty turns'
    # posterior is e / (e + (1 - e) v^4) ~ 1, so v ~ 6 / 32.
    turns = [JudgeTurn(4, 1)] * 6 + [JudgeTurn(4, 0)] * 2 + [JudgeTurn(4, 4)] * 2
    e, v, _ = fit_judge(turns)
    assert e == pytest.approx(0.2, abs=0.002) and v == pytest.approx(6 / 32, abs=0.002)


def test_tester_mixture_by_hand() -> None:
    # Eight turns with none of three tests unsound, two with all three, faulty rate 0.6:
    # u = 0 and t solves t = 0.2 + 0.8 * 0.064 t / (0.064 t + 1 - t), i.e.
    # 0.936 t^2 - 1.136 t + 0.2 = 0: t = (1.136 - 0.736) / 1.872.
    turns = [CheckedSuite(3, 0)] * 8 + [CheckedSuite(3, 3)] * 2 + [CheckedSuite(0, 0)]
    t, u, post = fit_tester(turns, 0.6)
    assert t == pytest.approx(0.4 / 1.872, abs=1e-6) and u == pytest.approx(0.0, abs=1e-9)
    assert post[8] == pytest.approx(1.0) and post[10] == pytest.approx(t)


def test_bug_coverage_by_hand() -> None:
    first = [
        FirstSolution("a", 0, 2, 1),
        FirstSolution("a", 1, 2, 1),
        FirstSolution("b", 0, 2, 2),
        FirstSolution("b", 1, 1, 1),  # one example: says nothing of the coverage
        FirstSolution("c", 0, 3, 0),  # passes: says nothing either
    ]
    # 4 failed = 3 * 2c / (1 - (1 - c)^2) = 6 / (2 - c): c = 1/2.
    fitted = fit_bug_coverage(first)
    assert fitted is not None and fitted[0] == pytest.approx(0.5) and fitted[1] == 3
    assert fit_bug_coverage(first[3:]) is None


def test_failures_of_one_example_each_keep_the_coverage_default() -> None:
    """6 problems x 3 seats on 3 examples; the 6 solutions that fail one fail exactly one:
    the truncated likelihood peaks at bug_coverage 0, where wrong code fails no example. The
    fit wrote 0.0, and with it every solution passed with probability 1: a flat likelihood
    that left coder_skill, difficulty_sd and skill_spread at their defaults, written as
    fitted. Now the coverage keeps its default, 0.5, and the coders are fitted with it:
    12 of 18 pass, P = σ(skill) + (1 - σ(skill)) 0.5^3 = 2/3, σ(skill) = 0.61905,
    skill = 0.48551 (the two others at the bottom of their ranges: passes spread evenly)."""
    from byzllm.experiments.codegen import fit as codegen_fit

    first = [
        FirstSolution(f"P/{p}", seat, 3, int((p + seat) % 3 == 0))
        for p in range(6)
        for seat in range(3)
    ]
    ev = codegen_fit.CodeGenEvidence(debates=1, first=first)
    estimates = Estimates("fitted from hand on 1 debates")
    estimates.evidence["coders"] = {}
    codegen_fit._fit_first_round(ev, CodeGenSimParams(), estimates)
    profile = sim_profile("codegen", CodeGenSimParams(), estimates, "hand", [])
    fitted, sources = profile.groups["sim"], profile.sources["sim"]
    assert fitted["bug_coverage"] == CodeGenSimParams().bug_coverage
    assert (
        "each of the 6 round-1 solutions failing one of k >= 2 examples failed exactly one"
        in sources["bug_coverage"]
    )
    assert fitted["coder_skill"] == pytest.approx(math.log(0.61905 / 0.38095), abs=1e-3)
    assert "given bug_coverage 0.5" in sources["coder_skill"]


def _result(passed: int, failed: int, status: str = "ran") -> dict[str, Any]:
    return {"passed": passed, "failed": failed, "status": status}


def _solution(seat: int, code: str, **extra: Any) -> dict[str, Any]:
    roles = ["PythonAssistant", "AlgorithmDeveloper", "ComputerScientist", "Programmer"]
    return {"coder": roles[seat], "role": roles[seat], "code": code, "fallback": False} | extra


GOOD = "def f(x):\n    return x + 1\n"
WRONG = "def f(x):\n    return x + 2\n"


def _debate(condition: str = "none", passed: bool = True) -> dict[str, Any]:
    """One hand-made two-round debate of three coders on PROMPT (two examples)."""
    dist = [[["CORRECT", -0.1], ["WRONG", -2.5]]]
    return {
        "kind": "codegen_problem",
        "problem_id": "P/0",
        "repeat": 0,
        "split": "test",
        "condition": condition,
        "passed": passed,
        "simulated": False,
        "transcript": [
            {
                "round": 1,
                "solutions": [
                    _solution(0, GOOD),
                    _solution(1, WRONG),
                    _solution(2, "", fallback=True),  # no code block
                ],
            },
            {
                "round": 2,
                "solutions": [
                    # Verdict True, tests passed: agreed, rule 4 (rated 4 and 5: one off).
                    _solution(0, GOOD, helpful_feedback=4, helpful_tests=5),
                    # Verdict True, tests failed: disagreed, rule 2 (rated 2 and 2).
                    _solution(1, "def f(:\n", helpful_feedback=2, helpful_tests=2),
                    # No verdict: rule 3 (rated 3 and 1: one off).
                    _solution(2, GOOD, helpful_feedback=3, helpful_tests=1),
                ],
                "feedback": {"verdicts": [True, True, None]},
                "results": [_result(2, 0), _result(1, 1), _result(2, 0)],
                "visible": [_result(2, 0), _result(0, 2), _result(0, 0, "no_tests")],
            },
        ],
        "turns": [
            {
                "obs": {
                    "role": "judge",
                    "action": {"round": 2, "verdicts": [True, True, None]},
                    "distributions": dist,
                },
                "round": 2,
                "attempt": 0,
                "fallback": False,
                "text": "",
            },
            {
                "obs": {"role": "tester", "action": {"round": 2}, "distributions": dist * 2},
                "round": 2,
                "attempt": 0,
                "fallback": False,
                "text": "assert f(1) == 2\nassert f(3) == 5",
            },
        ],
    }


def test_collect_evidence_by_hand() -> None:
    prompts = {"P/0": (PROMPT, "f")}
    # The same debate under two conditions shares its draws: counted once.
    ev = collect_evidence([_debate("none"), _debate("monitor-1")], prompts)
    assert ev.debates == 2
    # Six replies, one without code, one of the five written does not compile.
    assert (ev.replies, ev.no_code, ev.broken) == (6, 1, 1)
    assert (ev.ratings, ev.ratings_off) == (6, 2)
    # Round 1 on the examples: seat 0 passes both, seat 1 fails both, seat 2 wrote nothing.
    assert ev.first == [FirstSolution("P/0", 0, 2, 0), FirstSolution("P/0", 1, 2, 2)]
    # The judge: seat 0 right, seat 1 called CORRECT against two failed examples.
    assert len(ev.judge) == 1
    turn = ev.judge[0]
    assert (turn.seen, turn.disagree, turn.unseen, turn.called_correct) == (2, 1, 0, 0)
    p = math.exp(-0.1)  # the top token's probability
    assert turn.logits == pytest.approx([math.log(p / (1 - p))])
    assert [(t.checked, t.unsound) for t in ev.tester] == [(2, 1)]


def test_fit_codegen_on_hand_made_records() -> None:
    profile = fit_codegen([_debate()], {"P/0": (PROMPT, "f")}, run="hand")
    fitted, sources = profile.groups["sim"], profile.sources["sim"]
    assert profile.domain == "codegen" and not profile.run_simulated
    assert fitted["no_code_rate"] == pytest.approx(1 / 6, abs=1e-4)
    assert fitted["syntax_error_rate"] == pytest.approx(1 / 5, abs=1e-4)
    assert fitted["rating_noise"] == pytest.approx(2 / 6, abs=1e-4)
    assert fitted["bug_coverage"] == 1.0  # the one failing solution fails both examples
    assert sources["no_code_rate"] == (
        "fitted from hand on 1 debates: share of replies without code, n = 6"
    )
    for name in ("fix_rate", "follow_pick_rate", "zero_shot_seat"):
        assert "the default, not fitted from hand: " in sources[name]
        assert fitted[name] == getattr(CodeGenSimParams(), name)
    assert fitted["top_k"] == 2  # the records' two alternatives per position
    assert "no verdict on a solution without an example" in sources["unseen_correct_rate"]
    CodeGenSimParams.model_validate(fitted)
    with pytest.raises(InputError, match="no CodeGen debates"):
        fit_codegen([], {}, run="hand")


def _with_alternatives(k: int) -> dict[str, Any]:
    """:func:`_debate` with ``k`` alternatives at every decision position (0: none)."""
    record = _debate()
    dist = [[f"t{i}", -0.1 - i] for i in range(k)]
    for turn in record["turns"]:
        n = len(turn["obs"]["distributions"])
        turn["obs"]["distributions"] = [dist] * n if k else []
    return record


def test_the_fit_writes_the_runs_own_top_k() -> None:
    """A run whose judge and tester report ten alternatives per position (the LLM roles'
    k, the rogue-agents paper's §2 footnote 2) was fitted with the simulated default of 5,
    so its twin's monitor features were computed over fewer alternatives than the run's."""
    prompts = {"P/0": (PROMPT, "f")}
    profile = fit_codegen([_with_alternatives(10)], prompts, run="real")
    assert profile.groups["sim"]["top_k"] == 10
    assert profile.sources["sim"]["top_k"] == (
        "fitted from real on 1 debates: the run's top-k, the most alternatives the judge's "
        "and tester's positions report (10), n = 3"
    )
    # One alternative per position: the simulator takes at least two, and says so.
    profile = fit_codegen([_with_alternatives(1)], prompts, run="real")
    assert profile.groups["sim"]["top_k"] == 2
    assert profile.sources["sim"]["top_k"].endswith(
        "report (1); the nearest value the simulator takes is 2, n = 3"
    )
    # No distributions: the default stays, and its source says why.
    profile = fit_codegen([_with_alternatives(0)], prompts, run="real")
    assert profile.groups["sim"]["top_k"] == CodeGenSimParams().top_k
    assert profile.sources["sim"]["top_k"].endswith(
        "not fitted from real: no decision position of the run reports alternatives (the "
        "judge's and tester's positions)"
    )


def test_zero_shot_debates_alone_fit_the_skill() -> None:
    # Zero-shot only: Pass@1 1/2 at seat 0 (offset +0.25 at spread 0.5); with difficulty
    # symmetric around 0, expected Pass@1 1/2 needs skill + 0.25 = 0.
    records = [
        {
            "problem_id": f"P/{i}",
            "repeat": 0,
            "condition": "zero-shot",
            "passed": i % 2 == 0,
            "transcript": [{"round": 1, "solutions": [_solution(0, GOOD)]}],
        }
        for i in range(10)
    ]
    profile = fit_codegen(records, {}, run="zs")
    assert profile.groups["sim"]["coder_skill"] == pytest.approx(-0.25, abs=1e-3)
    assert "the run holds no debate" in profile.sources["sim"]["difficulty_sd"]


@pytest.mark.parametrize("passed", [True, False])
def test_zero_shot_debates_of_one_outcome_fit_no_skill(passed: bool) -> None:
    """Ten zero-shot debates all passing (or all failing): no skill of [-10, 10] gives a
    Pass@1 of 1 (or 0); the fit wrote 10 (or -10), the end of its range."""
    records = [
        {
            "problem_id": f"P/{i}",
            "repeat": 0,
            "condition": "zero-shot",
            "passed": passed,
            "transcript": [{"round": 1, "solutions": [_solution(0, GOOD)]}],
        }
        for i in range(10)
    ]
    profile = fit_codegen(records, {}, run="zs")
    assert profile.groups["sim"]["coder_skill"] == CodeGenSimParams().coder_skill
    assert (
        f"the default, not fitted from zs: the 10 zero-shot debates' Pass@1 {float(passed):.4f} "
        "lies beyond what any skill of [-10, 10] gives"
    ) in profile.sources["sim"]["coder_skill"]


def _coders(first: list[FirstSolution], coverage: float) -> FittedProfile:
    """The profile of a run whose round-1 solutions did ``first`` (the fit's other parts see
    no turn), given ``bug_coverage``."""
    from byzllm.experiments.codegen import fit as codegen_fit

    ev = codegen_fit.CodeGenEvidence(debates=1, first=first)
    estimates = Estimates("fitted from hand on 1 debates")
    estimates.evidence["coders"] = {}
    codegen_fit._fit_first_round(ev, CodeGenSimParams(bug_coverage=coverage), estimates)
    estimates.values.pop("bug_coverage", None)
    return sim_profile("codegen", CodeGenSimParams(bug_coverage=coverage), estimates, "hand", [])


CODERS = ("coder_skill", "difficulty_sd", "skill_spread")


@pytest.mark.parametrize("failed", [0, 2])
def test_one_outcome_fits_no_coder_parameter(failed: int) -> None:
    """20 problems x 3 seats, every solution passing both examples (or failing them): the
    likelihood rises with the skill without end and is flat in the other two. The fit wrote
    coder_skill 10 (its bound), difficulty_sd 0.01 (its bound) and skill_spread 2.45 (where
    the flat search stopped); failing, -10, 0.01 and 0."""
    first = [FirstSolution(f"P/{p}", seat, 2, failed) for p in range(20) for seat in range(3)]
    profile = _coders(first, 1.0)
    fitted, sources = profile.groups["sim"], profile.sources["sim"]
    way = "rises" if failed == 0 else "falls"
    for name in CODERS:
        assert fitted[name] == getattr(CodeGenSimParams(), name)
        assert "the default, not fitted from hand: all 60 round-1 solutions" in sources[name]
        assert f"the likelihood keeps rising as coder_skill {way} without end" in sources[name]
    assert profile.evidence["coders"]["first_round_pass_examples"] == (60 if failed == 0 else 0)


@pytest.mark.parametrize("skill", [12.0, -12.0])
def test_a_simulated_run_of_one_outcome_fits_no_coder_parameter(
    tmp_path: Path, skill: float
) -> None:
    """Seeded: 20 problems with examples, 3 coders. At skill 12 every round-1 solution is
    right and passes; at -12 every one is wrong and 5 of 60 pass their examples by chance
    (wrong code passes k examples at (1 - 0.6)^k). The fit wrote 10, 0.01, 2.35 and -10,
    0.01, 0; the skill at -10 is where the likelihood still rose (no pass beyond chance)."""
    cfg = CodeGenConfig.model_validate(
        {
            "problems": str(problems_file(tmp_path / "problems.jsonl", 27)),
            "test_fraction": 0.9,
            "execution": "simulated",
            "conditions": ["none"],
            "coders": 3,
            "rounds": 2,
            "sim": {"coder_skill": skill, "difficulty_sd": 1.0, "bug_coverage": 0.6},
        }
    )
    rows = asyncio.run(run_in_memory(run_units(cfg)))
    records = [r for r in rows if r["kind"] == "codegen_problem"]
    from byzllm.tasks import load_humaneval

    prompts = {p.id: (p.prompt, p.entry_point) for p in load_humaneval(cfg.problems or "")}
    profile = fit_codegen(records, prompts, run="sim")
    fitted, sources = profile.groups["sim"], profile.sources["sim"]
    coders = profile.evidence["coders"]
    assert coders["first_round_solutions"] == 60 and coders["first_round_shared_problems"] == 20
    assert coders["first_round_pass_examples"] == (60 if skill > 0 else 5)
    why = "all 60 round-1 solutions pass" if skill > 0 else "reached an end of its range (-10"
    for name in CODERS:
        assert fitted[name] == getattr(CodeGenSimParams(), name)
        assert why in sources[name], sources[name]


def test_coder_parameters_at_an_end_of_their_range_keep_their_defaults() -> None:
    """Hand-made: a problem's three solutions all pass (5 problems) or all fail (5): the
    likelihood rises with difficulty_sd without end; held at 1.5, the skill is 0 (by
    symmetry) and the seats pass alike (spread 0, the bottom of its range, said). Seat 0
    always passing, seat 2 never and seat 1 half the time: skill_spread runs to its top.
    Two of 20 passing one example where wrong code passes it half the time: the skill
    runs to -10. The fit wrote difficulty_sd 10, skill_spread 5 and coder_skill -10."""
    concordant = [
        FirstSolution(f"P/{p}", s, 2, 0 if p < 5 else 2) for p in range(10) for s in range(3)
    ]
    profile = _coders(concordant, 1.0)
    fitted, sources = profile.groups["sim"], profile.sources["sim"]
    assert fitted["difficulty_sd"] == 1.5
    assert "reached the top of its range (10 of at most 10)" in sources["difficulty_sd"]
    assert fitted["coder_skill"] == pytest.approx(0.0, abs=1e-3)
    assert fitted["skill_spread"] == 0.0
    assert (
        "(at the bottom of its range, 0: the seats pass about alike), n = 30"
        in (sources["skill_spread"])
    )

    apart = [
        FirstSolution(f"P/{p}", s, 2, 0 if s == 0 or (s == 1 and p % 2) else 2)
        for p in range(10)
        for s in range(3)
    ]
    profile = _coders(apart, 1.0)
    fitted, sources = profile.groups["sim"], profile.sources["sim"]
    assert fitted["skill_spread"] == 0.5
    assert "reached the top of its range (5 of at most 5)" in sources["skill_spread"]
    # Held at 0.5 the seats sit at 0.25, 0.085 and -0.085: half pass at about minus their mean.
    assert fitted["coder_skill"] == pytest.approx(-0.0833, abs=0.01)

    below = [FirstSolution(f"P/{p}", p % 3, 1, 0 if p < 2 else 1) for p in range(20)]
    profile = _coders(below, 0.5)
    for name in ("coder_skill", "skill_spread"):
        assert profile.groups["sim"][name] == getattr(CodeGenSimParams(), name)
        assert "reached an end of its range (-10 of [-10, 10])" in profile.sources["sim"][name]


def test_coder_parameters_inside_their_range_are_fitted() -> None:
    """Hand-made: each of 10 problems has one failing solution of three (seat 0 failing
    four times, the others three): 20 of 30 pass, the seats alike as far as the fit can tell
    (the most skilled seat fails most: spread 0) and a problem's solutions agree less than
    chance (difficulty_sd at the bottom of its range, said), so the skill is logit(2/3) =
    log 2. The difficulty's spread is seen in the 10 problems run more than once."""
    first = [
        FirstSolution(f"P/{p}", s, 2, 0 if (p + s) % 3 else 2) for p in range(10) for s in range(3)
    ]
    profile = _coders(first, 1.0)
    fitted, sources = profile.groups["sim"], profile.sources["sim"]
    assert fitted["coder_skill"] == pytest.approx(math.log(2), abs=1e-3)
    assert fitted["difficulty_sd"] == 0.01 and fitted["skill_spread"] == 0.0
    assert sources["difficulty_sd"].endswith(
        "(at the bottom of its range, 0.01: a problem's solutions agree no more often than "
        "chance), n = 10"
    )
    assert (
        sources["coder_skill"].startswith("fitted from hand")
        and "bottom" not in (sources["coder_skill"])
    )


# -- recovery on a simulated run -------------------------------------------------------------

TRUTH: dict[str, float] = {
    "coder_skill": 1.0,
    "difficulty_sd": 1.0,
    "skill_spread": 1.0,
    "bug_coverage": 0.6,
    "judge_error_rate": 0.2,
    "verdict_noise": 0.15,
    "unseen_correct_rate": 0.7,
    "tester_error_rate": 0.2,
    "unsound_test_rate": 0.1,
    "verdict_confidence": 0.85,
    "test_confidence": 0.8,
    "confidence_jitter": 0.3,
    "fault_signal": 0.5,
    "no_code_rate": 0.05,
    "syntax_error_rate": 0.1,
    "rating_noise": 0.3,
    "top_k": 3,
}
TOLERANCE = {
    "no_code_rate": 0.04,
    "syntax_error_rate": 0.04,
    "rating_noise": 0.04,
    "judge_error_rate": 0.05,
    "verdict_noise": 0.05,
    "tester_error_rate": 0.1,
    "unsound_test_rate": 0.05,
    "verdict_confidence": 0.03,
    "test_confidence": 0.03,
    "confidence_jitter": 0.06,
    "fault_signal": 0.15,
    "bug_coverage": 0.1,
    "unseen_correct_rate": 0.25,
    "coder_skill": 0.5,
    "difficulty_sd": 0.7,
    "top_k": 0,  # the most alternatives a position reports: exact
}


def problems_file(path: Path, n: int) -> Path:
    """``n`` small HumanEval-style problems with 0 to 5 examples on distinct inputs (a wrong
    solution's failures are hashed on its inputs)."""
    rows = []
    for k in range(n):
        examples = "".join(f"    >>> f_{k}({7 * k + j})\n    {8 * k + j}\n" for j in range(k % 5))
        if k % 3 == 0:
            examples += f"    f_{k}({1000 + k}) == {1000 + 2 * k}\n"
        rows.append(
            {
                "task_id": f"T/{k}",
                "prompt": f'def f_{k}(x: int) -> int:\n    """Add {k}.\n{examples}    """\n',
                "canonical_solution": f"    return x + {k}\n",
                "test": f"def check(candidate):\n    assert candidate(1) == {1 + k}\n",
                "entry_point": f"f_{k}",
            }
        )
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def simulated(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[dict[str, Any]], Any]:
    folder = tmp_path_factory.mktemp("codegen-fit")
    cfg = CodeGenConfig.model_validate(
        {
            "problems": str(problems_file(folder / "problems.jsonl", 155)),
            "test_fraction": 0.9,
            "execution": "simulated",
            "conditions": ["none"],
            "sim": TRUTH,
        }
    )
    rows = asyncio.run(run_in_memory(run_units(cfg)))
    records = [r for r in rows if r["kind"] == "codegen_problem"]
    from byzllm.tasks import load_humaneval

    prompts = {p.id: (p.prompt, p.entry_point) for p in load_humaneval(cfg.problems or "")}
    return records, prompts


def test_fit_recovers_the_generating_parameters(
    simulated: tuple[list[dict[str, Any]], Any],
) -> None:
    records, prompts = simulated
    profile = fit_codegen(records, prompts, run="sim")
    fitted, sources = profile.groups["sim"], profile.sources["sim"]
    assert profile.run_simulated and len(records) == 140
    for name, tolerance in TOLERANCE.items():
        assert fitted[name] == pytest.approx(TRUTH[name], abs=tolerance), (name, fitted[name])
        assert sources[name].startswith("fitted from sim on 140 debates: "), sources[name]
    assert sources["skill_spread"].startswith("fitted from sim")
    assert 0.0 <= fitted["skill_spread"] <= 5.0
    CodeGenSimParams.model_validate(fitted)


def test_the_fit_reads_nothing_only_the_simulator_knows(
    simulated: tuple[list[dict[str, Any]], Any],
) -> None:
    records, prompts = simulated
    honest = fit_codegen(records, prompts, run="sim")

    def blind(record: dict[str, Any]) -> dict[str, Any]:
        # What an LLM run would hold: no coder's or tester's own account, no noise labels,
        # no simulation parameters.
        transcript = []
        for rnd in record["transcript"]:
            rnd = dict(rnd)
            rnd["solutions"] = [{**s, "sim": None} for s in rnd["solutions"]]
            if rnd.get("feedback"):
                rnd["feedback"] = {**rnd["feedback"], "noise": []}
            if rnd.get("tests"):
                rnd["tests"] = {**rnd["tests"], "noise": [], "sim": None}
            transcript.append(rnd)
        turns = [{**t, "noise": []} for t in record["turns"]]
        return {
            **record,
            "transcript": transcript,
            "turns": turns,
            "sim_params": None,
            "simulated": False,
            "final_code": "",
        }

    other = fit_codegen([blind(r) for r in records], prompts, run="sim")
    assert other.groups == honest.groups and other.evidence == honest.evidence


def test_a_config_takes_a_fitted_profile_file(tmp_path: Path) -> None:
    profile = fit_codegen([_debate()], {"P/0": (PROMPT, "f")}, run="hand")
    profile.save(tmp_path / "fitted.yaml")
    config = tmp_path / "run.yaml"
    config.write_text(yaml.safe_dump({"sim": "fitted.yaml"}), "utf-8")
    cfg = load_config(config, CodeGenConfig)
    assert cfg.sim == CodeGenSimParams.model_validate(profile.groups["sim"])
    other = FittedProfile(
        domain="govsim", run="x", run_simulated=True, groups={"sim": {}}, sources={}
    )
    other.save(tmp_path / "wrong.yaml")
    config.write_text(yaml.safe_dump({"sim": "wrong.yaml"}), "utf-8")
    with pytest.raises(ConfigError, match="govsim run, not a codegen one"):
        load_config(config, CodeGenConfig)


def test_compare_gives_only_pass_at_1_the_wilson_interval(monkeypatch: pytest.MonkeyPatch) -> None:
    """Interventions per debate is a count: ten debates without one got Wilson's [0, 0.28],
    as if it were a rate; Pass@1 keeps Wilson's bounds."""
    from byzllm.experiments.codegen import fit as codegen_fit

    debates = [
        {"problem_id": f"P/{i}", "split": "test", "condition": "none", "passed": True,
         "resets": 0, "resamples": 0}
        for i in range(10)
    ]  # fmt: skip
    monkeypatch.setattr(codegen_fit, "_read", lambda run_dir: (debates, {}))
    monkeypatch.setattr(codegen_fit, "simulate_twin", lambda run_dir, params, repeats: debates)
    own = FittedProfile(
        domain="codegen", run="x", run_simulated=True, groups={"sim": {}}, sources={}
    )
    ((_, rows),) = codegen_fit.compare_codegen_run("unused", own, resamples=200)
    found = {r.metric: r for r in rows}
    assert found["Interventions"].real_high == found["Interventions"].simulated_high == 0.0
    assert found["Pass@1"].real_low == pytest.approx(10 / 13.841459, abs=1e-6)
